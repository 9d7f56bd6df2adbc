"""The gateway's routes: chat completions, the Responses API and Anthropic's Messages
API share one pipeline; embeddings, token counts and model lists pass through.

Per chat-like request: authenticate the client key -> plan memory (settings, key
override, headers) -> retrieve for the client's latest words -> inject -> forward with
the shared upstream client (``gateway.client``) -> return the upstream response unchanged except
``x-memoryd-*`` headers -> queue extraction once the answer is complete (for streams,
at their final event, from the assembled text). What depends on the client's API is
asked of its ``WireFormat`` (``gateway.wire``). Memory failures never fail the request.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from memoryd.core.injection import filter_new
from memoryd.engine import MemoryEngine
from memoryd.engine.providers import Provider
from memoryd.gateway.client import UpstreamClient, UpstreamError, UpstreamResponse
from memoryd.gateway.pipeline import SESSION_HEADERS, header, plan_memory, route_model
from memoryd.gateway.upstream import (
    DROP_RESPONSE_HEADERS,
    RETRY_AFTER_S,
    KeySlots,
    RelayResponse,
    Slot,
    forwarded_headers,
)
from memoryd.gateway.wire import CHAT, MESSAGES, RESPONSES, GatewayError, WireFormat, messages_url
from memoryd.gateway.wire.base import check_model
from memoryd.models import Hit
from memoryd.settings import MemorySettings

log = logging.getLogger("memoryd.gateway")
router = APIRouter(prefix="/v1", tags=["gateway"])


@dataclass
class Prepared:
    """Everything decided before the upstream call."""

    body: dict[str, Any]
    provider: Provider
    owner: str
    session_id: str
    user_text: str  # the user's new turn, to extract from ("" = none)
    extract: bool
    user_id: str = ""  # the key's end user this request names ("" = none)
    hits: list[Hit] = field(default_factory=list)
    memory_error: str | None = None

    def headers(self) -> dict[str, str]:
        out = {
            "x-memoryd-memory-count": str(len(self.hits)),
            "x-memoryd-memory-tokens": str(sum(h.tokens for h in self.hits)),
            "x-memoryd-memory-ids": ",".join(h.memory.id for h in self.hits),
        }
        if self.session_id:
            out["x-memoryd-session-id"] = self.session_id
        if self.memory_error:
            out["x-memoryd-memory-error"] = "retrieval failed; request sent without memory"
        return out


def _engine(request: Request) -> MemoryEngine:
    engine: MemoryEngine = request.app.state.engine
    return engine


def _client(request: Request) -> UpstreamClient:
    client: UpstreamClient = request.app.state.http
    return client


def _error(fmt: WireFormat, error: GatewayError) -> JSONResponse:
    return JSONResponse(fmt.error_body(error), status_code=error.status, headers=error.headers)


def authenticate(request: Request, fmt: WireFormat = CHAT) -> Any:
    token = fmt.client_secret(request.headers)
    if token is None:
        how = (
            "x-api-key: <memoryd key> (or Authorization: Bearer <memoryd key>)"
            if fmt.kind == "anthropic"
            else "Authorization: Bearer <memoryd key>"
        )
        raise GatewayError(
            401,
            f"missing API key: send {how}",
            "invalid_request_error",
            "invalid_api_key",
        )
    key = _engine(request).keys.authenticate(token)
    if key is None:
        raise GatewayError(
            401, "invalid or revoked API key", "invalid_request_error", "invalid_api_key"
        )
    return key


async def parse_body(
    request: Request, fmt: WireFormat = CHAT, *, plain: bool = False
) -> dict[str, Any]:
    """The JSON object body, checked by ``fmt`` (``plain``: only its ``model``, for a
    pass-through whose body memoryd does not read)."""
    raw = await request.body()
    try:
        body = json.loads(raw)
    except UnicodeDecodeError:  # before ValueError, its base class
        raise GatewayError(
            400, "request body is not valid UTF-8", "invalid_request_error", "invalid_json"
        ) from None
    except (ValueError, RecursionError):  # depth is checked before (api.limits)
        raise GatewayError(
            400, "request body is not valid JSON", "invalid_request_error", "invalid_json"
        ) from None
    if not isinstance(body, dict):
        raise GatewayError(400, "request body must be a JSON object", "invalid_request_error")
    if plain:
        check_model(body)
    else:
        fmt.validate(body)
    return body


def route(engine: MemoryEngine, body: dict[str, Any], fmt: WireFormat) -> tuple[Provider, Any]:
    """The provider for this request and the model id it is sent with; a 503 when none
    of the format's kind is configured, a 400 when the named one cannot speak it."""
    provider, model = route_model(body.get("model"), engine.providers(), fmt.kind)
    if provider is None:
        if fmt.kind == "anthropic":
            how = (
                "set MEMORYD_ANTHROPIC_BASE_URL (and MEMORYD_ANTHROPIC_API_KEY) or add a "
                "provider of kind anthropic with `memoryd providers add NAME URL --kind "
                "anthropic` / PUT /api/settings/providers"
            )
        else:
            how = (
                "set MEMORYD_UPSTREAM_BASE_URL (and MEMORYD_UPSTREAM_API_KEY) or add "
                "providers with `memoryd providers add` / PUT /api/settings/providers"
            )
        raise GatewayError(
            503,
            f"no upstream provider of kind {fmt.kind} configured: {how}",
            "server_error",
            "no_upstream",
        )
    if provider.kind != fmt.kind:
        raise GatewayError(
            400,
            f"provider {provider.name!r} is of kind {provider.kind}; "
            f"/v1{fmt.path} needs a provider of kind {fmt.kind}",
            "invalid_request_error",
            "provider_kind_mismatch",
            param="model",
        )
    return provider, model


