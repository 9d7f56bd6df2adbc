"""Limits: request body size on every route, the import's own larger
limit, bounded import lines, and timeouts on upstream and rerank calls.

Everything runs over real HTTP: the memoryd app under uvicorn on loopback, a fake
upstream (a real OpenAI-compatible server) behind it. Bodies without a
``Content-Length`` are sent chunked from a generator, so the limit is proven on the
bytes actually received, not on a header."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from memoryd.api import routes_memory
from memoryd.app import create_app
from memoryd.bootstrap import build_engine
from memoryd.config import DEFAULT_MAX_BODY_BYTES, EngineConfig
from memoryd.config.upstreams import Provider, save_providers
from memoryd.engine import MemoryEngine
from memoryd.engine.lifecycle import MAX_IMPORT_LINE_BYTES
from memoryd.engine.rerank import rerank
from memoryd.http.limits import BodyLimitMiddleware
from memoryd.testing import FakeUpstream, serve_asgi
from tests.conftest import ADMIN, add
from tests.fakes import http_server

LIMIT = 64 * 1024
ADMIN_AUTH = {"Authorization": f"Bearer {ADMIN}"}


def chunked(data: bytes, size: int = 16 * 1024) -> Iterator[bytes]:
    """A body httpx sends with ``Transfer-Encoding: chunked`` (no Content-Length)."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def chat_body(padding: int) -> bytes:
    text = "I prefer tea. " + "x" * padding
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()


@dataclass
class Server:
    engine: MemoryEngine
    upstream: FakeUpstream
    url: str
    key: str

    @property
    def chat(self) -> str:
        return f"{self.url}/v1/chat/completions"

    @property
    def client_auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}", "content-type": "application/json"}


@pytest.fixture
def server(engine: MemoryEngine) -> Iterator[Server]:
    upstream = FakeUpstream()
    with serve_asgi(upstream.app) as upstream_url:
        save_providers(engine.store, [Provider("default", f"{upstream_url}/v1", None)])
        _, secret = engine.keys.create("limits")
        app = create_app(engine, admin_token=ADMIN, max_body_bytes=LIMIT)
        with serve_asgi(app) as url:
            yield Server(engine, upstream, url, secret)


def assert_openai_413(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "payload_too_large"
    assert str(LIMIT) in error["message"]
    assert set(error) == {"message", "type", "param", "code"}


def assert_api_413(response: httpx.Response, limit: int = LIMIT) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "code", "details"}
    assert error["code"] == "payload_too_large"
    assert str(limit) in error["message"]


# -- the gateway ---------------------------------------------------------------------


def test_a_huge_chat_body_is_413_in_openai_shape_and_never_forwarded(server: Server) -> None:
    response = httpx.post(server.chat, headers=server.client_auth, content=chat_body(2 * LIMIT))
    assert_openai_413(response)
    assert not server.upstream.requests


def test_a_huge_chunked_chat_body_is_413_too(server: Server) -> None:
    response = httpx.post(
        server.chat, headers=server.client_auth, content=chunked(chat_body(4 * LIMIT))
    )
    assert "content-length" not in response.request.headers
    assert_openai_413(response)
    assert not server.upstream.requests


def test_a_body_just_under_the_limit_goes_through(server: Server) -> None:
    body = chat_body(LIMIT - 200)
    assert LIMIT - 200 < len(body) <= LIMIT
    for content in (body, chunked(body)):
        response = httpx.post(server.chat, headers=server.client_auth, content=content)
        assert response.status_code == 200, response.text
    assert len(server.upstream.requests) == 2


def test_the_connection_stays_usable_after_a_413(server: Server) -> None:
    with httpx.Client() as http:
        first = http.post(server.chat, headers=server.client_auth, content=chat_body(2 * LIMIT))
        assert_openai_413(first)
        second = http.post(server.chat, headers=server.client_auth, content=chat_body(10))
        assert second.status_code == 200


def test_the_default_limit_is_4_mib_and_catches_a_huge_body(engine: MemoryEngine) -> None:
    """The malformed-request catalogue's "huge body": 5 MiB against the default."""
    assert DEFAULT_MAX_BODY_BYTES == 4 * 1024 * 1024
    _, secret = engine.keys.create("k")
    huge = chat_body(5 * 1024 * 1024)
    auth = {"Authorization": f"Bearer {secret}", "content-type": "application/json"}
    with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
        response = httpx.post(f"{url}/v1/chat/completions", headers=auth, content=huge)
        streamed = httpx.post(f"{url}/v1/chat/completions", headers=auth, content=chunked(huge))
    for answer in (response, streamed):
        assert answer.status_code == 413
        assert answer.json()["error"]["code"] == "payload_too_large"
        assert str(DEFAULT_MAX_BODY_BYTES) in answer.json()["error"]["message"]


