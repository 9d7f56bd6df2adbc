"""Connection hygiene through the real ``memoryd serve`` over loopback.

Each test starts ``memoryd serve`` as a subprocess with short limits set through the
environment, attacks it with raw sockets, and checks the server closes the attacker in
time while ``/healthz`` keeps answering. Bounds are generous (at least 10x the
configured timeout) but below what the unguarded server would do (never close, or
uvicorn's 5 s keep-alive).
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from memoryd.http.protocol import ConnectionLimits, default_max_connections
from tests.server.test_server import MEMORYD, ServerProcess

TOKEN = "connection-tests-admin-token"

pytestmark = pytest.mark.skipif(not MEMORYD.exists(), reason="console script not installed")


class Server(ServerProcess):
    """``memoryd serve`` (tests.server.test_server) with what an attacker needs: raw sockets."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        env = {"MEMORYD_ADMIN_TOKEN": TOKEN, "MEMORYD_LOG_FORMAT": "text", **env}
        super().__init__(tmp / "data", tmp / "server.log", env=env)

    def connect(self) -> socket.socket:
        url = httpx.URL(self.url)
        return socket.create_connection((url.host, url.port or 80), timeout=10)

    def healthz(self) -> int:
        return httpx.get(f"{self.url}/healthz", timeout=10).status_code


@pytest.fixture(params=["httptools", "h11"])
def serve(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Server]]:
    """``memoryd serve`` on each HTTP parser: the guard must hold on both."""
    started: list[Server] = []
    parser = request.param

    def start(**env: str) -> Server:
        root = tmp_path / f"server{len(started)}"
        root.mkdir()
        server = Server(root, {"MEMORYD_HTTP_PARSER": parser, **env})
        started.append(server)
        server.wait_ready()
        assert f"({parser})" in server.stderr  # the startup line names the parser in use
        return server

    try:
        yield start
    finally:
        for server in started:
            server.kill()