def plan(
    engine: MemoryEngine, key: Any, body: dict[str, Any], headers: Any, fmt: WireFormat = CHAT
) -> tuple[Prepared, MemorySettings | None]:
    """Routing and the memory plan: the request as it goes out without memory, and the
    settings to retrieve with (``None``: nothing to retrieve). Microseconds of work
    on cached state, so it runs on the event loop."""
    provider, model = route(engine, body, fmt)
    forwarded = dict(body)
    if model is not None:
        forwarded["model"] = model
    settings = engine.settings.get()
    memory = plan_memory(settings, key.memory_enabled, headers)
    session_id = header(headers, *SESSION_HEADERS) or ""
    turn = fmt.new_turn(body)
    prepared = Prepared(
        forwarded,
        provider,
        key.id,
        session_id,
        turn,
        extract=memory.extract and bool(turn),
        user_id=fmt.end_user(headers, body),
    )
    return prepared, settings if memory.inject else None


def inject(
    engine: MemoryEngine,
    prepared: Prepared,
    body: dict[str, Any],
    settings: MemorySettings,
    fmt: WireFormat = CHAT,
) -> Prepared:
    """Retrieval and injection (database and model work: runs in a worker thread).
    A failure sends the request on without memory and says so in a header. Also
    decides, off the event loop, whether the turn is worth an extraction job."""
    if prepared.extract:
        try:
            prepared.extract = engine.worth_extracting(prepared.user_text, settings)
        except Exception:  # when in doubt, queue it: the job decides again
            log.warning("extraction pre-check failed", exc_info=True)
    try:
        query = fmt.query(body) if settings.strategy != "recent" else None
        hits = engine.retrieve(
            prepared.owner,
            query,
            session_id=prepared.session_id or None,
            settings=settings,
            user_id=prepared.user_id,
        )
        hits = filter_new(hits, body, lambda h: h.memory.content)
        placed = fmt.inject(
            prepared.body,
            [h.memory.content for h in hits],
            prepared.provider,
            prepared.body.get("model"),
        )
        prepared.body = placed.body
        prepared.hits = hits if placed.placement != "none" else []
    except Exception as exc:  # memory must never fail the chat request
        log.exception("memory retrieval failed; forwarding without memory")
        engine.extraction_stats.setdefault("retrievalFailures", 0)
        engine.extraction_stats["retrievalFailures"] += 1
        prepared.memory_error = str(exc)
    return prepared


#: How long the answer's last byte may wait for the extraction job's commit.
DURABLE_WAIT_S = 5.0


async def _extract(engine: MemoryEngine, prepared: Prepared, assistant_text: str) -> None:
    """Queue the exchange's extraction and wait (briefly, without blocking the loop)
    until the job is committed, so an acknowledged exchange survives a crash."""
    if not prepared.extract:
        return
    durable = engine.submit_extraction(
        prepared.owner,
        user_text=prepared.user_text,
        assistant_text=assistant_text or None,
        session_id=prepared.session_id,
        user_id=prepared.user_id,
    )
    if durable is not None:
        try:
            # shielded: a client that disconnects meanwhile must not cancel the job
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(durable)), DURABLE_WAIT_S)
        except TimeoutError:  # the writer is stalled: answer anyway, the job is queued
            log.warning("extraction job not committed within %.0f s", DURABLE_WAIT_S)


