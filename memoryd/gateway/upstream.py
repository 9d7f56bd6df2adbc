"""The upstream side of a chat call: which headers leave, how many calls a key may hold
open, how transport failures are named, and how a stream is relayed.

Fair sharing: every client key holds at most ``KeySlots.limit`` upstream calls at
once (a stream holds its slot until its last byte), and a quarter of the shared
connection pool is kept for keys that hold none: keys already holding a call share
the rest. So busy keys, however many, cannot take the upstream from the others (eight
keys at 32 calls each once took all 256 connections, and every other key's chat
waited 5 s for a 503); a key over its limit or its share gets an OpenAI-shaped 429
with ``retry-after`` at once, before any retrieval work. A pool exhausted anyway (more
keys than the reserve arriving at once) is a 503 ``upstream_pool_exhausted``
after a short wait, never a provider timeout.

Broken streams: a stream the upstream cuts off (reset, truncated chunk, or EOF before
its final event) must not look complete to the client. The relay sends an SSE error
event in the client's own format (the official clients raise on it) and then ends the
connection without the chunked terminator, so nothing downstream can mistake the
half-answer for a whole one; nothing is extracted from it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from memoryd.gateway.client import UpstreamError, UpstreamResponse
from memoryd.gateway.wire.base import Assembler

log = logging.getLogger("memoryd.gateway")

#: What uvicorn logs (as an error) when a response ends without its terminator, which
#: the relay does on purpose for a broken stream (it logs its own warning first).
UNTERMINATED = "ASGI callable returned without completing response."


class AbortedRelayFilter(logging.Filter):
    """Drops uvicorn's error line for a deliberately unterminated relay."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != UNTERMINATED


def quiet_aborted_relays() -> None:
    """Install ``AbortedRelayFilter`` on ``uvicorn.error`` once (idempotent)."""
    server_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, AbortedRelayFilter) for f in server_log.filters):
        server_log.addFilter(AbortedRelayFilter())


#: Request headers never forwarded upstream: hop-by-hop, cookies, and every header
#: that can carry the client's memoryd key (the provider's credential replaces it).
DROP_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "upgrade",
        "accept-encoding",
        "expect",  # aiohttp would wait for a "100 Continue" a provider may never send
        "cookie",
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
    }
)
DROP_PREFIXES = ("x-memoryd-", "x-omniroute-")
#: Response headers not relayed: framing (the server sets its own) and hop-by-hop ones.
#: ``content-encoding`` is relayed, since the body is (memoryd asks for ``identity``,
#: but a provider that compresses anyway still gets a readable answer to the client).
DROP_RESPONSE_HEADERS = frozenset(
    {
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "trailer",
        "te",
        "upgrade",
    }
)

#: Seconds a request waits for a free pooled connection before the 503.
POOL_WAIT_S = 5.0
#: Seconds a client is asked to wait after a 429 for holding too many calls open.
RETRY_AFTER_S = 1


#: The Messages API version sent when the client named none.
ANTHROPIC_VERSION = "2023-06-01"


def forwarded_headers(
    headers: Mapping[str, str],
    client_secret: str | None,
    provider_key: str | None,
    kind: str = "openai",
) -> dict[str, str]:
    """The client's headers minus everything in ``DROP_HEADERS``, ours, and any header
    whose value contains the client's secret under whatever name; the provider's key
    is the only credential that leaves, the way its ``kind`` expects it (a Bearer token
    for OpenAI-compatible providers, ``x-api-key`` for Anthropic)."""
    out = {
        name: value
        for name, value in headers.items()
        if name.lower() not in DROP_HEADERS
        and not name.lower().startswith(DROP_PREFIXES)
        and not (client_secret and client_secret in value)
    }
    if kind == "anthropic":
        if provider_key:
            out["x-api-key"] = provider_key
        if not any(name.lower() == "anthropic-version" for name in out):
            out["anthropic-version"] = ANTHROPIC_VERSION
    elif provider_key:
        out["authorization"] = f"Bearer {provider_key}"
    out["content-type"] = "application/json"
    return out


