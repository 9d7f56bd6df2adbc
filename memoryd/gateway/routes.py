"""``/v1/chat/completions`` and ``/v1/models``: the OpenAI-compatible gateway.

Per request: authenticate the client key -> plan memory (settings, key override,
headers) -> retrieve for the last user message -> inject -> forward with the shared
httpx client -> return the upstream response unchanged except ``x-memoryd-*``
headers -> schedule extraction after the response (for streams, after the last
chunk, from the assembled text). Memory failures never fail the request.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from memoryd.api.deps import bearer_token
from memoryd.core.injection import filter_new, inject_memory
from memoryd.engine import MemoryEngine
from memoryd.engine.providers import Provider
from memoryd.gateway.pipeline import (
    SESSION_HEADERS,
    content_problem,
    end_user,
    header,
    last_user_text,
    plan_memory,
    route_model,
)
from memoryd.gateway.sse import response_text
from memoryd.gateway.upstream import (
    DROP_RESPONSE_HEADERS,
    RETRY_AFTER_S,
    KeySlots,
    RelayResponse,
    Slot,
    failure_code,
    forwarded_headers,
)
from memoryd.models import Hit

log = logging.getLogger("memoryd.gateway")
router = APIRouter(prefix="/v1", tags=["gateway"])


class GatewayError(Exception):
    """An error answered in OpenAI's shape ``{"error": {message, type, param, code}}``;
    ``param`` names the offending request field, when there is one."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str,
        code: str | None = None,
        *,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type, code
        self.param, self.headers = param, headers

    def response(self) -> JSONResponse:
        body = {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }
        return JSONResponse(body, status_code=self.status, headers=self.headers)


@dataclass
class Prepared:
    """Everything decided before the upstream call."""

    body: dict[str, Any]
    provider: Provider
    owner: str
    session_id: str
    user_text: str
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


def _client(request: Request) -> httpx.AsyncClient:
    client: httpx.AsyncClient = request.app.state.http
    return client


def authenticate(request: Request) -> Any:
    token = bearer_token(request)
    if token is None:
        raise GatewayError(
            401,
            "missing API key: send Authorization: Bearer <memoryd key>",
            "invalid_request_error",
            "invalid_api_key",
        )
    key = _engine(request).keys.authenticate(token)
    if key is None:
        raise GatewayError(
            401, "invalid or revoked API key", "invalid_request_error", "invalid_api_key"
        )
    return key


async def parse_body(request: Request) -> dict[str, Any]:
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
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise GatewayError(
            400,
            "'messages' must be a non-empty array",
            "invalid_request_error",
            "invalid_messages",
            param="messages",
        )
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise GatewayError(
                400,
                f"messages[{index}] must be an object with a 'role'",
                "invalid_request_error",
                "invalid_messages",
                param=f"messages[{index}]",
            )
        problem = content_problem(message, index)
        if problem is not None:
            param, text, code = problem
            raise GatewayError(400, text, "invalid_request_error", code, param=param)
    if "model" in body and not isinstance(body["model"], str):
        raise GatewayError(400, "'model' must be a string", "invalid_request_error", param="model")
    return body


def prepare(engine: MemoryEngine, key: Any, body: dict[str, Any], headers: Any) -> Prepared:
    """Routing, memory plan, retrieval and injection (runs in a worker thread)."""
    provider, model = route_model(body.get("model"), engine.providers())
    if provider is None:
        raise GatewayError(
            503,
            "no upstream provider configured: set MEMORYD_UPSTREAM_BASE_URL (and "
            "MEMORYD_UPSTREAM_API_KEY) or add providers with `memoryd providers add` / "
            "PUT /api/settings/providers",
            "server_error",
            "no_upstream",
        )
    forwarded = dict(body)
    if model is not None:
        forwarded["model"] = model
    settings = engine.settings.get()
    plan = plan_memory(settings, key.memory_enabled, headers)
    session_id = header(headers, *SESSION_HEADERS) or ""
    prepared = Prepared(
        forwarded,
        provider,
        key.id,
        session_id,
        last_user_text(body),
        extract=plan.extract,
        user_id=end_user(headers, body),
    )
    if not plan.inject:
        return prepared
    try:
        query = prepared.user_text if settings.strategy != "recent" else None
        hits = engine.retrieve(
            key.id,
            query,
            session_id=session_id or None,
            settings=settings,
            user_id=prepared.user_id,
        )
        hits = filter_new(hits, body, lambda h: h.memory.content)
        injection = inject_memory(
            forwarded,
            [h.memory.content for h in hits],
            provider=provider.name,
            model=model,
            system_role=provider.system_role,
        )
        prepared.body = injection.body
        prepared.hits = hits if injection.placement != "none" else []
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