# -- every other route -------------------------------------------------------------


def test_rest_routes_answer_413_in_the_api_error_shape(server: Server) -> None:
    memory = json.dumps(
        {"apiKeyId": "alice", "key": "k", "content": "c", "metadata": {"pad": "x" * 2 * LIMIT}}
    ).encode()
    headers = {**ADMIN_AUTH, "content-type": "application/json"}
    url = f"{server.url}/api/memory"
    assert_api_413(httpx.post(url, headers=headers, content=memory))
    assert_api_413(httpx.post(url, headers=headers, content=chunked(memory)))
    assert server.engine.list_memories(owner="alice").total == 0


def test_the_limit_runs_before_authentication(server: Server) -> None:
    """A 413 reveals nothing, and an unauthenticated flood is cut off at the limit."""
    response = httpx.post(f"{server.url}/api/memory", content=b"x" * (2 * LIMIT))
    assert_api_413(response)


def test_mcp_and_dashboard_are_limited(server: Server) -> None:
    huge = b"x" * (2 * LIMIT)
    mcp = httpx.post(
        f"{server.url}/mcp",
        headers={**ADMIN_AUTH, "content-type": "application/json"},
        content=chunked(huge),
    )
    assert_api_413(mcp)
    login = httpx.post(
        f"{server.url}/dashboard/login",
        headers={"content-type": "application/x-www-form-urlencoded"},
        content=huge,
    )
    assert_api_413(login)


def test_413s_are_logged_and_counted(server: Server) -> None:
    httpx.post(server.chat, headers=server.client_auth, content=chat_body(2 * LIMIT))
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'status="413"' in metrics


def test_the_limit_comes_from_the_environment(tmp_path: Path) -> None:
    from tests.embedders import no_source

    config = EngineConfig.from_env({"MEMORYD_MAX_BODY_BYTES": "2048"}, data_dir=tmp_path / "d")
    assert config.max_body_bytes == 2048
    assert EngineConfig.from_env({}, data_dir=tmp_path).max_body_bytes == DEFAULT_MAX_BODY_BYTES
    for junk in ("abc", "-5", "nan"):
        value = EngineConfig.from_env({"MEMORYD_MAX_BODY_BYTES": junk}, data_dir=tmp_path)
        assert 1024 <= value.max_body_bytes <= DEFAULT_MAX_BODY_BYTES
    engine = build_engine(config, {}, embedding_resolver=no_source)
    try:
        with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
            small = httpx.post(
                f"{url}/api/memory",
                headers=ADMIN_AUTH,
                json={"apiKeyId": "a", "key": "k", "content": "short"},
            )
            big = httpx.post(
                f"{url}/api/memory",
                headers=ADMIN_AUTH,
                json={"apiKeyId": "a", "key": "k2", "content": "y" * 3000},
            )
    finally:
        engine.close()
    assert small.status_code == 201
    assert_api_413(big, 2048)


def test_the_app_never_receives_more_than_the_limit() -> None:
    """Pure ASGI: the bytes handed to the app stop at the limit; nothing is buffered."""
    seen: list[int] = []

    async def count(request: Request) -> JSONResponse:
        total = 0
        try:
            async for chunk in request.stream():
                total += len(chunk)
        finally:
            seen.append(total)
        return JSONResponse({"total": total})

    app = BodyLimitMiddleware(
        Starlette(routes=[Route("/up", count, methods=["POST"])]), max_bytes=LIMIT
    )
    with serve_asgi(app) as url:
        response = httpx.post(f"{url}/up", content=chunked(b"z" * (16 * LIMIT), 4096))
        ok = httpx.post(f"{url}/up", content=chunked(b"z" * LIMIT, 4096))
    assert_api_413(response)
    assert ok.json() == {"total": LIMIT}
    assert seen[0] <= LIMIT
    assert seen == [seen[0], LIMIT]


# -- the import: its own limit, and bounded lines ------------------------------------


def jsonl(count: int, pad: int) -> bytes:
    lines = (
        json.dumps({"apiKeyId": "bob", "key": f"k{i}", "content": f"fact {i} " + "p" * pad})
        for i in range(count)
    )
    return ("\n".join(lines) + "\n").encode()


