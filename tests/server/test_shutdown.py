"""A stop that fits a container's grace period: ``memoryd serve`` as a real
process, a slow embedding provider on loopback (the one party outside memoryd, half a
second per text) and a backlog of acknowledged writes it could not embed in under 40 s,
plus chats whose facts are captured in the background. SIGTERM stops it well inside
that (``MEMORYD_SHUTDOWN_S``, 10 s by default), and the next start has every write and
every fact, and embeds the rest of the backlog."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import openai
import pytest

from memoryd.testing import FakeUpstream, serve_asgi
from tests.serve_support import start_serve

ADMIN = "shutdown-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
WRITES, DELAY_S = 80, 0.5  # a backlog of 40 s of embedding
ALLERGIES = ["kiwi", "mango", "sesame", "lupin", "celery", "mustard", "walnuts", "oats"]


@pytest.fixture
def upstream() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream()
    with serve_asgi(fake.app) as url:
        yield fake, url


def _serve(data: Path, sink: IO[bytes], log: Path, upstream: str) -> tuple[Any, str]:
    env = {
        "MEMORYD_ADMIN_TOKEN": ADMIN,
        "MEMORYD_UPSTREAM_BASE_URL": f"{upstream}/v1",
        "MEMORYD_UPSTREAM_API_KEY": "provider-key",
    }
    return start_serve(data, log, sink, env)


def _pending(web: httpx.Client) -> int:
    status = web.get("/api/memory/engine-status").json()
    return int(status["reindex"]["pending"])


def test_sigterm_with_a_backlog_stops_in_time_and_the_next_start_resumes(
    tmp_path: Path, upstream: tuple[FakeUpstream, str]
) -> None:
    fake, upstream_url = upstream
    fake.embedding_delay_s = DELAY_S
    data, log, again = tmp_path / "data", tmp_path / "server.log", tmp_path / "again.log"
    with log.open("wb") as sink:
        proc, url = _serve(data, sink, log, upstream_url)
        try:
            web = httpx.Client(base_url=url, headers=AUTH, timeout=60)
            remote = {"embeddingSource": "remote", "embeddingProviderModel": "default/embed"}
            assert web.put("/api/settings/memory", json=remote).status_code == 200
            created = web.post("/api/keys", json={"name": "app"}).json()
            key, owner = created["key"], created["id"]
            # the notes belong to another owner: a chat embeds its own owner's backlog
            # before it searches, which would leave nothing to stop with
            for i in range(WRITES):
                memory = {"apiKeyId": "notes", "key": f"note:{i}", "content": f"Note {i} " * 40}
                assert web.post("/api/memory", json=memory).status_code == 201
            with openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0) as client:
                for food in ALLERGIES:
                    said = [{"role": "user", "content": f"I'm allergic to {food}."}]
                    client.chat.completions.create(model="m", messages=said)
            status = web.get("/api/memory/engine-status").json()
            assert status["embedding"]["available"], str(status["embedding"])
            assert _pending(web) > WRITES // 2  # most of the backlog is still to embed
            web.close()
        finally:
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(120)
            took = time.monotonic() - started
        assert code == 0
        # the old drain waited up to 60 s for this backlog, then 30 s more for the indexer
        assert took < WRITES * DELAY_S * 0.75, took

    fake.embedding_delay_s = 0.0
    with again.open("wb") as sink:
        proc, url = _serve(data, sink, again, upstream_url)
        try:
            web = httpx.Client(base_url=url, headers=AUTH, timeout=60)
            listed = web.get("/api/memory", params={"apiKeyId": "notes", "limit": 200}).json()
            notes = [m for m in listed["data"] if m["key"].startswith("note:")]
            assert len(notes) == WRITES  # every acknowledged write
            deadline = time.monotonic() + 120
            while True:  # every fact, captured before the stop or after the restart
                listed = web.get("/api/memory", params={"apiKeyId": owner, "limit": 200}).json()
                text = " ".join(m["content"] for m in listed["data"])
                missing = [food for food in ALLERGIES if food not in text]
                if not missing and _pending(web) == 0:
                    break
                assert time.monotonic() < deadline, (missing, _pending(web))
                time.sleep(0.2)
            web.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(120) == 0
