"""Crash safety: SIGKILL a real server at random moments while it writes.

After each kill the server restarts on the same data dir. At the end the database
must open cleanly, pass ``integrity_check``, its FTS and vector indexes must agree
with ``memories``, and every write acknowledged before a kill must be there.
Background work a kill cut short is done after restart: embeddings (memories stay
flagged ``needs_reindex``) and fact extraction from chats the gateway answered (the
job is committed to ``extraction_queue`` before the answer's last byte).
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import apsw
import httpx

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.testing import FakeUpstream, serve_asgi
from tests.server.test_server import ServerProcess

ADMIN = "crash-test-admin-token-000000"
KILLS = 10


def _writer(url: str, stop: threading.Event, acked: dict[str, str], prefix: str) -> None:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    i = 0
    with httpx.Client(timeout=5) as http:
        while not stop.is_set():
            i += 1
            key = f"{prefix}:{i}"
            content = f"crash test memory {prefix} number {i} about rivers"
            try:
                r = http.post(
                    f"{url}/api/memory",
                    headers=headers,
                    json={"apiKeyId": "crash", "key": key, "content": content},
                )
            except httpx.TransportError:
                return  # the server died under us: this write was never acknowledged
            if r.status_code == 201:
                acked[key] = content


def _chatter(url: str, secret: str, stop: threading.Event, facts: set[str], prefix: str) -> None:
    """Chats (every other one streamed) that each state a unique preference."""
    headers = {"Authorization": f"Bearer {secret}"}
    i = 0
    with httpx.Client(timeout=5) as http:
        while not stop.is_set():
            i += 1
            token = f"{prefix}n{i}"
            body = {
                "model": "fake",
                "stream": i % 2 == 0,
                "messages": [{"role": "user", "content": f"I prefer flavour{token}."}],
            }
            try:
                if body["stream"]:
                    with http.stream("POST", f"{url}/v1/chat/completions", json=body,
                                     headers=headers) as r:  # fmt: skip
                        ok = r.status_code == 200 and b"".join(r.iter_raw()).rstrip().endswith(
                            b"[DONE]"
                        )
                else:
                    r = http.post(f"{url}/v1/chat/completions", json=body, headers=headers)
                    ok = r.status_code == 200
            except httpx.TransportError:
                return  # killed mid-answer: not acknowledged
            if ok:
                facts.add(f"flavour{token}")


def test_sigkill_during_writes_loses_nothing_acknowledged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rng = random.Random(20261202)
    acked: dict[str, str] = {}
    facts: set[str] = set()
    with serve_asgi(FakeUpstream().app) as upstream:
        env = {"MEMORYD_ADMIN_TOKEN": ADMIN, "MEMORYD_UPSTREAM_BASE_URL": f"{upstream}/v1"}
        engine = build_engine(EngineConfig.from_env({}, data_dir=data), {})
        _, secret = engine.keys.create("chatter", key_id="chatter")
        engine.close()
        _kill_rounds(tmp_path, data, env, rng, acked, facts, secret)
        _check(tmp_path, data, env, acked, facts)


def _kill_rounds(
    tmp_path: Path,
    data: Path,
    env: dict[str, str],
    rng: random.Random,
    acked: dict[str, str],
    facts: set[str],
    secret: str,
) -> None:
    for round_ in range(KILLS):
        server = ServerProcess(data, tmp_path / f"crash-{round_}.log", env=env)
        url = server.wait_ready()
        stop = threading.Event()
        writers = [
            threading.Thread(target=_writer, args=(url, stop, acked, f"r{round_}w{w}"))
            for w in range(3)
        ] + [
            threading.Thread(target=_chatter, args=(url, secret, stop, facts, f"r{round_}c{c}"))
            for c in range(2)
        ]
        for w in writers:
            w.start()
        threading.Event().wait(rng.uniform(0.3, 1.2))
        server.kill()  # SIGKILL: no shutdown hooks, no drain
        stop.set()
        for w in writers:
            w.join(10)
    assert len(acked) > 50  # the writers really wrote between kills
    assert len(facts) > 5  # and the gateway answered chats between kills


def _check(
    tmp_path: Path, data: Path, env: dict[str, str], acked: dict[str, str], facts: set[str]
) -> None:
    # One more start: start-up repair, the reindex drain and the extraction jobs a kill
    # left run (background threads yield to requests, so while the chats ran they may
    # have left many), then a clean stop.
    final = ServerProcess(data, tmp_path / "final.log", env=env)
    url = final.wait_ready()
    status = httpx.get(
        f"{url}/api/memory/engine-status", headers={"Authorization": f"Bearer {ADMIN}"}
    ).json()
    assert status["keyword"]["available"] is True
    for _ in range(1200):  # wait for the reindex worker and the extraction jobs kills left
        state = httpx.get(
            f"{url}/api/memory/engine-status", headers={"Authorization": f"Bearer {ADMIN}"}
        ).json()
        if state["reindex"]["pending"] == 0 and state["extraction"]["pending"] == 0:
            break
        threading.Event().wait(0.1)
    assert final.stop() == 0
    final.kill()  # already stopped: just closes its log

    conn = apsw.Connection(str(data / "memoryd.db"))
    try:
        assert list(conn.execute("PRAGMA integrity_check")) == [("ok",)]
        conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
        stored: dict[str, Any] = dict(
            conn.execute("SELECT key, content FROM memories WHERE api_key_id = 'crash'").fetchall()
        )
        missing = [k for k in acked if k not in stored]
        assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
        assert all(stored[k] == c for k, c in acked.items())
        preferences = {
            key.split(":", 1)[1]
            for (key,) in conn.execute(
                "SELECT key FROM memories WHERE api_key_id = 'chatter' AND key LIKE 'preference:%'"
            )
        }
        lost_facts = facts - preferences
        assert not lost_facts, f"{len(lost_facts)} answered chats lost their facts"
        assert conn.execute("SELECT COUNT(*) FROM extraction_queue").fetchone() == (0,)
        (dupes,) = conn.execute(
            "SELECT COUNT(*) - COUNT(DISTINCT api_key_id || key) FROM memories"
        ).fetchone()
        assert dupes == 0
        (fts_docs,) = conn.execute("SELECT COUNT(*) FROM memory_fts_docsize").fetchone()
        (rows,) = conn.execute("SELECT COUNT(*) FROM memories").fetchone()
        assert fts_docs == rows
        (orphans,) = conn.execute(
            "SELECT COUNT(*) FROM vec_memories WHERE seq NOT IN (SELECT seq FROM memories)"
        ).fetchone()
        assert orphans == 0
        (unindexed,) = conn.execute(
            "SELECT COUNT(*) FROM memories WHERE needs_reindex = 0 "
            "AND seq NOT IN (SELECT seq FROM vec_memories)"
        ).fetchone()
        assert unindexed == 0
        # every memory is searchable by keyword
        (found,) = conn.execute(
            "SELECT COUNT(*) FROM memory_fts WHERE memory_fts MATCH 'rivers OR prefers'"
        ).fetchone()
        assert found == rows
    finally:
        conn.close()