class KeySlots:
    """Concurrent upstream calls per client key (event-loop confined: no lock): at most
    ``limit`` each, and with a ``pool``, keys holding a call share all of it but the
    ``reserve`` (a quarter, at least one), which waits for keys holding none."""

    def __init__(self, limit: int, pool: int | None = None) -> None:
        self.limit = max(1, int(limit))
        self.pool = max(1, int(pool)) if pool else None
        self.reserve = max(1, -(-self.pool // 4)) if self.pool else 0
        self._held: dict[str, int] = {}
        self._total = 0

    def refusal(self, key_id: str) -> str | None:
        """Why ``key_id`` may not take a slot now (``limit`` or ``share``), or None."""
        held = self._held.get(key_id, 0)
        if held >= self.limit:
            return "limit"
        if self.pool is not None and held and self._total >= self.pool - self.reserve:
            return "share"
        return None

    def try_acquire(self, key_id: str) -> bool:
        if self.refusal(key_id) is not None:
            return False
        self._held[key_id] = self._held.get(key_id, 0) + 1
        self._total += 1
        return True

    def release(self, key_id: str) -> None:
        held = self._held.get(key_id, 0) - 1
        if held >= 0:
            self._total -= 1
        if held > 0:
            self._held[key_id] = held
        else:
            self._held.pop(key_id, None)

    def held(self, key_id: str) -> int:
        return self._held.get(key_id, 0)


class Slot:
    """One acquired slot; ``release`` is idempotent, so every exit path may call it."""

    def __init__(self, slots: KeySlots, key_id: str) -> None:
        self._slots, self._key_id, self._held = slots, key_id, True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._slots.release(self._key_id)


#: An event longer than this is relayed in pieces rather than held back whole.
MAX_HELD_BYTES = 1024 * 1024


def whole_events(data: bytes) -> tuple[bytes, bytes]:
    """``(relay now, hold back)``: ``data`` cut after its last SSE event boundary (a
    blank line). Upstream chunks are nearly always whole events, so this costs no
    latency; it only keeps a half event from reaching the client before a break."""
    cut = max(data.rfind(b"\n\n"), data.rfind(b"\n\r\n"))
    if cut < 0:
        return (data, b"") if len(data) > MAX_HELD_BYTES else (b"", data)
    end = cut + (2 if data[cut : cut + 2] == b"\n\n" else 3)
    return data[:end], data[end:]


async def _disconnected(receive: Receive) -> None:
    """Returns when the client has gone away (the request body is already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class RelayResponse(Response):
    """An SSE relay as a raw ASGI response. Unlike ``StreamingResponse`` it can end a
    broken stream *without* the clean terminator, and it releases the key's slot on
    every exit (client gone, upstream broken, or done)."""

    def __init__(
        self,
        response: UpstreamResponse,
        headers: Mapping[str, str],
        *,
        assembler: Assembler,
        error_event: Callable[[str, Assembler], bytes],
        on_complete: Callable[[str], Awaitable[None]],
        on_broken: Callable[[str], None],
        release: Callable[[], None],
    ) -> None:
        # Response.__init__ is not called: there is no body to render.
        self.response = response
        self.status_code = response.status_code
        self.raw_headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()
        ]
        self.on_complete, self.on_broken, self.release = on_complete, on_broken, release
        self.assembler, self.error_event = assembler, error_event
        self.background = None
        # An answer in events: anything else (an error status, or a provider that sent
        # one JSON answer to a stream request) is relayed unchanged, never cut short
        # with an error event of ours.
        self.framed = self.status_code < 400 and "event-stream" in response.headers.get(
            "content-type", ""
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The relay races the client's disconnect: uvicorn's ``send`` does not raise
        # once the client is gone, so without the watcher a stopped chat would keep its
        # upstream call and its key's slot until the provider finished generating.
        relay = asyncio.ensure_future(self._relay(send))
        watcher = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({relay, watcher}, return_when=asyncio.FIRST_COMPLETED)
            for task in (relay, watcher):
                task.cancel()
            await asyncio.gather(relay, watcher, return_exceptions=True)
            if relay.done() and not relay.cancelled() and relay.exception() is not None:
                raise relay.exception()  # type: ignore[misc]
        finally:
            for task in (relay, watcher):  # when this call itself was cancelled
                task.cancel()
            self.response.close()
            self.release()

    async def _relay(self, send: Send) -> None:
        framed = self.framed
        pending = b""  # the tail after the last whole event, held back until it is whole
        try:
            start = {"type": "http.response.start", "status": self.status_code}
            await send({**start, "headers": self.raw_headers})
            broken = None
            async for chunk, problem in self._chunks():
                broken = problem
                out, pending = whole_events(pending + chunk) if framed else (chunk, b"")
                if out:
                    await send({"type": "http.response.body", "body": out, "more_body": True})
            if broken is not None:
                # The client has only whole events, so the error event parses as one.
                self.on_broken(broken)
                event = self.error_event(broken, self.assembler)
                await send({"type": "http.response.body", "body": event, "more_body": True})
                return  # no final message: the server closes the connection unterminated
            await send({"type": "http.response.body", "body": pending, "more_body": False})
        except OSError:  # the client went away mid-write
            pass

    async def _chunks(self) -> AsyncIterator[tuple[bytes, str | None]]:
        """The upstream's bytes as they come; the last item names a break, if any.
        Extraction is queued when the stream is complete, before its last chunk goes
        out, so a client's next turn finds the exchange already on its way."""
        assembler = self.assembler
        ok = self.framed
        try:
            async for chunk in self.response.aiter_raw():
                assembler.feed(chunk)
                if ok and assembler.done and not assembler.queued and not assembler.failed:
                    assembler.queued = True
                    await self.on_complete(assembler.text)
                yield chunk, None
        except UpstreamError as exc:
            if ok and assembler.complete and not assembler.failed:
                # the final event had arrived: a cut after it loses nothing, and an
                # error event after a whole answer would make the client retry it
                log.info("upstream closed the stream uncleanly after its final event")
                if not assembler.queued:
                    assembler.queued = True
                    await self.on_complete(assembler.text)
                return
            log.warning("upstream stream broke: %s", exc.cause)
            yield b"", f"the upstream stream broke before it was complete ({exc.cause})"
            return
        if not ok:
            return
        if not assembler.complete:
            log.warning("upstream stream ended before its final event")
            yield b"", "the upstream stream ended before its final event"
            return
        if not assembler.queued and not assembler.failed:  # e.g. no [DONE], a finish_reason
            assembler.queued = True
            await self.on_complete(assembler.text)


__all__ = [
    "DROP_HEADERS",
    "DROP_RESPONSE_HEADERS",
    "KeySlots",
    "RelayResponse",
    "Slot",
    "forwarded_headers",
    "quiet_aborted_relays",
]
