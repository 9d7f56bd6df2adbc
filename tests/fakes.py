"""A stand-in for outside providers: a real HTTP server on 127.0.0.1.

Only parties outside memoryd (LLM upstreams, embedding and rerank providers) are
faked, and always over real loopback HTTP in their real wire format.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[str, dict[str, Any]], tuple[int, Any]]


@contextmanager
def http_server(handle: Handler) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve ``handle(path, json_body) -> (status, json_payload)``; yields the base URL
    (``http://127.0.0.1:PORT``) and the list of received requests."""
    received: list[dict[str, Any]] = []

    class _Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            received.append({"path": self.path, "body": body, "headers": dict(self.headers)})
            status, payload = handle(self.path, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


# -- a fake OpenAI-compatible upstream, and live servers on loopback -------------------


@contextmanager
def serve_asgi(app: Any) -> Iterator[str]:
    """Run an ASGI app with uvicorn on a free 127.0.0.1 port in a thread."""
    import socket
    import time

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, lifespan="on", access_log=False)
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
    ``status`` / ``error_body`` make it fail like a provider does.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = "Sure, noted."
        self.chunk_delay_s = 0.0
        self.status = 200
        self.error_body: dict[str, Any] = {"error": {"message": "bad", "type": "invalid"}}
        self.app = self._build()

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]["body"]

    def _build(self) -> Any:
        import asyncio

        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, StreamingResponse
        from starlette.routing import Route

        async def chat(request: Request) -> Any:
            body = await request.json()
            self.requests.append({"body": body, "headers": dict(request.headers)})
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