def _upstream_request(
    client: httpx.AsyncClient, request: Request, prepared: Prepared, path: str
) -> httpx.Request:
    headers = forwarded_headers(
        request.headers, bearer_token(request), prepared.provider.api_key or None
    )
    return client.build_request(
        "POST",
        f"{prepared.provider.base_url}{path}",
        content=json.dumps(prepared.body).encode(),
        headers=headers,
    )


async def _send_watching_disconnect(
    client: httpx.AsyncClient, upstream: httpx.Request, request: Request, *, stream: bool
) -> httpx.Response:
    """Send upstream; if the client goes away first, cancel the upstream call."""
    task = asyncio.ensure_future(client.send(upstream, stream=stream))
    while True:
        done, _ = await asyncio.wait({task}, timeout=0.25)
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()
            raise GatewayError(499, "client closed the request", "client_closed")


def _unreachable(exc: Exception, provider: Provider) -> GatewayError:
    status, code, tail = failure_code(exc)
    if code == "upstream_pool_exhausted":
        return GatewayError(status, tail, "server_error", code, headers={"retry-after": "1"})
    return GatewayError(status, f"upstream {provider.name} {tail}", "upstream_error", code)


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


@router.post("/chat/completions", response_model=None)
async def chat_completions(request: Request) -> Response | RelayResponse:
    slot: Slot | None = None  # released on every way out, unless a relay took it over
    try:
        key = authenticate(request)
        slot = _take_slot(request, key.id)
        body = await parse_body(request)
        engine = _engine(request)
        prepared = await run_in_threadpool(prepare, engine, key, body, dict(request.headers))
        client = _client(request)
        upstream = _upstream_request(client, request, prepared, "/chat/completions")
        streaming = body.get("stream") is True
        try:
            response = await _send_watching_disconnect(client, upstream, request, stream=streaming)
        except httpx.HTTPError as exc:
            error = _unreachable(exc, prepared.provider)
            if error.code == "upstream_pool_exhausted":
                _count(request, "pool_exhausted")
            raise error from None
        headers = {
            k: v for k, v in response.headers.items() if k.lower() not in DROP_RESPONSE_HEADERS
        } | prepared.headers()
        if streaming:

            async def complete(text: str) -> None:
                await _extract(engine, prepared, text)

            relay = RelayResponse(
                response,
                headers,
                on_complete=complete,
                on_broken=lambda _: _count(request, "stream_broken"),
                release=slot.release,
            )
            slot = None  # the relay holds it until the stream ends
            return relay
        content = response.content
        if response.status_code < 400:
            try:
                reply = response_text(json.loads(content))
            except (ValueError, RecursionError):
                reply = ""
            # Queued now (a cheap put onto the background worker, off the request path):
            # the upstream response is complete, and a client that sends its next turn
            # right away must find this exchange already on its way into memory.
            await _extract(engine, prepared, reply)
        return Response(content, status_code=response.status_code, headers=headers)
    except GatewayError as exc:
        return exc.response()
    finally:
        if slot is not None:
            slot.release()


@router.get("/models", response_model=None)
async def models(request: Request) -> Response:
    """The default upstream's model list, passed through."""
    try:
        authenticate(request)
        provider = _engine(request).providers().get("default")
        if provider is None:
            raise GatewayError(
                503,
                "no default upstream configured (MEMORYD_UPSTREAM_BASE_URL)",
                "server_error",
                "no_upstream",
            )
        headers = {"authorization": f"Bearer {provider.api_key}"} if provider.api_key else {}
        try:
            response = await _client(request).get(f"{provider.base_url}/models", headers=headers)
        except httpx.HTTPError as exc:
            raise _unreachable(exc, provider) from None
    except GatewayError as exc:
        return exc.response()
    return Response(
        response.content,
        status_code=response.status_code,
        media_type=response.headers.get("content-type", "application/json"),
    )
