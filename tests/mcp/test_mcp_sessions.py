"""MCP session limits: per-caller caps answered with 429, the idle timeout,
DELETE freeing a slot, and a revoked key's sessions dropped. Through the real app on a
loopback port: raw ``initialize`` POSTs where many sessions are needed quickly, the
SDK's own client (2025 handshake, a stateful session) where a session must work."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memoryd.app import create_app
from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.engine import MemoryEngine
from memoryd.mcp import McpHttpEndpoint
from memoryd.testing import serve_asgi
from tests.conftest import ADMIN
from tests.mcp_support import Session, over_http

PER_KEY, PER_ADMIN = 3, 2
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
ACCEPT = "application/json, text/event-stream"


@dataclass
class Srv:
    engine: MemoryEngine
    mcp: McpHttpEndpoint
    url: str
    alice: str
    bob: str

    def headers(self, token: str, session_id: str | None = None) -> dict[str, str]:
        out = {"Authorization": f"Bearer {token}", "Accept": ACCEPT}
        return {**out, "mcp-session-id": session_id} if session_id else out

    def open(self, token: str) -> httpx.Response:
        """A raw 2025 ``initialize``: opens a session (its id in ``mcp-session-id``)."""
        return httpx.post(f"{self.url}/mcp", json=INIT, headers=self.headers(token), timeout=30)

    def opened(self, token: str) -> str:
        resp = self.open(token)
        assert resp.status_code == 200, resp.text
        return resp.headers["mcp-session-id"]

    def close(self, token: str, session_id: str) -> httpx.Response:
        return httpx.delete(f"{self.url}/mcp", headers=self.headers(token, session_id))


def _engine(tmp_path: Path, idle_s: float) -> MemoryEngine:
    from tests.embedders import no_source

    data = tmp_path / "data"
    env = {
        "MEMORYD_DATA_DIR": str(data),
        "MEMORYD_MCP_MAX_SESSIONS_PER_KEY": str(PER_KEY),
        "MEMORYD_MCP_MAX_ADMIN_SESSIONS": str(PER_ADMIN),
        "MEMORYD_MCP_SESSION_IDLE_S": str(idle_s),
        "MEMORYD_MCP_MAX_SESSIONS": "1",  # raised to the floor: two keys' caps + the admin's
    }
    config = EngineConfig.from_env(env, data_dir=data)
    return build_engine(config, env, embedding_resolver=no_source)


@contextmanager
def _served(tmp_path: Path, idle_s: float) -> Iterator[Srv]:
    engine = _engine(tmp_path, idle_s)
    try:
        _, alice = engine.keys.create("Alice", key_id="alice")
        _, bob = engine.keys.create("Bob", key_id="bob")
        app = create_app(engine, admin_token=ADMIN)
        with serve_asgi(app) as url:
            yield Srv(engine, app.state.mcp, url, alice, bob)
    finally:
        engine.close()


@pytest.fixture
def srv(tmp_path: Path) -> Iterator[Srv]:
    with _served(tmp_path, idle_s=600) as s:
        yield s


def assert_too_many(resp: httpx.Response, limit: int) -> None:
    assert resp.status_code == 429, resp.text
    error = resp.json()["error"]
    assert error["code"] == "rate_limit_exceeded"
    assert f"limit {limit}" in error["message"]
    assert isinstance(error["details"], list)
    assert int(resp.headers["retry-after"]) >= 1
    assert "mcp-session-id" not in resp.headers


def wait_until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_key_at_its_cap_gets_429_and_locks_out_nobody_else(srv: Srv) -> None:
    manager = srv.mcp.server.session_manager
    assert manager.session_idle_timeout == 600
    assert manager.max_sessions == 2 * PER_KEY + PER_ADMIN
    for _ in range(PER_KEY):
        srv.opened(srv.alice)
    assert_too_many(srv.open(srv.alice), PER_KEY)
    assert srv.mcp.open_sessions == PER_KEY  # the refused one never reached the SDK

    async def works(s: Session) -> None:
        assert (await s.ok("memory_search", {"apiKeyId": "alice"}))["count"] == 0

    async def works_for_bob(s: Session) -> None:
        assert (await s.ok("memory_search", {}))["count"] == 0

    over_http(srv.url, srv.bob, works_for_bob, mode="legacy")
    over_http(srv.url, ADMIN, works, mode="legacy")
    over_http(srv.url, srv.alice, works_for_bob)  # the 2026 era has no sessions to cap
    # The admin token is one caller with its own cap.
    for _ in range(PER_ADMIN):
        srv.opened(ADMIN)
    assert_too_many(srv.open(ADMIN), PER_ADMIN)
    srv.opened(srv.bob)
    assert_too_many(srv.open(srv.alice), PER_KEY)


def test_concurrent_openings_cannot_overshoot_the_cap(srv: Srv) -> None:
    async def main() -> list[int]:
        async with httpx.AsyncClient(timeout=30) as http:
            posts = [
                http.post(f"{srv.url}/mcp", json=INIT, headers=srv.headers(srv.alice))
                for _ in range(4 * PER_KEY)
            ]
            return [r.status_code for r in await asyncio.gather(*posts)]

    statuses = asyncio.run(main())
    assert sorted(statuses) == [200] * PER_KEY + [429] * (3 * PER_KEY)
    assert srv.mcp.open_sessions == PER_KEY


def test_delete_frees_a_slot_and_only_the_owner_can_delete(srv: Srv) -> None:
    ids = [srv.opened(srv.alice) for _ in range(PER_KEY)]
    assert_too_many(srv.open(srv.alice), PER_KEY)
    assert srv.close(srv.bob, ids[0]).status_code == 404  # not bob's to end
    assert_too_many(srv.open(srv.alice), PER_KEY)
    assert srv.close(srv.alice, ids[0]).status_code == 200
    srv.opened(srv.alice)  # at once: the slot is free as soon as the DELETE answers
    wait_until(lambda: srv.mcp.open_sessions == PER_KEY)  # the SDK let go of the old one
    assert_too_many(srv.open(srv.alice), PER_KEY)
    assert srv.close(srv.alice, ids[0]).status_code == 404  # already gone


def test_an_idle_session_is_reaped_and_frees_its_slot(tmp_path: Path) -> None:
    # Opening four sessions takes milliseconds; 3 s of idleness is far beyond that.
    with _served(tmp_path, idle_s=3) as srv:
        assert srv.mcp.server.session_manager.session_idle_timeout == 3
        ids = [srv.opened(srv.alice) for _ in range(PER_KEY)]
        assert_too_many(srv.open(srv.alice), PER_KEY)
        wait_until(lambda: srv.mcp.open_sessions == 0)
        wait_until(lambda: len(srv.mcp._sessions) == 0)  # the bindings follow (sweep)
        fresh = srv.opened(srv.alice)
        post = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        stale = httpx.post(f"{srv.url}/mcp", json=post, headers=srv.headers(srv.alice, ids[0]))
        assert stale.status_code == 404
        assert srv.close(srv.alice, fresh).status_code == 200


def test_revoking_a_key_drops_its_sessions(srv: Srv) -> None:
    for _ in range(PER_KEY):
        srv.opened(srv.alice)

    async def body(s: Session) -> None:
        await s.ok("memory_add", {"content": "Bob keeps working"})
        assert srv.mcp.open_sessions == PER_KEY + 1
        revoked = httpx.delete(
            f"{srv.url}/api/keys/alice", headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert revoked.status_code == 200
        deadline = time.monotonic() + 30
        while srv.mcp.open_sessions > 1:  # the sweep ends them (every 2 s)
            assert time.monotonic() < deadline, "alice's sessions were not dropped"
            await asyncio.sleep(0.05)
        assert len(srv.mcp._sessions) == 1  # only bob's binding is left
        found = await s.ok("memory_search", {"query": "working"})
        assert found["count"] == 1

    over_http(srv.url, srv.bob, body, mode="legacy")
    assert srv.open(srv.alice).status_code == 401
