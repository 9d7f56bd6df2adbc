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
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from memoryd.config.upstreams import Provider
from memoryd.core.masking import redacted_url
from memoryd.engine import MemoryEngine
from memoryd.engine.locality import in_process
from memoryd.engine.recent import RecentRequests
from memoryd.gateway.client import UpstreamClient, UpstreamError, UpstreamResponse
from memoryd.gateway.inline import InlineGate
from memoryd.gateway.memory import Prepared, extract, inject, plan, route
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
from memoryd.http.deps import is_admin_token

log = logging.getLogger("memoryd.gateway")
router = APIRouter(prefix="/v1", tags=["gateway"])


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
            401, wrong_credential(request, token), "invalid_request_error", "invalid_api_key"
        )
    return key


#: What ``/v1`` takes, said in every refusal of a credential.
_TAKES = "/v1 takes a memoryd client key (mk_..., made with `memoryd keys create NAME`)"


def wrong_credential(request: Request, token: str) -> str:
    """Why ``token`` is refused, and what to send instead: the credentials people send
    by mistake are the admin token and their provider's key."""
    if is_admin_token(request, token, "admin token at /v1"):
        return (
            "invalid or revoked API key: that is memoryd's admin token, for /api and the "
            f"dashboard; {_TAKES}"
        )
    if token.startswith(("sk-", "sk_", "xai-", "gsk_", "AIza")):
        return (
            f"invalid or revoked API key: that looks like a provider's key; {_TAKES}. The "
            "provider's key belongs in MEMORYD_UPSTREAM_API_KEY (or the providers settings)"
        )
    if token.startswith("mk_"):
        return (
            "invalid or revoked API key: no live key of this server has that secret "
            "(revoked, or made on another data dir or database)"
        )
    return f"invalid or revoked API key: {_TAKES}"


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
    except (ValueError, RecursionError):  # depth is checked before (http.limits)
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
    log.warning("upstream %s at %s %s", provider.name, redacted_url(provider.base_url), exc.tail)
    return GatewayError(
        exc.status,
        f"upstream {provider.name} {exc.tail} (the server's log names its URL)",
        "upstream_error",
        exc.code,
    )


def _count(request: Request, event: str) -> None:
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.record_gateway(event)


def _take_slot(request: Request, key_id: str) -> Slot:
    """The key's share of concurrent upstream calls, or the 429 that says it is used up."""
    slots: KeySlots = request.app.state.key_slots
    why = slots.refusal(key_id)
    if why is None and slots.try_acquire(key_id):
        return Slot(slots, key_id)
    _count(request, "concurrency_limited" if why == "limit" else "share_limited")
    message = (
        f"too many concurrent requests for this API key (limit {slots.limit}); "
        if why == "limit"
        else f"this API key's share of the shared upstream pool is in use (the pool keeps "
        f"{slots.reserve} of {slots.pool} connections for keys holding none); "
    )
    raise GatewayError(
        429,
        message + "retry when one of them has finished",
        "requests",
        "rate_limit_exceeded",
        headers={
            "retry-after": str(RETRY_AFTER_S),
            "x-memoryd-limit": "concurrency" if why == "limit" else "fair-share",
        },
    )


def _relayed_headers(response: UpstreamResponse) -> dict[str, str]:
    """The upstream's response headers, hop-by-hop ones dropped. aiohttp decodes header
    bytes as UTF-8 (surrogates for the rest) and ASGI sends latin-1: re-encoded so the
    client gets the provider's exact bytes and no header can fail the response."""
    return {
        k: v.encode("utf-8", "surrogateescape").decode("latin-1")
        for k, v in response.headers.items()
        if k.lower() not in DROP_RESPONSE_HEADERS
    }


def _account(request: Request, key_id: str, prepared: Prepared) -> None:
    """What the request carried: tokens per key (/metrics) and, by request id, which
    memories and why (GET /api/requests/{id})."""
    carried = [*prepared.profile, *prepared.hits]
    if not carried:
        return
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.record_injected(key_id, sum(h.tokens for h in carried))
    recent: RecentRequests | None = getattr(request.app.state, "recent", None)
    if recent is not None:
        rid = getattr(request.state, "request_id", None)
        recent.record(rid, key_id, prepared.user_id, prepared.profile, prepared.hits)


def _timed_inject(*args: Any) -> tuple[Prepared, float, float]:
    """``inject`` with the CPU and wall seconds it took on the thread it ran on."""
    cpu, wall = time.thread_time(), time.perf_counter()
    prepared = inject(*args)
    return prepared, time.thread_time() - cpu, time.perf_counter() - wall


async def converse(request: Request, fmt: WireFormat) -> Response | RelayResponse:
    """One chat-like call in any wire format: the shared pipeline."""
    slot: Slot | None = None  # released on every way out, unless a relay took it over
    try:
        key = authenticate(request, fmt)
        slot = _take_slot(request, key.id)
        body = await parse_body(request, fmt)
        engine = _engine(request)
        prepared, settings = plan(engine, key, body, request.headers, fmt)
        prepared.request_id = getattr(request.state, "request_id", None)  # facts' origin
        if settings is not None:  # no thread hop when there is nothing to retrieve
            gate: InlineGate | None = getattr(request.app.state, "inline_gate", None)
            args = (engine, prepared, body, settings, fmt)
            inline = gate is not None and gate.cheap(key.id) and in_process(engine, settings)
            if inline:
                prepared, cpu, wall = _timed_inject(*args)
            else:
                prepared, cpu, wall = await run_in_threadpool(_timed_inject, *args)
            if gate is not None:
                gate.record(key.id, cpu, wall=wall, inline=inline)
            _account(request, key.id, prepared)
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
                await extract(engine, prepared, text)

            relay = RelayResponse(
                response,
                headers,
                assembler=fmt.assembler(body),
                error_event=fmt.stream_error_event,
                on_complete=complete,
                on_broken=lambda _: _count(request, "stream_broken"),
                release=slot.release,
            )
            slot = None  # the relay holds it until the stream ends
            return relay
        content = response.content or b""
        headers = _relayed_headers(response) | prepared.headers()
        if response.status_code < 400 and prepared.extract:  # else: the reply is not read
            try:
                reply = fmt.reply_text(json.loads(content))
            except (ValueError, RecursionError):
                reply = ""
            # Queued now (a cheap put onto the background worker, off the request path):
            # the upstream response is complete, and a client that sends its next turn
            # right away must find this exchange already on its way into memory.
            await extract(engine, prepared, reply)
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
    slot: Slot | None = None
    try:
        key = authenticate(request, fmt)
        slot = _take_slot(request, key.id)  # an upstream call: the key's share, as any
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
    finally:
        if slot is not None:
            slot.release()
    return Response(
        content,
        status_code=response.status_code,
        media_type=response.headers.get("content-type", "application/json"),
    )


class _DirectRoute(Route):
    """A Starlette route that records itself in the scope, as FastAPI's routes do (the
    metrics and the access line label requests by its path template)."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = self
        await super().handle(scope, receive, send)


def direct_routes() -> list[Route]:
    """The gateway's POST routes as plain Starlette routes, for the app to try first:
    the same endpoints (they take the bare request and return a response), without
    FastAPI's per-request dependency solving and telemetry, ~80 us of a proxied
    call's ~1 ms of CPU. ``router`` still declares them for the OpenAPI
    schema; these shadow it."""
    return [
        _DirectRoute(route.path, route.endpoint, methods=["POST"], include_in_schema=False)
        for route in router.routes
        if isinstance(route, APIRoute) and route.methods == {"POST"}
    ]
