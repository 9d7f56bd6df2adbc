"""Failed authentications are slowed per client address: admin-token
guesses on ``/api``, dashboard logins and MCP credentials share one budget per
address, a right credential costs nothing, another address is not held back, and the
log names the address, never the credential. Real HTTP over loopback; the throttle's
clock is the test's, so refilling takes no wall time."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memoryd.app import create_app
from memoryd.engine import MemoryEngine
from memoryd.http.deps import AuthThrottle
from memoryd.testing import serve_asgi
from tests.conftest import ADMIN

BURST, REFILL_S = 4, 6.0


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Server:
    url: str
    clock: Clock

    def client(self, source: str = "127.0.0.1") -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=source)
        return httpx.Client(base_url=self.url, transport=transport, timeout=30)


@pytest.fixture
def server(engine: MemoryEngine) -> Iterator[Server]:
    clock = Clock()
    throttle = AuthThrottle(burst=BURST, refill_s=REFILL_S, clock=clock)
    with serve_asgi(create_app(engine, admin_token=ADMIN, auth_throttle=throttle)) as url:
        yield Server(url, clock)


def _status(client: httpx.Client, token: str) -> httpx.Response:
    return client.get("/api/memory/engine-status", headers={"authorization": f"Bearer {token}"})


def test_guesses_past_the_burst_are_refused_before_the_token_is_compared(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memoryd.http.deps")
    with server.client() as web:
        assert [_status(web, f"guess-{i}").status_code for i in range(BURST)] == [401] * BURST
        refused = _status(web, "guess-next")
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "rate_limit_exceeded"
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.headers["x-memoryd-limit"] == "auth-failures"
        # the right token from this address waits too: else guessing would not slow down
        assert _status(web, ADMIN).status_code == 429
        server.clock.now += REFILL_S  # one try comes back
        assert _status(web, ADMIN).status_code == 200
        assert _status(web, ADMIN).status_code == 200  # a right token costs nothing
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "failed admin token authentication from 127.0.0.1" in logged
    assert "guess-" not in logged


def test_another_address_is_not_held_back(server: Server) -> None:
    with server.client("127.0.0.1") as attacker:
        for i in range(BURST + 2):
            _status(attacker, f"guess-{i}")
        assert _status(attacker, ADMIN).status_code == 429
    with server.client("127.0.0.2") as admin:
        assert _status(admin, ADMIN).status_code == 200


def _csrf(web: httpx.Client) -> str:
    """A login form's one-time token (its cookie rides in the client's jar)."""
    found = re.search(r'name="csrf" value="([^"]+)"', web.get("/dashboard/login").text)
    assert found is not None
    return found[1]


def test_dashboard_logins_and_mcp_share_the_budget(server: Server) -> None:
    with server.client() as web:
        for i in range(BURST - 1):
            wrong = web.post("/dashboard/login", data={"csrf": _csrf(web), "token": f"no-{i}"})
            assert wrong.status_code == 401
        mcp = web.post(
            "/mcp",
            headers={"authorization": "Bearer wrong-key", "accept": "application/json"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert mcp.status_code == 401  # the last try of the burst
        held = web.post("/dashboard/login", data={"csrf": _csrf(web), "token": ADMIN})
        assert held.status_code == 429
        assert "Too many failed logins" in held.text
        assert "retry-after" in held.headers
        again = web.post(
            "/mcp",
            headers={"authorization": f"Bearer {ADMIN}", "accept": "application/json"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert again.status_code == 429
        assert again.headers["x-memoryd-limit"] == "auth-failures"


def test_the_budget_comes_from_the_environment(tmp_path: Path) -> None:
    from memoryd.config import EngineConfig

    assert EngineConfig.from_env({}, data_dir=tmp_path).auth_failures_per_min == 10
    env = {"MEMORYD_AUTH_FAILURES_PER_MIN": "30"}
    assert EngineConfig.from_env(env, data_dir=tmp_path).auth_failures_per_min == 30
    throttle = AuthThrottle.per_minute(30)
    assert (throttle.burst, throttle.refill_s) == (30, 2.0)
    # out of range is clamped, unreadable is the default, as every numeric setting
    low = EngineConfig.from_env({"MEMORYD_AUTH_FAILURES_PER_MIN": "0"}, data_dir=tmp_path)
    assert low.auth_failures_per_min == 1
    odd = EngineConfig.from_env({"MEMORYD_AUTH_FAILURES_PER_MIN": "lots"}, data_dir=tmp_path)
    assert odd.auth_failures_per_min == 10


def test_a_client_key_is_never_held_back_by_its_neighbours_failures(
    server: Server, engine: MemoryEngine
) -> None:
    """A client key is a high-entropy secret, looked up before the throttle: a revoked
    key retried from the same address holds back the admin token, not the valid keys."""
    _, secret = engine.keys.create("good")
    with server.client() as web:
        for i in range(BURST + 2):
            _status(web, f"guess-{i}")
        assert _status(web, ADMIN).status_code == 429
        mcp = web.post(
            "/mcp",
            headers={"authorization": f"Bearer {secret}", "accept": "application/json"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert mcp.status_code != 429, mcp.text
        # /metrics tells an admin scrape from an open one: it asks under the throttle,
        # so it is no free oracle (an out-of-tries address gets the open scrape)
        scrape = web.get("/metrics", headers={"authorization": f"Bearer {ADMIN}"})
        assert scrape.status_code == 200
        assert "memoryd_key_injected_tokens_total" not in scrape.text
    with server.client("127.0.0.2") as other:  # the same token from a fresh address
        admin_scrape = other.get("/metrics", headers={"authorization": f"Bearer {ADMIN}"})
        assert "memoryd_key_injected_tokens_total" in admin_scrape.text


@pytest.mark.parametrize(
    ("host", "bucket"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),  # one /64, one bucket
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("testclient", "testclient"),
    ],
)
def test_an_ipv6_client_is_one_bucket_per_64(host: str, bucket: str) -> None:
    from memoryd.http.deps import throttle_key

    assert throttle_key(host) == bucket