def test_the_import_keeps_its_own_larger_limit(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_memory, "MAX_IMPORT_BYTES", 4 * LIMIT)
    url_path = "/api/memory/import"
    body = jsonl(20, 6000)  # ~120 KiB: over the general limit, under the import's
    assert LIMIT < len(body) < 4 * LIMIT
    with serve_asgi(create_app(engine, admin_token=ADMIN, max_body_bytes=LIMIT)) as url:
        imported = httpx.post(f"{url}{url_path}", headers=ADMIN_AUTH, content=chunked(body))
        too_big = httpx.post(f"{url}{url_path}", headers=ADMIN_AUTH, content=jsonl(50, 6000))
        other = httpx.post(f"{url}/api/memory", headers=ADMIN_AUTH, content=body)
    assert imported.status_code == 200, imported.text
    assert imported.json()["imported"] == 20
    assert_api_413(too_big, 4 * LIMIT)
    assert_api_413(other)
    assert engine.list_memories(owner="bob").total == 20


def test_an_import_line_over_1_mib_is_reported_and_the_rest_imported(
    engine: MemoryEngine,
) -> None:
    assert MAX_IMPORT_LINE_BYTES == 1024 * 1024
    huge = json.dumps({"apiKeyId": "bob", "key": "huge", "content": "h" * MAX_IMPORT_LINE_BYTES})
    body = jsonl(1, 10) + huge.encode() + b"\n" + jsonl(1, 20).replace(b'"k0"', b'"k1"')
    with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
        response = httpx.post(f"{url}/api/memory/import", headers=ADMIN_AUTH, content=body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["imported"] == 2
    assert result["errors"] == [
        {"line": 2, "message": f"line longer than {MAX_IMPORT_LINE_BYTES} bytes"}
    ]
    keys = {m.key for m in engine.list_memories(owner="bob").data}
    assert keys == {"k0", "k1"}


# -- timeouts ----------------------------------------------------------------------


def slow_upstream(delay_s: float) -> Starlette:
    async def chat(request: Request) -> JSONResponse:
        await request.body()
        await asyncio.sleep(delay_s)
        return JSONResponse({"choices": []})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def test_a_slow_upstream_is_cut_off_with_a_504(engine: MemoryEngine) -> None:
    _, secret = engine.keys.create("k")
    auth = {"Authorization": f"Bearer {secret}"}
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    with serve_asgi(slow_upstream(1.5)) as upstream_url:
        save_providers(engine.store, [Provider("default", f"{upstream_url}/v1", None)])
        app = create_app(engine, admin_token=ADMIN, upstream_timeout_s=0.3)
        with serve_asgi(app) as url:
            start = time.monotonic()
            response = httpx.post(f"{url}/v1/chat/completions", headers=auth, json=body)
            elapsed = time.monotonic() - start
    assert response.status_code == 504
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("upstream_error", "upstream_timeout")
    assert elapsed < 1.4


def test_the_upstream_timeout_comes_from_the_environment(tmp_path: Path) -> None:
    env = {"MEMORYD_UPSTREAM_TIMEOUT_S": "0.3"}
    assert EngineConfig.from_env(env, data_dir=tmp_path).upstream_timeout_s == 0.3
    assert EngineConfig.from_env({}, data_dir=tmp_path).upstream_timeout_s == 300.0
    for junk in ("0", "-1", "soon", "inf"):
        bad = {"MEMORYD_UPSTREAM_TIMEOUT_S": junk}
        assert EngineConfig.from_env(bad, data_dir=tmp_path).upstream_timeout_s == 300.0


def test_a_slow_reranker_fails_open_within_its_timeout(engine: MemoryEngine) -> None:
    add(engine, "alice", "kiwi fruit salad")
    add(engine, "alice", "kiwi fruit")
    ranked = engine.preview("alice", "kiwi fruit", strategy="hybrid").hits
    assert len(ranked) == 2

    def slow(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(1.5)
        return 200, {"results": [{"index": 1, "relevance_score": 1.0}]}

    with http_server(slow) as (base, _):
        start = time.monotonic()
        order, reason = rerank(ranked, "kiwi", Provider("rr", base, None), "m", timeout_s=0.3)
        elapsed = time.monotonic() - start
    assert [h.memory.id for h in order] == [h.memory.id for h in ranked]
    assert reason is not None
    assert "Timeout" in reason
    assert elapsed < 1.4
