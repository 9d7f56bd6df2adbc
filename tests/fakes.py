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
    (``http://127.0.0.1:PORT``) and the list of received requests. A ``bytes`` payload
    is sent as it is (a body that is not JSON)."""
    received: list[dict[str, Any]] = []

    class _Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            received.append({"path": self.path, "body": body, "headers": dict(self.headers)})
            status, payload = handle(self.path, body)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (a timeout test)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


from memoryd.testing import FakeUpstream, serve_asgi  # noqa: E402, F401  (re-exported)