async def _send(
    request: Request,
    fmt: WireFormat,
    provider: Provider,
    url: str,
    body: dict[str, Any],
    *,
    stream: bool,
) -> UpstreamResponse:
    """Send upstream with only the provider's credential and return the response: its
    head (``stream``) or its whole body (``.content``). If the client goes away first,
    the upstream call is cancelled; a response nobody will take is closed whatever
    the race, so its pool slot always comes back."""
    secret = fmt.client_secret(request.headers)
    headers = forwarded_headers(request.headers, secret, provider.api_key, provider.kind)
    query = request.url.query  # Claude Code's ``?beta=true``, for one
    if secret and secret in unquote(query):
        query = ""  # a client key put in the URL never goes upstream
    client = _client(request)

    async def fetch() -> UpstreamResponse:
        response = await client.send(
            "POST", url, content=json.dumps(body).encode(), headers=headers, query=query
        )
        if not stream:
            await response.read()  # closes it: read inside the watched task
        return response

    task = asyncio.ensure_future(fetch())
    taken = False
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.25)
            if done:
                response = task.result()
                taken = True
                return response
            if await request.is_disconnected():
                raise GatewayError(499, "client closed the request", "client_closed")
    except UpstreamError as exc:
        error = _unreachable(exc, provider)
        if error.code == "upstream_pool_exhausted":
            _count(request, "pool_exhausted")
        raise error from None
    finally:
        if not taken:
            task.cancel()
            task.add_done_callback(_close_orphan)


def _close_orphan(task: asyncio.Future[UpstreamResponse]) -> None:
    """A response that arrived for a request that had already given up."""
    if not task.cancelled() and task.exception() is None:
        task.result().close()


def _unreachable(exc: UpstreamError, provider: Provider) -> GatewayError:
    if exc.code == "upstream_pool_exhausted":
        headers = {"retry-after": "1"}
        return GatewayError(exc.status, exc.tail, "server_error", exc.code, headers=headers)
    return GatewayError(
        exc.status, f"upstream {provider.name} {exc.tail}", "upstream_error", exc.code
    )


def _count(request: Request, event: str) -> None:
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.record_gateway(event)


def _take_slot(request: Request, key_id: str) -> Slot:
    """The key's share of concurrent upstream calls, or the 429 that says it is used up."""
    slots: KeySlots = request.app.state.key_slots
    if not slots.try_acquire(key_id):
        _count(request, "concurrency_limited")
        raise GatewayError(
            429,
            f"too many concurrent requests for this API key (limit {slots.limit}); "
            "retry when one of them has finished",
            "requests",
            "rate_limit_exceeded",
            headers={"retry-after": str(RETRY_AFTER_S), "x-memoryd-limit": "concurrency"},
        )
    return Slot(slots, key_id)


def _relayed_headers(response: UpstreamResponse) -> dict[str, str]:
    """The upstream's response headers, hop-by-hop ones dropped. aiohttp decodes header
    bytes as UTF-8 (surrogates for the rest) and ASGI sends latin-1: re-encoded so the
    client gets the provider's exact bytes and no header can fail the response."""
    return {
        k: v.encode("utf-8", "surrogateescape").decode("latin-1")
        for k, v in response.headers.items()
        if k.lower() not in DROP_RESPONSE_HEADERS
    }