def read_until_closed(sock: socket.socket, limit_s: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes; fails if it is still open after
    ``limit_s``. Returns the bytes and the seconds it took."""
    start = time.monotonic()
    sock.settimeout(limit_s)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
            sock.settimeout(max(0.01, limit_s - (time.monotonic() - start)))
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for {limit_s}s (got {data[:80]!r})")
    except ConnectionResetError:
        pass
    return data, time.monotonic() - start


class Responses:
    """HTTP/1.1 responses with a Content-Length, read in order off a raw socket; what
    one recv brought beyond a response (a pipelined answer behind it) is kept for the
    next."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.rest = b""

    def _more(self, why: str) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, why
        self.rest += chunk

    def next(self) -> tuple[int, dict[str, str], bytes]:
        self.sock.settimeout(10)
        while b"\r\n\r\n" not in self.rest:
            self._more(f"closed before a whole response head: {self.rest!r}")
        head, _, self.rest = self.rest.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        length = int(headers["content-length"])
        while len(self.rest) < length:
            self._more("closed before the whole body")
        body, self.rest = self.rest[:length], self.rest[length:]
        return int(status_line.split()[1]), headers, body


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length, read off a raw socket."""
    return Responses(sock).next()


def test_stalled_headers_are_closed_while_healthz_answers(serve: Callable[..., Server]) -> None:
    server = serve(MEMORYD_HEADER_TIMEOUT_S="1", MEMORYD_KEEPALIVE_TIMEOUT_S="60")
    attackers = [server.connect() for _ in range(6)]
    attackers[0].sendall(b"GET /hea")  # half a request line
    attackers[1].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # half the headers
    for i, sock in enumerate(attackers[2:4]):  # headers a byte at a time, one line never ends
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        sock.sendall(f"X-{i}: a".encode())
    # attackers[4:] send nothing at all
    assert server.healthz() == 200  # a fresh client is served while they stall
    for sock in attackers[2:4]:
        sock.sendall(b"b")  # still trickling: the deadline is total, not per byte
    for i, sock in enumerate(attackers):
        data, _ = read_until_closed(sock, limit_s=12)
        if i < 4:  # mid-request: told why
            assert data.startswith(b"HTTP/1.1 408 "), data
        else:  # never sent a byte: just closed
            assert data == b"", data
        sock.close()
    assert server.healthz() == 200


def test_stalled_and_trickled_bodies_are_disconnected(serve: Callable[..., Server]) -> None:
    server = serve(MEMORYD_BODY_TIMEOUT_S="2", MEMORYD_BODY_MIN_BYTES_PER_S="8192")
    head = (
        "POST /api/memory/import HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {{n}}\r\n\r\n"
    )
    # A legitimate body sent in pieces with pauses well under the idle limit is served.
    line = json.dumps({"apiKeyId": "k1", "content": "the user likes tea"}).encode() + b"\n"
    with server.connect() as sock:
        sock.sendall(head.format(n=len(line)).encode())
        for part in (line[:10], line[10:20], line[20:]):
            time.sleep(0.3)
            sock.sendall(part)
        status, _, _ = read_response(sock)
        assert status == 200

    # Headers, ten bytes of a 100 kB body, then nothing.
    staller = server.connect()
    staller.sendall(head.format(n=100_000).encode() + b"0123456789")
    data, _ = read_until_closed(staller, limit_s=20)
    assert data.startswith(b"HTTP/1.1 408 "), data
    assert b'"request_timeout"' in data
    staller.close()

    # A byte every 0.3 s never trips the 2 s idle limit, but falls short of the rate.
    trickler = server.connect()
    trickler.sendall(head.format(n=1_000_000).encode())
    start = time.monotonic()
    closed = False
    while not closed and time.monotonic() - start < 20:
        try:
            trickler.sendall(b"x")
        except OSError:  # reset: the server is gone
            closed = True
            break
        readable, _, _ = select.select([trickler], [], [], 0.3)
        closed = bool(readable)  # the 408, or the close itself
    trickler.close()
    assert closed, "a trickled body kept its connection for 20 s"

    # The app never hangs on them: health answers, and a graceful stop is quick
    # (uvicorn would wait 30 s for a request stuck reading its body).
    assert server.healthz() == 200
    assert server.stop(timeout=20) == 0
    # A client that gave up is not our error: no traceback in the log.
    assert "Traceback" not in server.stderr, server.stderr


def test_connection_cap_answers_fast_503(serve: Callable[..., Server]) -> None:
    server = serve(MEMORYD_MAX_CONNECTIONS="20", MEMORYD_HEADER_TIMEOUT_S="60")
    assert server.healthz() == 200
    idlers = [server.connect() for _ in range(20)]
    time.sleep(0.5)  # let the server accept them all
    try:
        # Over the cap, before sending a byte: a whole 503 at once, then the close.
        probe = server.connect()
        start = time.monotonic()
        status, headers, body = read_response(probe)
        assert time.monotonic() - start < 5
        assert status == 503
        assert headers["connection"] == "close"
        assert json.loads(body)["error"]["code"] == "too_many_connections"
        data, _ = read_until_closed(probe, limit_s=10)
        assert data == b""
        probe.close()
        # A client that sends its request right away reads the 503 too (no reset).
        response = httpx.get(f"{server.url}/healthz", timeout=10)
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "too_many_connections"
    finally:
        for sock in idlers:
            sock.close()
    deadline = time.monotonic() + 10
    while (status := server.healthz()) != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status == 200
    assert "connection limit reached" in server.stderr
    metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
    refused = 'memoryd_connections_closed_total{reason="over_cap"} '
    assert int(next(ln for ln in metrics.splitlines() if ln.startswith(refused)).split()[-1]) >= 2


def test_keepalive_idle_timeout_and_request_cap(serve: Callable[..., Server]) -> None:
    server = serve(
        MEMORYD_KEEPALIVE_TIMEOUT_S="0.3",
        MEMORYD_KEEPALIVE_MAX_REQUESTS="3",
        MEMORYD_HEADER_TIMEOUT_S="60",
    )
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with server.connect() as sock:
        sock.sendall(request)
        status, headers, _ = read_response(sock)
        assert status == 200
        assert headers.get("connection") != "close"
        data, took = read_until_closed(sock, limit_s=10)
        assert data == b""
        assert took < 4  # uvicorn's own keep-alive is 5 s
    with server.connect() as sock:
        for i in range(3):
            sock.sendall(request)
            status, headers, _ = read_response(sock)
            assert status == 200
            assert (headers.get("connection") == "close") == (i == 2)
        data, _ = read_until_closed(sock, limit_s=10)
        assert data == b""


def test_oversized_heads_are_refused(serve: Callable[..., Server]) -> None:
    server = serve(MEMORYD_HEADER_TIMEOUT_S="60")
    # One header past the 16 KiB a head may take, sent at once or in pieces.
    for pieces in (1, 40):
        with server.connect() as sock:
            head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000
            step = len(head) // pieces + 1
            try:
                for i in range(0, len(head), step):
                    sock.sendall(head[i : i + step])
            except OSError:
                pass  # closed mid-send: refused before we finished
            data, _ = read_until_closed(sock, limit_s=10)
            status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
            assert status in (400, 431), data[:200]  # h11 answers 400, httptools 431
    # A large head under the limit is served.
    with server.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 8000 + b"\r\n\r\n")
        status, _, _ = read_response(sock)
        assert status == 200
    assert server.healthz() == 200


def test_pipelined_requests_then_a_stalled_head(serve: Callable[..., Server]) -> None:
    """Two requests in one write are both answered in order; the half head after them
    still gets its deadline (its clock starts once the second is answered)."""
    server = serve(MEMORYD_HEADER_TIMEOUT_S="1", MEMORYD_KEEPALIVE_TIMEOUT_S="60")
    with server.connect() as sock:
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /healthz HTTP/1.1\r\nHo"
        )
        # both answers may arrive in one read: the second is not lost behind the first
        responses = Responses(sock)
        first, _, _ = responses.next()
        second, _, _ = responses.next()
        assert (first, second) == (200, 404)
        data, _ = read_until_closed(sock, limit_s=12)
        data = responses.rest + data
        assert data.startswith(b"HTTP/1.1 408 "), data
    assert server.healthz() == 200


def test_limits_from_env() -> None:
    assert default_max_connections(1024) == 624  # 400 fds left for the db, upstreams, logs
    assert default_max_connections(100) == 32
    assert default_max_connections(1_048_576) == 4096
    limits = ConnectionLimits.from_env({"MEMORYD_MAX_CONNECTIONS": "20"})
    assert limits.max_connections == 20
    assert limits.header_timeout_s == 10.0
    assert limits.body_timeout_s <= 30.0
    assert limits.parser == "auto"
    assert ConnectionLimits.from_env({"MEMORYD_HTTP_PARSER": " H11 "}).parser == "h11"
    bad_values = (
        {"MEMORYD_HEADER_TIMEOUT_S": "abc"},
        {"MEMORYD_MAX_CONNECTIONS": "0"},
        {"MEMORYD_HTTP_PARSER": "picohttp"},
    )
    for bad in bad_values:
        with pytest.raises(ValueError, match=next(iter(bad))):
            ConnectionLimits.from_env(bad)


def test_serve_asgi_takes_the_same_limits() -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from memoryd.testing import serve_asgi

    async def ok(request: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/", ok)])
    limits = ConnectionLimits(header_timeout_s=0.5, max_connections=2)
    with serve_asgi(app, limits=limits) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
            slow.sendall(b"GET / HTTP/1.1\r\n")
            assert httpx.get(url, timeout=10).text == "ok"
            data, _ = read_until_closed(slow, limit_s=10)
            assert data.startswith(b"HTTP/1.1 408 ")
