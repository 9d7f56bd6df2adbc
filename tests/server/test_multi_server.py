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
from tests.server.test_server import MEMORYD, ServerProcess

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


def test_a_server_killed_mid_extraction_leaves_its_job_to_the_other(
    tmp_path: Path, pg_url: str
) -> None:
    """Server A queues an exchange and is SIGKILLed while its extraction call is in
    flight; once A's lease runs out, B claims the job from the shared queue and runs it:
    the fact is stored once and the queue is empty."""
    import json
    import threading

    import psycopg

    from tests.fakes import http_server

    arrived, release = threading.Event(), threading.Event()
    calls: list[float] = []

    def model(path: str, body: dict[str, object]) -> tuple[int, object]:
        calls.append(time.monotonic())
        if len(calls) == 1:  # A's call: in flight until A is dead
            arrived.set()
            release.wait(60)
        ops = {"operations": [{"op": "ADD", "content": "User is vegetarian", "slot": "diet"}]}
        message = {"role": "assistant", "content": json.dumps(ops)}
        return 200, {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        }

    env = {
        "MEMORYD_DATABASE_URL": pg_url,
        "MEMORYD_ADMIN_TOKEN": TOKEN,
        "MEMORYD_EXTRACTION_LEASE_S": "2",  # B sweeps every second
    }
    upstream = FakeUpstream()
    with serve_asgi(upstream.app) as chat_url, http_server(model) as (model_url, _):
        a = ServerProcess(tmp_path / "a", tmp_path / "a.log", env=env)
        b = ServerProcess(tmp_path / "b", tmp_path / "b.log", env=env)
        try:
            url_a, url_b = a.wait_ready(60), b.wait_ready(60)
            with httpx.Client(headers=ADMIN, timeout=30) as http:
                providers = [
                    {"name": "default", "baseUrl": f"{chat_url}/v1"},
                    {"name": "llm", "baseUrl": f"{model_url}/v1"},
                ]
                assert http.put(f"{url_a}/api/settings/providers", json=providers).is_success
                settings = {
                    "extractionMode": "llm",
                    "extractionProviderModel": "llm/extract-1",
                    "extractionTimeoutMs": 60000,
                }
                assert http.put(f"{url_a}/api/settings/memory", json=settings).is_success
                created = http.post(f"{url_a}/api/keys", json={"name": "app"}).json()
                secret = created["key"]
            chat = httpx.post(
                f"{url_a}/v1/chat/completions",
                headers={"Authorization": f"Bearer {secret}"},
                json={"model": "m", "messages": [{"role": "user", "content": "I eat no meat."}]},
                timeout=60,
            )
            assert chat.status_code == 200, chat.text
            assert arrived.wait(60), "A never called the model"
            a.proc.kill()  # SIGKILL: no shutdown, the job stays queued under A's lease
            a.proc.wait(30)
            release.set()

            with psycopg.connect(pg_url) as conn:

                def queue_empty() -> bool:
                    row = conn.execute("SELECT count(*) FROM extraction_queue").fetchone()
                    conn.commit()
                    return row is not None and row[0] == 0

                eventually(lambda: len(calls) >= 2 and queue_empty(), "B ran A's job")
                owners = conn.execute(
                    "SELECT content FROM memories WHERE content = 'User is vegetarian'"
                ).fetchall()
            assert owners == [("User is vegetarian",)]  # once
            listed = httpx.get(
                f"{url_b}/api/memory", params={"apiKeyId": created["id"]}, headers=ADMIN
            ).json()
            assert [m["content"] for m in listed["data"]] == ["User is vegetarian"]
            assert len(calls) == 2  # A's (killed) and B's: nobody ran it a third time
            assert "recovered 1 extraction jobs" in b.stderr
        finally:
            release.set()
            for server in (a, b):
                server.stop()
                server.kill()
