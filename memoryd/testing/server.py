"""What the fakes share: ``serve_asgi``, the recording and pacing of ``FakeServer``,
SSE framing and the deliberate cut of a stream (``break_after``)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

if TYPE_CHECKING:
    from memoryd.http.protocol import ConnectionLimits


@contextmanager
def serve_asgi(app: Any, *, limits: ConnectionLimits | None = None) -> Iterator[str]:
    """Run an ASGI app with uvicorn on a free 127.0.0.1 port in a thread. With
    ``limits``, through ``memoryd serve``'s guarded protocol (deadlines, connection cap)."""
    import socket
    import time

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    from memoryd.http.protocol import protocol_class

    http: Any = "auto" if limits is None else protocol_class(limits)
    config = uvicorn.Config(app, log_config=None, lifespan="on", access_log=False, http=http)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


class StreamCut(Exception):
    """Raised inside a fake's stream to cut it (``break_after``). uvicorn answers an
    exception after the response started by closing the connection without the chunked
    terminator, so the client reads a protocol error, never a clean end."""


def _is_cut(exc: BaseException | None) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_cut(inner) for inner in exc.exceptions)
    return isinstance(exc, StreamCut)


class _QuietCut(logging.Filter):
    """Drops uvicorn's "Exception in ASGI application" record for a deliberate cut (and
    only for that): tests that assert no ERROR line stay meaningful."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and _is_cut(record.exc_info[1]))


def _quiet_cuts() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietCut) for f in logger.filters):
        logger.addFilter(_QuietCut())


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event: ``event: <name>`` (when named) and one ``data:`` line."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {payload}\n\n".encode()


def texts(value: Any) -> list[str]:
    """Every piece of text in a request's content: strings, ``text`` fields of blocks and
    parts, nested ``content`` (tool results, input items)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in texts(item)]
    if isinstance(value, dict):
        found = [value["text"]] if isinstance(value.get("text"), str) else []
        return found + texts(value.get("content"))
    return []


def word_count(*values: Any) -> int:
    return sum(len(text.split()) for value in values for text in texts(value))


class FakeServer:
    """Recording, pacing and failure switches common to the fakes.

    ``requests`` holds one ``{"path", "body", "headers"}`` record per recorded request,
    oldest first (``headers`` lower-cased); ``last`` is the newest body. ``reply`` is the
    assistant text, streamed one word per delta event; ``chunk_delay_s`` spaces the
    deltas; while ``hold`` is a ``threading.Event`` not yet set, every stream stalls
    after each delta (a stream held open). ``status`` != 200 answers ``error_body``
    with that status. ``break_after = n`` cuts every stream after its n-th delta: the
    connection closes without the chunked terminator (``httpx.RemoteProtocolError``
    in the client).
    """

    def __init__(self, error_body: dict[str, Any]) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = "Sure, noted."
        self.chunk_delay_s = 0.0
        self.hold: threading.Event | None = None
        self.status = 200
        self.error_body: dict[str, Any] = error_body
        self.break_after: int | None = None
        _quiet_cuts()

    @property
    def last(self) -> dict[str, Any]:
        body: dict[str, Any] = self.requests[-1]["body"]
        return body

    async def record(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = await request.json()
        self.requests.append(
            {"path": request.url.path, "body": body, "headers": dict(request.headers)}
        )
        return body

    def pieces(self) -> list[str]:
        """``reply`` cut into the streamed deltas: one word each, the space kept."""
        words = self.reply.split(" ")
        return [word + (" " if i < len(words) - 1 else "") for i, word in enumerate(words)]

    def stream(
        self, head: Sequence[bytes], deltas: Sequence[bytes], tail: Sequence[bytes]
    ) -> StreamingResponse:
        """An SSE response: ``head``, then ``deltas`` paced by ``hold`` and
        ``chunk_delay_s`` (and cut per ``break_after``), then ``tail``."""
        cut = self.break_after

        async def body() -> AsyncIterator[bytes]:
            for event in head:
                yield event
            for sent, event in enumerate(deltas):
                if cut is not None and sent >= cut:
                    raise StreamCut(f"cut after {sent} deltas")
                yield event
                while self.hold is not None and not self.hold.is_set():
                    await asyncio.sleep(0.01)
                if self.chunk_delay_s:
                    await asyncio.sleep(self.chunk_delay_s)
            if cut is not None:  # fewer deltas than break_after: cut before the end
                raise StreamCut(f"cut after {len(deltas)} deltas")
            for event in tail:
                yield event

        return StreamingResponse(body(), media_type="text/event-stream")
