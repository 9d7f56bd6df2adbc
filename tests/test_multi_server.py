"""Two ``memoryd serve`` processes on one PostgreSQL database, as behind a load
balancer: what one stores, creates, revokes or configures, the other serves. Real
processes, real HTTP, a real PostgreSQL (``pg_url``), the fake upstream on loopback."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from memoryd.testing import FakeUpstream, serve_asgi
from tests.test_server import MEMORYD, ServerProcess

pytest.importorskip("psycopg")
pytestmark = pytest.mark.skipif(not MEMORYD.exists(), reason="console script not installed")

TOKEN = "shared-admin-token-for-both-servers"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
#: How long a change may take to reach the other server (announced at once, the caches'
#: TTL as a fallback): generous so a busy machine does not fail the test.
SPREAD_S = 30.0


def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SPREAD_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"never happened within {SPREAD_S} s: {what}")


@pytest.fixture
def servers(tmp_path: Path, pg_url: str) -> Iterator[tuple[str, str]]:
    env = {"MEMORYD_DATABASE_URL": pg_url, "MEMORYD_ADMIN_TOKEN": TOKEN}
    both = [ServerProcess(tmp_path / n, tmp_path / f"{n}.log", env=env) for n in ("a", "b")]
    try:
        yield both[0].wait_ready(60), both[1].wait_ready(60)
    finally:
        for server in both:
            server.stop()
            server.kill()  # reaps it and closes its log


def test_two_servers_share_memories_keys_providers_and_revocations(
    servers: tuple[str, str],
) -> None:
    a, b = servers
    with httpx.Client(headers=ADMIN, timeout=30) as http:
        stored = http.post(
            f"{a}/api/memory", json={"apiKeyId": "team", "content": "User lives in Lisbon"}
        )
        assert stored.status_code == 201, stored.text
        listed = http.get(f"{b}/api/memory", params={"apiKeyId": "team"}).json()
        assert [m["content"] for m in listed["data"]] == ["User lives in Lisbon"]

        upstream = FakeUpstream()
        with serve_asgi(upstream.app) as upstream_url:
            saved = http.put(
                f"{a}/api/settings/providers",
                json=[{"name": "default", "baseUrl": f"{upstream_url}/v1"}],
            )
            assert saved.status_code == 200, saved.text
            created = http.post(f"{a}/api/keys", json={"name": "app"}).json()
            client = {"Authorization": f"Bearer {created['key']}"}

            def models_on_b() -> int:
                return httpx.get(f"{b}/v1/models", headers=client, timeout=30).status_code

            # The key made on A and the provider saved on A both work on B.
            eventually(lambda: models_on_b() == 200, "B serves A's key with A's provider")
            revoked = http.delete(f"{a}/api/keys/{created['id']}")
            assert revoked.status_code == 200, revoked.text
            eventually(lambda: models_on_b() == 401, "B refuses the key A revoked")


def test_eight_writers_split_across_both_servers_lose_nothing(
    servers: tuple[str, str],
) -> None:
    per_writer = 25

    def write(writer: int) -> list[int]:
        codes = []
        with httpx.Client(headers=ADMIN, timeout=60) as http:
            for i in range(per_writer):
                url = servers[(writer + i) % 2]
                body = {"apiKeyId": "load", "content": f"fact {i} of writer {writer}"}
                codes.append(http.post(f"{url}/api/memory", json=body).status_code)
        return codes

    with ThreadPoolExecutor(8) as pool:
        codes = [c for batch in pool.map(write, range(8)) for c in batch]
    assert codes == [201] * (8 * per_writer)
    for url in servers:
        page = httpx.get(
            f"{url}/api/memory", params={"apiKeyId": "load", "limit": 1}, headers=ADMIN
        ).json()
        assert page["total"] == 8 * per_writer