async def converse(request: Request, fmt: WireFormat) -> Response | RelayResponse:
    """One chat-like call in any wire format: the shared pipeline."""
    slot: Slot | None = None  # released on every way out, unless a relay took it over
    try:
        key = authenticate(request, fmt)
        slot = _take_slot(request, key.id)
        body = await parse_body(request, fmt)
        engine = _engine(request)
        prepared, settings = plan(engine, key, body, request.headers, fmt)
        if settings is not None:  # no thread hop when there is nothing to retrieve
            prepared = await run_in_threadpool(inject, engine, prepared, body, settings, fmt)
        url = fmt.upstream_url(prepared.provider)
        streaming = fmt.is_stream(body)
        response = await _send(
            request, fmt, prepared.provider, url, prepared.body, stream=streaming
        )
        if streaming:
            try:
                headers = _relayed_headers(response) | prepared.headers()
            except BaseException:
                response.close()
                raise

            async def complete(text: str) -> None:
                await _extract(engine, prepared, text)

            relay = RelayResponse(
                response,
                headers,
                assembler=fmt.assembler(),
                error_event=fmt.stream_error_event,
                on_complete=complete,
                on_broken=lambda _: _count(request, "stream_broken"),
                release=slot.release,
            )
            slot = None  # the relay holds it until the stream ends
            return relay
        content = response.content or b""
        headers = _relayed_headers(response) | prepared.headers()
        if response.status_code < 400:
            try:
                reply = fmt.reply_text(json.loads(content))
            except (ValueError, RecursionError):
                reply = ""
            # Queued now (a cheap put onto the background worker, off the request path):
            # the upstream response is complete, and a client that sends its next turn
            # right away must find this exchange already on its way into memory.
            await _extract(engine, prepared, reply)
        return Response(content, status_code=response.status_code, headers=headers)
    except GatewayError as exc:
        return _error(fmt, exc)
    finally:
        if slot is not None:
            slot.release()


async def pass_through(
    request: Request, fmt: WireFormat, url_of: Callable[[Provider], str]
) -> Response:
    """A call that needs no memory, forwarded to the routed provider and answered
    unchanged, behind the same key check, per-key limit and metrics as a chat."""
    slot: Slot | None = None
    try:
        key = authenticate(request, fmt)
        slot = _take_slot(request, key.id)
        body = await parse_body(request, fmt, plain=True)
        provider, model = route(_engine(request), body, fmt)
        if model is not None:
            body = {**body, "model": model}
        response = await _send(request, fmt, provider, url_of(provider), body, stream=False)
        return Response(
            response.content or b"",
            status_code=response.status_code,
            headers=_relayed_headers(response),
        )
    except GatewayError as exc:
        return _error(fmt, exc)
    finally:
        if slot is not None:
            slot.release()


@router.post("/chat/completions", response_model=None)
async def chat_completions(request: Request) -> Response | RelayResponse:
    """OpenAI chat completions, with memory."""
    return await converse(request, CHAT)


@router.post("/responses", response_model=None)
async def responses(request: Request) -> Response | RelayResponse:
    """OpenAI's Responses API (the Agents SDK), with memory."""
    return await converse(request, RESPONSES)


@router.post("/messages", response_model=None)
async def messages(request: Request) -> Response | RelayResponse:
    """Anthropic's Messages API (Anthropic SDKs, Claude Code), with memory."""
    return await converse(request, MESSAGES)


@router.post("/messages/count_tokens", response_model=None)
async def count_tokens(request: Request) -> Response:
    """Anthropic's token count, passed through unchanged (no memory is added)."""
    return await pass_through(
        request, MESSAGES, lambda p: messages_url(p.base_url, "/messages/count_tokens")
    )


@router.post("/embeddings", response_model=None)
async def embeddings(request: Request) -> Response:
    """Embeddings, passed through to the routed provider (clients with one base URL)."""
    return await pass_through(request, CHAT, lambda p: f"{p.base_url}/embeddings")


@router.get("/models", response_model=None)
async def models(request: Request) -> Response:
    """The default upstream's model list, passed through: the Anthropic provider's for
    Anthropic clients (they send ``anthropic-version``), the OpenAI one's otherwise."""
    anthropic = "anthropic-version" in request.headers
    fmt = MESSAGES if anthropic else CHAT
    try:
        authenticate(request, fmt)
        provider, _ = route(_engine(request), {}, fmt)
        if anthropic:
            headers = {"anthropic-version": request.headers["anthropic-version"]}
            headers |= {"x-api-key": provider.api_key} if provider.api_key else {}
            url = messages_url(provider.base_url, "/models")
        else:
            headers = {"authorization": f"Bearer {provider.api_key}"} if provider.api_key else {}
            url = f"{provider.base_url}/models"
        try:
            response = await _client(request).send(
                "GET", url, headers=headers, query=request.url.query
            )
            content = await response.read()
        except UpstreamError as exc:
            raise _unreachable(exc, provider) from None
    except GatewayError as exc:
        return _error(fmt, exc)
    return Response(
        content,
        status_code=response.status_code,
        media_type=response.headers.get("content-type", "application/json"),
    )
