"""Test and benchmark helpers that are real servers, not mocks.

``FakeUpstream`` stands in for the one party outside memoryd that cannot run here,
an LLM provider: a real HTTP server speaking OpenAI's chat wire format (JSON and SSE
streaming) that records what it receives. ``serve_asgi`` runs any ASGI app with
uvicorn on a free loopback port in a thread. ``python -m memoryd.testing --port N``
runs the fake upstream as its own process (the gateway benchmark uses that).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoryd.http_protocol import ConnectionLimits


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
    from memoryd.http_protocol import protocol_class

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


class FakeUpstream:
    """An OpenAI-compatible chat server that records what it receives.

    ``reply`` is the assistant text; ``chunk_delay_s`` spaces out streamed chunks;
    ``status`` / ``error_body`` make it fail like a provider does; while ``hold`` is a
    ``threading.Event`` not yet set, every stream stalls after its first chunk (a client
    holding a stream open). ``responders`` answer
    the requests for one model themselves, ``responders[model](body) -> (status,
    payload)`` (memoryd's own LLM extraction call, next to the chat it serves).
    """

    def __init__(self) -> None:
        self.responders: dict[str, Callable[[dict[str, Any]], tuple[int, Any]]] = {}
        self.requests: list[dict[str, Any]] = []
        self.reply = "Sure, noted."
        self.chunk_delay_s = 0.0
        self.hold: threading.Event | None = None
        self.status = 200
        self.error_body: dict[str, Any] = {"error": {"message": "bad", "type": "invalid"}}
        self.app = self._build()

    @property
    def last(self) -> dict[str, Any]:
        body: dict[str, Any] = self.requests[-1]["body"]
        return body

    def _build(self) -> Any:
        import asyncio

        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, StreamingResponse
        from starlette.routing import Route

        async def chat(request: Request) -> Any:
            body = await request.json()
            self.requests.append({"body": body, "headers": dict(request.headers)})
            responder = self.responders.get(str(body.get("model")))
            if responder is not None:
                status, payload = responder(body)
                return JSONResponse(payload, status_code=status)
            if self.status != 200:
                return JSONResponse(self.error_body, status_code=self.status)
            model = body.get("model", "fake")
            if not body.get("stream"):
                return JSONResponse(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 1,
                        "model": model,
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": self.reply},
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                )

            async def events() -> Any:
                words = self.reply.split(" ")
                for i, word in enumerate(words):
                    delta = {"content": word + (" " if i < len(words) - 1 else "")}
                    if i == 0:
                        delta["role"] = "assistant"
                    chunk = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "created": 1,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    }
                    yield f"data: {json.dumps(chunk)}\n\n".encode()
                    while self.hold is not None and not self.hold.is_set():
                        await asyncio.sleep(0.01)
                    if self.chunk_delay_s:
                        await asyncio.sleep(self.chunk_delay_s)
                final = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": model,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                }
                yield f"data: {json.dumps(final)}\n\n".encode()
                yield b"data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")

        async def models(request: Request) -> Any:
            return JSONResponse(
                {
                    "object": "list",
                    "data": [
                        {"id": "fake-model", "object": "model", "created": 1, "owned_by": "fake"}
                    ],
                }
            )

        return Starlette(
            routes=[
                Route("/v1/chat/completions", chat, methods=["POST"]),
                Route("/v1/models", models),
            ]
        )


def main() -> None:
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(description="a fake OpenAI-compatible upstream")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    uvicorn.run(FakeUpstream().app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
