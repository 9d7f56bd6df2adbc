"""Tests for the storage layer: migrations, the single writer, FTS5 triggers
(docs/design/storage.md#keyword-index)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from datetime import timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from memoryd.engine import MemoryEngine
from memoryd.models import MemoryPatch, NewMemory, to_iso, utcnow
from memoryd.storage.sql import memories as sql
from memoryd.storage.sqlite.database import Database
from memoryd.storage.sqlite.migrations import apply_migrations
from tests.conftest import RecordingConnection, add, sqlite_at_version


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "store.db", load_vec=False)
    try:
        yield database
    finally:
        database.close()


def _rows(conn: Any, query: str, params: Any = ()) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(query, params)]


def _insert_raw(conn: Any, memory_id: str, owner: str, content: str, key: str) -> None:
    stamp = to_iso(utcnow())
    conn.execute(
        "INSERT INTO memories (id, api_key_id, type, key, content, created_at, updated_at) "
        "VALUES (?, ?, 'factual', ?, ?, ?, ?)",
        (memory_id, owner, key, content, stamp, stamp),
    )


def _fts_ids(db: Database, match: str) -> list[str]:
    return [
        r[0]
        for r in db.read().execute(
            "SELECT m.id FROM memory_fts JOIN memories m ON m.seq = memory_fts.rowid "
            "WHERE memory_fts MATCH ? ORDER BY m.seq",
            (match,),
        )
    ]


# --- migrations --------------------------------------------------------------------


def test_fresh_db_records_every_migration_with_its_name(db: Database) -> None:
    rows = _rows(db.read(), "SELECT version, name FROM schema_migrations ORDER BY version")
    assert rows == [
        (1, "initial"),
        (2, "memory_fts"),
        (3, "vec_memories"),
        (4, "extraction_queue"),
        (5, "supersede"),
        (6, "end_users"),
        (7, "queue_lease"),
        (8, "subjects"),
        (9, "context"),
        (10, "context_fts"),
        (11, "fts_scope"),
        (12, "flagged_by_owner"),
        (13, "keyword_changes"),
        (14, "fts_vocab"),
        (15, "session_changes"),
        (16, "profile"),
        (17, "erasures"),
        (18, "quarantine"),
    ]
    assert db.capabilities.deferred_migrations == ()


def test_reopening_applies_nothing_new(tmp_path: Path) -> None:
    path = tmp_path / "reopen.db"
    with Database(path, load_vec=False) as first:
        before = _rows(first.read(), "SELECT * FROM schema_migrations ORDER BY version")
    with Database(path, load_vec=False) as second:
        after = _rows(second.read(), "SELECT * FROM schema_migrations ORDER BY version")
    assert len(before) == 18
    assert after == before  # same rows, same applied_at: nothing re-applied


def test_schema_tables_exist(db: Database) -> None:
    conn = db.read()
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"memories", "memory_fts", "memory_vec_meta", "api_keys", "settings"} <= names
    meta = _rows(conn, "SELECT id, active_dim, vec_ready FROM memory_vec_meta")
    assert meta == [(1, None, 0)]


def test_spec_indexes_exist(db: Database) -> None:
    conn = db.read()
    indexes = {r[1]: (bool(r[2]), bool(r[4])) for r in conn.execute("PRAGMA index_list(memories)")}
    columns = {
        name: tuple(r[2] for r in conn.execute(f"PRAGMA index_info({name})")) for name in indexes
    }
    by_columns = {columns[name]: indexes[name] for name in indexes}
    # UNIQUE per end user of a key: two end users may both store "home_location:x"
    assert by_columns[("api_key_id", "user_id", "key")] == (True, False)
    assert ("api_key_id", "session_id") in by_columns
    assert ("api_key_id", "created_at") in by_columns
    assert ("expires_at",) in by_columns
    assert by_columns[("needs_reindex",)] == (False, True)  # partial
    (partial_sql,) = next(
        conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories' "
            "AND sql LIKE '%(needs_reindex)%'"
        )
    )
    assert "WHERE needs_reindex = 1" in partial_sql


def test_capabilities_and_pragmas(db: Database) -> None:
    assert db.capabilities.fts5 is True
    assert db.capabilities.fts5_reason
    assert db.capabilities.sqlite_version.count(".") == 2
    assert _rows(db.read(), "PRAGMA journal_mode") == [("wal",)]
    ((timeout,),) = db.write(lambda conn: _rows(conn, "PRAGMA busy_timeout"))
    assert timeout > 0


def test_fts_migration_is_deferred_then_applied_with_rebuild(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "deferred.db"))
    try:
        assert apply_migrations(conn, fts5=False) == [
            "0002_memory_fts",
            "0010_context_fts",
            "0011_fts_scope",
            "0014_fts_vocab",
        ]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "memories" in tables
        assert "memory_fts" not in tables
        assert _rows(conn, "SELECT version FROM schema_migrations") == [
            (1,),
            (3,),
            (4,),
            (5,),
            (6,),
            (7,),
            (8,),
            (9,),
            (12,),
            (13,),
            (15,),
            (16,),
            (17,),
            (18,),
        ]

        _insert_raw(conn, "pre-fts", "key-a", "legacy row about kubernetes", "legacy:k8s")

        assert apply_migrations(conn, fts5=True) == []
        assert _rows(conn, "SELECT version FROM schema_migrations ORDER BY 1") == [
            (1,),
            (2,),
            (3,),
            (4,),
            (5,),
            (6,),
            (7,),
            (8,),
            (9,),
            (10,),
            (11,),
            (12,),
            (13,),
            (14,),
            (15,),
            (16,),
            (17,),
            (18,),
        ]
        found = _rows(
            conn,
            "SELECT m.id FROM memory_fts JOIN memories m ON m.seq = memory_fts.rowid "
            "WHERE memory_fts MATCH ?",
            ("kubernetes",),
        )
        assert found == [("pre-fts",)]
    finally:
        conn.close()


# --- connections and the writer ----------------------------------------------------


def test_read_connections_are_query_only(db: Database) -> None:
    with pytest.raises(apsw.ReadOnlyError):
        _insert_raw(db.read(), "ro", "key-a", "should not be written", "ro:1")
    assert _rows(db.read(), "SELECT COUNT(*) FROM memories") == [(0,)]


def test_group_commit_rolls_back_only_the_failing_task(db: Database) -> None:
    gate = threading.Event()
    started = threading.Event()

    def hold(_conn: Any) -> None:
        started.set()
        assert gate.wait(5)

    def good(memory_id: str) -> Any:
        return lambda conn: _insert_raw(conn, memory_id, "key-a", f"row {memory_id}", memory_id)

    def bad(conn: Any) -> None:
        _insert_raw(conn, "bad", "key-a", "half-written", "bad")
        raise RuntimeError("task failed")

    blocker = db.submit(hold)
    assert started.wait(5)  # the writer is busy: the next tasks queue into one batch
    futures: list[Future[Any]] = [db.submit(good("ok-1")), db.submit(bad), db.submit(good("ok-2"))]
    gate.set()
    blocker.result(5)
    assert futures[0].result(5) is None
    assert futures[2].result(5) is None
    with pytest.raises(RuntimeError, match="task failed"):
        futures[1].result(5)
    assert _rows(db.read(), "SELECT id FROM memories ORDER BY id") == [("ok-1",), ("ok-2",)]


def test_second_database_sees_committed_writes(db: Database, tmp_path: Path) -> None:
    with Database(tmp_path / "store.db", load_vec=False) as other:
        db.write(lambda conn: _insert_raw(conn, "from-first", "key-a", "hello", "k:1"))
        assert _rows(other.read(), "SELECT id FROM memories") == [("from-first",)]
        other.write(lambda conn: _insert_raw(conn, "from-second", "key-a", "hi", "k:2"))
        assert _rows(db.read(), "SELECT id FROM memories ORDER BY seq") == [
            ("from-first",),
            ("from-second",),
        ]


# --- FTS triggers (reference bugs B1 and B3) ------------------------------------------


def test_new_memory_is_searchable_and_triggers_follow_updates(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "I deploy with kubernetes", key="tooling:deploy")
    assert _fts_ids(engine.store.db, "kubernetes") == [memory.id]
    assert _fts_ids(engine.store.db, "deploy") == [memory.id]  # key column is indexed too

    assert engine.update(memory.id, MemoryPatch(content="I deploy with nomad")) is not None
    assert _fts_ids(engine.store.db, "kubernetes") == []
    assert _fts_ids(engine.store.db, "nomad") == [memory.id]

    assert engine.delete(memory.id)
    assert _fts_ids(engine.store.db, "nomad") == []
    assert _rows(engine.store.db.read(), "SELECT COUNT(*) FROM memory_fts_docsize") == [(0,)]


def _fts_size(db: Database) -> tuple[Any, ...]:
    conn = db.read()
    data = _rows(conn, "SELECT COUNT(*), SUM(length(block)) FROM memory_fts_data")[0]
    docs = _rows(conn, "SELECT COUNT(*) FROM memory_fts_docsize")[0]
    return (*data, *docs)


def test_access_bumps_do_not_grow_the_fts_index(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "The staging cluster runs on espresso servers")
    before = _fts_size(engine.store.db)
    for _ in range(100):
        hits = engine.retrieve("key-a", "espresso", strategy="exact")
        assert [h.memory.id for h in hits] == [memory.id]
    assert engine.drain()
    assert _fts_size(engine.store.db) == before
    bumped = engine.get(memory.id)
    assert bumped is not None
    assert bumped.access_count == 100
    assert bumped.last_accessed_at is not None
    assert _fts_ids(engine.store.db, "espresso") == [memory.id]


def test_bump_access_sql_leaves_fts_untouched(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "a note about rust lifetimes")
    before = _fts_size(engine.store.db)
    later = utcnow() + timedelta(seconds=1)
    for _ in range(20):
        assert engine.store.db.write(lambda conn: sql.bump_access(conn, [memory.id], later)) == 1
    assert _fts_size(engine.store.db) == before
    assert _rows(engine.store.db.read(), "SELECT access_count FROM memories") == [(20,)]


# --- write concurrency (acceptance point) -------------------------------------------


def test_concurrent_creates_all_land_without_lock_errors(engine: MemoryEngine) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def writer(t: int) -> None:
        try:
            start.wait(5)
            for i in range(200):
                engine.create(
                    NewMemory(api_key_id="key-a", content=f"fact {t}-{i}", key=f"k:{t}:{i}")
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert engine.list_memories(owner="key-a").total == 1600
    assert _rows(engine.store.db.read(), "SELECT COUNT(DISTINCT key) FROM memories") == [(1600,)]


def test_a_database_of_the_previous_release_upgrades_with_its_memories(tmp_path: Path) -> None:
    """Migrations 1-4 (the release before supersession) with memories in them: opening
    with this release adds the slot and history columns, fills the slot from metadata,
    and every old memory stays current and retrievable."""
    path = tmp_path / "old.db"
    conn = sqlite_at_version(path, 4)
    now = to_iso(utcnow())
    for i, meta in enumerate(['{"slot": "home_location"}', "{}", "not json"]):
        conn.execute(
            "INSERT INTO memories (id, api_key_id, type, key, content, metadata, created_at, "
            "updated_at) VALUES (?, 'k', 'factual', ?, ?, ?, ?, ?)",
            (f"m{i}", f"key{i}", f"User lives in place {i}", meta, now, now),
        )
    conn.close()

    with Database(path, load_vec=False) as db:
        versions = [v for (v,) in _rows(db.read(), "SELECT version FROM schema_migrations")]
        assert versions == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
        slots = dict(_rows(db.read(), "SELECT id, slot FROM memories ORDER BY id"))
        assert slots == {"m0": "home_location", "m1": None, "m2": None}
        users = {u for (u,) in _rows(db.read(), "SELECT user_id FROM memories")}
        assert users == {""}  # key-level: shared by every end user of the key
        old = sql.get(db.read(), "m0")
        assert old is not None
        assert old.superseded_at is None
        assert old.slot == "home_location"
        flt = sql.Filter(owners=("k",), now=utcnow())
        assert len(sql.recent(db.read(), flt, 10)) == 3


def test_a_search_finds_its_owners_unembedded_memories_through_their_own_index(
    engine: MemoryEngine,
) -> None:
    """The backfill before every semantic search: a partial index of flagged rows per
    owner, not a walk over the owner's rows (migration 0012)."""
    for i in range(30):
        add(engine, f"owner{i % 3}", f"row {i}")
    conn = engine.store.db.read()
    statement = (
        "SELECT m.id FROM memories m WHERE m.needs_reindex = 1 AND m.api_key_id = ? "
        "ORDER BY m.created_at DESC LIMIT ?"
    )
    plan = " ".join(str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {statement}", ["a", 5]))
    assert "idx_memories_flagged_owner" in plan
    newest = engine.store.read().newest_flagged_of("owner1", 3)
    assert [row.content for row in newest] == ["row 28", "row 25", "row 22"]


def test_threads_that_end_leave_no_open_connection_behind(engine: MemoryEngine) -> None:
    """The server's worker threads come and go; each opens its own read connection.
    Holding every one of them for the process's life grew memory and open files with
    every thread that ever ran (seen as RSS growth in the steady load run)."""
    import gc
    import os

    add(engine, "o", "a row to read")

    def open_files() -> int:
        gc.collect()
        return len(os.listdir("/proc/self/fd"))

    def reader() -> None:
        engine.list_memories(owner="o", limit=5)

    reader()  # this thread's own connection, opened once
    before = open_files()
    for _ in range(40):
        thread = threading.Thread(target=reader)
        thread.start()
        thread.join()
    assert open_files() - before < 10


def test_counting_expired_memories_walks_the_expiry_index_not_the_owner(
    engine: MemoryEngine,
) -> None:
    """Previews count what expiry hides; through the owner index that count walked
    every memory of a large owner (20 ms at 100k)."""
    for i in range(40):
        add(engine, "big", f"row {i}")
    add(engine, "big", "gone soon", expires_at=utcnow() + timedelta(milliseconds=1))
    time.sleep(0.01)
    conn = RecordingConnection(engine.store.db.read())
    counts = sql.hidden_counts(conn, sql.Filter(owners=("big",), now=utcnow()))
    assert counts == {"expired": 1, "retention": 0}
    assert "idx_memories_expires" in " ".join(conn.plan(0))


def test_the_resident_copies_check_their_candidates_by_rowid(engine: MemoryEngine) -> None:
    """The filter check of ``vectors.resident``: one rowid lookup per candidate, not a
    walk of the owner index (1 ms for 160 candidates at 10k)."""
    from memoryd.storage.sqlite import vectors as vec_sql

    for i in range(300):
        add(engine, "big", f"row {i}")
    conn = RecordingConnection(engine.store.db.read())
    seqs = list(range(1, 161))
    found = vec_sql.passing(conn, seqs, sql.Filter(owners=("big",), now=utcnow()))
    assert sorted(found) == seqs
    plan = " ".join(conn.plan(0))
    assert "INTEGER PRIMARY KEY" in plan
    assert "idx_memories_owner" not in plan
