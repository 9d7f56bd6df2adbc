"""Durable extraction jobs (``memoryd.engine.extraction_jobs``) on a real SQLite file."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.engine import MemoryEngine
from memoryd.models import utcnow
from memoryd.storage.base import NewJob
from tests.conftest import make_engine
from tests.embedders import no_source

HOUR = timedelta(hours=1)


def _open(data: Path) -> MemoryEngine:
    return build_engine(EngineConfig.from_env({}, data_dir=data), {"MEMORYD_DATA_DIR": str(data)})


def _queue_rows(engine: MemoryEngine, where: str = "") -> int:
    sql = "SELECT COUNT(*) FROM extraction_queue" + (f" WHERE {where}" if where else "")
    (n,) = engine.store.db.read().execute(sql).fetchone()
    return int(n)


def test_a_job_is_committed_before_its_future_resolves_and_removed_once_run(
    tmp_path: Path,
) -> None:
    engine = _open(tmp_path / "d")
    try:
        gate = threading.Event()
        engine.background.submit(gate.wait, 10)  # hold the worker: the job must wait
        durable = engine.submit_extraction("alice", user_text="I prefer tabs over spaces.")
        assert durable is not None
        durable.result(timeout=10)
        # committed, not yet run: a crash now would leave it for the next start
        assert _queue_rows(engine) == 1
        assert engine.list_memories(owner="alice").total == 0
        gate.set()
        assert engine.drain(timeout=10)
        assert _queue_rows(engine) == 0
        stored = engine.list_memories(owner="alice").data
        assert [m.content for m in stored] == ["User prefers tabs over spaces"]
    finally:
        engine.close()


def test_nothing_to_extract_queues_nothing(engine: MemoryEngine) -> None:
    assert engine.submit_extraction("alice", user_text="   ") is None
    assert engine.submit_extraction("alice", assistant_text="ok") is None  # not a source
    assert engine.submit_extraction("", user_text="I prefer tea.") is None  # no owner
    assert _queue_rows(engine) == 0


def test_more_jobs_than_one_recovery_takes_all_run_at_the_next_start(tmp_path: Path) -> None:
    """A stop within ``MEMORYD_SHUTDOWN_S`` can leave thousands queued: the start claims
    500 and the rest as its worker's queue drains (the rest used to wait for a new job)."""
    data = tmp_path / "d"
    first = _open(data)
    held = utcnow() + timedelta(hours=1)
    jobs = [
        NewJob(f"o{i}", "", [(f"I prefer flavour{i}.", "user")], utcnow(), "", "gone", held)
        for i in range(620)
    ]
    first.store.write(lambda tx: [tx.queue_extraction(j) for j in jobs])
    first.close()

    second = _open(data)
    try:
        assert second.recover_extractions() == 500
        assert second.drain(timeout=120)
        assert _queue_rows(second) == 0
        assert second.list_memories(owner="o619").data
    finally:
        second.close()


def test_jobs_left_by_a_killed_process_run_at_the_next_start(tmp_path: Path) -> None:
    data = tmp_path / "d"
    first = _open(data)
    held = utcnow() + timedelta(hours=1)  # as ``submit`` leaves it: leased by that process
    first.store.write(
        lambda tx: tx.queue_extraction(
            NewJob("bob", "s1", [("I prefer dark mode.", "user")], utcnow(), "", "gone", held)
        )
    )
    first.store.write(lambda tx: tx.queue_extraction(NewJob("bob", "", [], utcnow())))
    first.close()  # as if killed: the jobs were committed and never ran

    second = _open(data)
    try:
        assert second.recover_extractions() == 2
        assert second.drain(timeout=10)
        memories = second.list_memories(owner="bob").data
        assert [(m.content, m.session_id) for m in memories] == [("User prefers dark mode", "s1")]
        assert _queue_rows(second) == 0
        assert second.recover_extractions() == 0  # nothing runs twice
    finally:
        second.close()


def test_a_shared_store_runs_what_a_dead_server_left_never_a_live_ones(
    tmp_path: Path, pg_url: str
) -> None:
    """Two engines on one PostgreSQL database: B claims the job whose server died (its
    lease ran out), and leaves the one a live server holds."""
    env = {"MEMORYD_DATABASE_URL": pg_url}
    a = make_engine(tmp_path / "a", env, resolver=no_source)
    b = make_engine(tmp_path / "b", env, resolver=no_source)
    try:
        now = utcnow()
        live = NewJob("bob", "", [("I prefer dark mode.", "user")], now, "", "alive", now + HOUR)
        dead = NewJob("carol", "", [("I live in Oslo.", "user")], now, "", "dead", now - HOUR)
        live_id = a.store.write(lambda tx: tx.queue_extraction(live))
        a.store.write(lambda tx: tx.queue_extraction(dead))
        assert b.recover_extractions() == 1
        assert b.drain(timeout=30)
        assert [m.content for m in b.list_memories(owner="carol").data] == ["User lives in Oslo"]
        assert a.list_memories(owner="bob").total == 0
        assert [j.id for j in a.store.read().queued_extractions()] == [live_id]
        assert a.recover_extractions() == 0  # a live lease is never taken, not even by A
        # A job ``submit`` queues is held by its own server for the lease.
        durable = a.submit_extraction("dave", user_text="I prefer tea.")
        assert durable is not None
        durable.result(timeout=30)
        assert b.recover_extractions() == 0
    finally:
        a.close()
        b.close()


def test_a_lone_surrogate_does_not_fail_the_job(engine: MemoryEngine) -> None:
    durable = engine.submit_extraction("carol", user_text="I prefer tea\ud800 with milk.")
    assert durable is not None
    durable.result(timeout=10)
    assert engine.drain(timeout=10)
    assert engine.extraction_stats["failed"] == 0
    # the surrogate became "?", which ends the extracted clause
    assert [m.content for m in engine.list_memories(owner="carol").data] == ["User prefers tea"]


def test_a_worker_that_is_behind_leaves_new_jobs_in_the_table_not_in_memory(
    tmp_path: Path,
) -> None:
    engine = _open(tmp_path / "d")
    try:
        engine.extraction.max_pending = 2
        gate = threading.Event()
        engine.background.submit(gate.wait, 10)  # a worker busy with something long
        owners = [f"user{i}" for i in range(8)]
        for owner in owners:
            durable = engine.submit_extraction(owner, user_text="I prefer tabs over spaces.")
            assert durable is not None
            durable.result(timeout=10)
        # one job joined the busy worker's queue; the rest wait, durable, in the table,
        # behind a single claim
        assert engine.background.pending <= 3
        assert _queue_rows(engine) == 8
        assert _queue_rows(engine, "claimed_until IS NULL") == 7
        assert engine.status()["extraction"]["deferred"] == 7

        gate.set()
        assert engine.drain(timeout=30)
        assert _queue_rows(engine) == 0
        for owner in owners:
            stored = engine.list_memories(owner=owner).data
            assert [m.content for m in stored] == ["User prefers tabs over spaces"]
        assert engine.recover_extractions() == 0  # nothing left, nothing ran twice
    finally:
        engine.close()
