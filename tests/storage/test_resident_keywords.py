"""Large owners' keyword postings in memory (``storage.sqlite.keywords``): the same
ranking and scores as FTS5's own search, fresh after every kind of write from any
connection, filtered by SQL, bounded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memoryd.config import EngineConfig
from memoryd.config.settings import SettingsService
from memoryd.engine import MemoryEngine
from memoryd.models import MemoryPatch, NewMemory, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sqlite import keywords as kw
from memoryd.storage.sqlite import postings
from memoryd.storage.sqlite.database import Database
from memoryd.storage.sqlite.keywords import ResidentKeywords
from memoryd.storage.sqlite.store import SqliteStore
from tests.conftest import raw_write

TEXT = """anna lisbon coffee hiking painted sunrise lake dogs dog running ran marathon
    charity race raise awareness sister brother guitar concert pottery museum
    recipe pasta garden tomatoes adoption agency counseling career naïve café"""
WORDS = TEXT.split()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    config = EngineConfig.from_env({}, data_dir=tmp_path / "data")
    config.data_dir.mkdir(parents=True)
    store = SqliteStore(Database(config.db_path, load_vec=False))
    eng = MemoryEngine(store, config, SettingsService(store))
    try:
        yield eng
    finally:
        eng.close()


def resident_store(engine: MemoryEngine, **options: int) -> SqliteStore:
    db = engine.store.db  # type: ignore[attr-defined]
    keywords = ResidentKeywords(**({"min_rows": 10, "budget_bytes": 2**24} | options))
    return SqliteStore(db, keywords=keywords)


def sql_store(engine: MemoryEngine) -> SqliteStore:
    return SqliteStore(engine.store.db)  # type: ignore[attr-defined]


def sentence(rng: np.random.Generator, n: int = 8) -> str:
    return " ".join(str(w) for w in rng.choice(WORDS, size=n)).capitalize() + "."


def fill(
    engine: MemoryEngine, owner: str, n: int, seed: int = 0, user: str = "", sessions: int = 4
) -> list[str]:
    rng = np.random.default_rng(seed)
    created = engine.create_many(
        NewMemory(
            owner,
            f"{sentence(rng, int(rng.integers(3, 12)))} ({owner} {i})",
            user_id=user,
            session_id=f"s{i % sessions}",
        )
        for i in range(n)
    )
    return [m.id for m, _ in created]


def owner_filter(owner: str, **more: object) -> Filter:
    return Filter(owners=(owner,), now=utcnow(), **more)  # type: ignore[arg-type]


def queries(seed: int, n: int = 30) -> list[str]:
    rng = np.random.default_rng(500 + seed)
    return [
        " ".join(str(w) for w in rng.choice([*WORDS, "absent", "the"], size=int(k)))
        for k in rng.integers(1, 6, size=n)
    ]


def search(store: SqliteStore, query: str, flt: Filter, limit: int = 10, weight: float = 0.2):  # type: ignore[no-untyped-def]
    hits = store.read().keyword_search(query, flt, limit, weight)
    return [(h.memory.id, h.relevance) for h in hits]


def same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [mid for mid, _ in got] == [mid for mid, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], rtol=1e-9, atol=0)


def assert_same_everywhere(
    resident: SqliteStore, sql: SqliteStore, owner: str, seed: int = 0, **more: object
) -> None:
    flt = owner_filter(owner, **more)
    for weight in (0.0, 0.2):
        for query in queries(seed):
            same(search(resident, query, flt, 10, weight), search(sql, query, flt, 10, weight))


def stats(store: SqliteStore) -> dict[str, int]:
    assert store.keywords is not None
    return store.keywords.stats()


def test_same_ranking_and_scores_as_fts5(engine: MemoryEngine) -> None:
    resident, sql = resident_store(engine), sql_store(engine)
    fill(engine, "big", 300)
    fill(engine, "other", 200, seed=1)
    assert_same_everywhere(resident, sql, "big")
    found = stats(resident)
    assert found["searches"] >= 50  # the copy answered, not the SQL fallback
    assert found["owners"] == 1
    assert found["memories"] == 300


def test_small_and_several_owners_stay_in_sql(engine: MemoryEngine) -> None:
    resident, sql = resident_store(engine, min_rows=50), sql_store(engine)
    fill(engine, "small", 20)
    fill(engine, "big", 60, seed=1)
    assert search(resident, "coffee dogs", owner_filter("small")) == search(
        sql, "coffee dogs", owner_filter("small")
    )
    both = Filter(owners=("small", "big"), now=utcnow())
    assert search(resident, "coffee dogs", both) == search(sql, "coffee dogs", both)
    assert stats(resident)["searches"] == 0


def test_new_changed_and_deleted_memories_are_seen(engine: MemoryEngine) -> None:
    resident, sql = resident_store(engine), sql_store(engine)
    ids = fill(engine, "big", 120)
    flt = owner_filter("big")
    assert search(resident, "zeppelin", flt) == []
    (added, _), *_ = engine.create_many([NewMemory("big", "A zeppelin over Lisbon")])
    assert [mid for mid, _ in search(resident, "zeppelin", flt)] == [added.id]
    engine.update(
        ids[0], MemoryPatch(content="Zeppelin rides twice, a zeppelin museum"), owner="big"
    )
    same(search(resident, "zeppelin museum", flt), search(sql, "zeppelin museum", flt))
    got = search(resident, "zeppelin", flt)
    assert ids[0] in {mid for mid, _ in got}
    same(got, search(sql, "zeppelin", flt))
    engine.delete(ids[0], owner="big")
    assert ids[0] not in {mid for mid, _ in search(resident, "zeppelin museum", flt)}
    assert_same_everywhere(resident, sql, "big", seed=3)
    assert stats(resident)["builds"] == 1  # caught up from the log, never rebuilt


def test_a_write_by_another_connection_is_seen(engine: MemoryEngine, tmp_path: Path) -> None:
    resident, sql = resident_store(engine), sql_store(engine)
    fill(engine, "big", 100)
    flt = owner_filter("big")
    assert search(resident, "zeppelin", flt) == []
    raw = Database(engine.config.db_path, load_vec=False)
    try:
        raw.write(
            lambda conn: conn.execute(
                "UPDATE memories SET content = 'zeppelin hangar' WHERE seq = "
                "(SELECT min(seq) FROM memories WHERE api_key_id = 'big')"
            )
        )
    finally:
        raw.close()
    got = search(resident, "zeppelin", flt)
    assert len(got) == 1
    same(got, search(sql, "zeppelin", flt))


def test_an_owner_change_moves_the_memory_between_copies(engine: MemoryEngine) -> None:
    resident, sql = resident_store(engine), sql_store(engine)
    a = fill(engine, "a", 50)
    fill(engine, "b", 50, seed=1)
    raw_write(engine, "UPDATE memories SET content = 'zeppelin' WHERE id = ?", (a[0],))
    assert [m for m, _ in search(resident, "zeppelin", owner_filter("a"))] == [a[0]]
    assert search(resident, "zeppelin", owner_filter("b")) == []
    raw_write(engine, "UPDATE memories SET api_key_id = 'b' WHERE id = ?", (a[0],))
    assert search(resident, "zeppelin", owner_filter("a")) == []
    assert [m for m, _ in search(resident, "zeppelin", owner_filter("b"))] == [a[0]]
    assert_same_everywhere(resident, sql, "a", seed=4)
    assert_same_everywhere(resident, sql, "b", seed=5)


def test_the_filter_decides_and_a_selective_one_falls_back(engine: MemoryEngine) -> None:
    resident, sql = resident_store(engine), sql_store(engine)
    fill(engine, "big", 200, user="alice")
    bob = fill(engine, "big", 30, seed=2, user="bob")
    flt = owner_filter("big", user_id="bob")
    for query in queries(6):
        got = search(resident, query, flt, 10)
        assert {mid for mid, _ in got} <= set(bob)  # never another end user's
        same(got, search(sql, query, flt, 10))
    assert stats(resident)["fallbacks"] >= 1  # bob's few among alice's many: SQL answered


def test_superseded_memories_are_filtered_out(engine: MemoryEngine) -> None:
    resident = resident_store(engine)
    ids = fill(engine, "big", 40)
    raw_write(engine, "UPDATE memories SET content = 'zeppelin' WHERE id = ?", (ids[0],))
    stamp = "2020-01-01T00:00:00.000Z"
    raw_write(engine, "UPDATE memories SET superseded_at = ? WHERE id = ?", (stamp, ids[0]))
    assert search(resident, "zeppelin", owner_filter("big")) == []


def test_a_copy_behind_a_pruned_log_or_with_a_large_overlay_is_rebuilt(
    engine: MemoryEngine,
) -> None:
    resident, sql = resident_store(engine), sql_store(engine)
    ids = fill(engine, "big", 80)
    flt = owner_filter("big")
    search(resident, "coffee", flt)
    for i, mid in enumerate(ids[: postings.MIN_OVERLAY + 1]):
        raw_write(engine, "UPDATE memories SET content = ? WHERE id = ?", (f"zeppelin {i}", mid))
    same(search(resident, "zeppelin coffee", flt), search(sql, "zeppelin coffee", flt))
    assert resident.keywords is not None
    assert resident.keywords.wait_for_builds(60)
    # the overlay outgrew the copy: the search used it, a background build replaced it
    assert stats(resident)["builds"] == 2
    assert stats(resident)["backgroundBuilds"] == 1
    same(search(resident, "zeppelin coffee", flt), search(sql, "zeppelin coffee", flt))
    fill(engine, "big", 5, seed=9)
    raw_write(engine, "DELETE FROM kw_changes WHERE id < (SELECT max(id) FROM kw_changes)")
    same(search(resident, "zeppelin coffee", flt), search(sql, "zeppelin coffee", flt))
    assert stats(resident)["builds"] == 3  # the log no longer reached back: rebuilt here
    assert_same_everywhere(resident, sql, "big", seed=7)


def test_a_bulk_write_rebuilds_rather_than_catching_up(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kw, "CATCH_UP_MAX", 30)  # a new memory also changes neighbours' context
    resident, sql = resident_store(engine), sql_store(engine)
    fill(engine, "big", 60)
    flt = owner_filter("big")
    search(resident, "coffee", flt)
    fill(engine, "big", 10, seed=5)  # ten: caught up
    same(search(resident, "coffee dogs", flt), search(sql, "coffee dogs", flt))
    assert stats(resident)["builds"] == 1
    fill(engine, "big", 40, seed=6)  # more: rebuilt, on this thread (a small owner)
    same(search(resident, "coffee dogs", flt), search(sql, "coffee dogs", flt))
    assert stats(resident)["builds"] == 2
    assert stats(resident)["memories"] == 110


def test_the_budget_and_the_size_cap_bound_the_copies(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    resident = resident_store(engine, budget_bytes=1)
    fill(engine, "big", 60)
    assert search(resident, "coffee", owner_filter("big"))  # SQL answers
    assert stats(resident)["owners"] == 0
    roomy = resident_store(engine)
    assert search(roomy, "coffee", owner_filter("big"))
    assert stats(roomy)["owners"] == 1
    monkeypatch.setattr(kw, "MAX_ROWS", 50)  # the owner outgrew the cap: its copy goes
    assert search(roomy, "coffee", owner_filter("big"))
    assert stats(roomy)["owners"] == 0


def test_the_log_prunes_itself(engine: MemoryEngine) -> None:
    raw_write(engine, "INSERT INTO kw_changes (id, seq) VALUES (250000, 1)")
    raw_write(engine, "INSERT INTO kw_changes (id, seq) VALUES (300000, 1)")
    rows = engine.store.db.read().execute("SELECT id FROM kw_changes").fetchall()  # type: ignore[attr-defined]
    assert [r[0] for r in rows] == [250000, 300000]
    raw_write(engine, "INSERT INTO kw_changes (id, seq) VALUES (351000, 1)")
    rows = engine.store.db.read().execute("SELECT id FROM kw_changes").fetchall()  # type: ignore[attr-defined]
    assert [r[0] for r in rows] == [300000, 351000]


def test_the_engine_status_shows_the_copies(tmp_path: Path) -> None:
    from tests import embedders
    from tests.conftest import make_engine

    eng = make_engine(tmp_path, {"MEMORY_RESIDENT_MIN_ROWS": "5"}, resolver=embedders.no_source)
    try:
        fill(eng, "k", 12)
        assert eng.preview("k", "coffee dogs", strategy="hybrid").hits
        shown = eng.status()["keyword"]["resident"]
        assert (shown["owners"], shown["memories"], shown["minRows"]) == (1, 12, 5)
        assert shown["searches"] >= 1
    finally:
        eng.close()


def test_document_counts_from_the_vocabulary_equal_fts5s_own(engine: MemoryEngine) -> None:
    """The one-entry count (``memory_fts_rows``) is what FTS5 counts for its IDF; words
    that could be a scope token ("cafe", "u1") are counted by MATCH instead."""
    fill(engine, "big", 80)
    fill(engine, "cafe", 20, seed=1, user="add")  # scope tokens "63616665", "u616464"
    conn = engine.store.db.read()  # type: ignore[attr-defined]
    dialect = sql_store(engine)._dialect
    fields = "{content key context}"
    for word in [*WORDS, "absent", "cafe", "63616665", "u616464", "u", "dogs"]:
        match = f'{fields} : "{word}"'
        want = conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", [match])
        assert dialect._doc_count(conn, word, fields, 0, exact=True) == want.fetchone()[0], word
    assert dialect._vocab_count(conn, "dogs", fields) is not None  # the cheap path was taken
    assert dialect._vocab_count(conn, "63616665", fields) is None
    assert dialect._vocab_count(conn, "dogs", "{content key}") is None


def test_a_large_owner_gets_its_copy_from_the_background(engine: MemoryEngine) -> None:
    resident, sql = resident_store(engine, sync_max_rows=100), sql_store(engine)
    ids = fill(engine, "big", 240)
    fill(engine, "small", 60, seed=3)
    flt = owner_filter("big")
    same(search(resident, "coffee dogs", flt), search(sql, "coffee dogs", flt))
    assert stats(resident)["searches"] == 0  # SQL answered while the copy was built
    assert resident.keywords is not None
    assert resident.keywords.wait_for_builds(60)
    assert stats(resident)["backgroundBuilds"] == 1
    assert stats(resident)["building"] == 0
    # a write after the build's snapshot is applied by the next search, as usual
    raw_write(engine, "UPDATE memories SET content = 'zeppelin coffee' WHERE id = ?", (ids[5],))
    engine.delete(ids[6], owner="big")
    assert_same_everywhere(resident, sql, "big", seed=4)
    assert stats(resident)["searches"] >= 50
    assert stats(resident)["owners"] == 1
    # the small owner is built by its own search, on the caller's thread
    same(
        search(resident, "coffee", owner_filter("small")),
        search(sql, "coffee", owner_filter("small")),
    )
    assert stats(resident)["builds"] == 2
    assert stats(resident)["backgroundBuilds"] == 1


def test_a_failed_background_build_leaves_the_owner_in_sql(
    engine: MemoryEngine, caplog: pytest.LogCaptureFixture
) -> None:
    resident, sql = resident_store(engine, sync_max_rows=10), sql_store(engine)
    fill(engine, "big", 40)
    keywords = resident.keywords
    assert keywords is not None

    def broken() -> Iterator[object]:
        raise RuntimeError("file closed")
        yield  # pragma: no cover

    import contextlib

    keywords.reader = contextlib.contextmanager(broken)
    flt = owner_filter("big")
    same(search(resident, "coffee", flt), search(sql, "coffee", flt))
    assert keywords.wait_for_builds(60)
    assert "not built" in caplog.text
    same(search(resident, "coffee", flt), search(sql, "coffee", flt))  # tries again
    assert keywords.wait_for_builds(60)
    assert stats(resident)["owners"] == 0
    assert stats(resident)["searches"] == 0


def test_without_a_reader_a_large_owner_stays_in_sql(engine: MemoryEngine) -> None:
    keywords = ResidentKeywords(min_rows=10, budget_bytes=2**24, sync_max_rows=10)
    assert keywords.reader is None  # not attached to a store
    fill(engine, "big", 40)
    with engine.store.db.snapshot() as conn:  # type: ignore[attr-defined]
        found = keywords.search(conn, ["coffee"], owner_filter("big"), 10, 0.2, lambda _w: 1)
    assert found is None
    assert keywords.wait_for_builds(1)
    assert keywords.stats()["owners"] == 0


def test_neighbours_are_remembered_until_the_log_moves(engine: MemoryEngine) -> None:
    """The dialect keeps neighbour lookups per ``kw_changes`` id; every change that
    decides who was written next to whom moves it, a session change too (0015)."""
    from memoryd.storage.sql import memories

    store = resident_store(engine)
    ids = fill(engine, "big", 40, sessions=3)
    ids += fill(engine, "other", 10, seed=2, sessions=3)

    def check() -> None:
        conn = engine.store.db.read()  # type: ignore[attr-defined]
        want = memories.neighbours(conn, [*ids, "missing"])
        assert store.read().neighbours([*ids, "missing"]) == want
        assert store.read().neighbours(ids[3:9]) == {i: want[i] for i in ids[3:9] if i in want}

    check()
    before = last_id(engine)
    # moved to another session behind the service's back: no other column changes
    raw_write(engine, "UPDATE memories SET session_id = 's9' WHERE id = ?", (ids[4],))
    assert last_id(engine) > before  # logged (migration 0015)
    check()
    engine.delete(ids[7], owner="big")
    check()
    raw_write(engine, "UPDATE memories SET api_key_id = 'other' WHERE id = ?", (ids[10],))
    check()
    fill(engine, "big", 5, seed=8, sessions=3)
    check()
    before = last_id(engine)
    raw_write(engine, "UPDATE memories SET access_count = 7 WHERE id = ?", (ids[11],))
    assert last_id(engine) == before  # a bump is not logged, and needs not be
    check()


def last_id(engine: MemoryEngine) -> int:
    return int(kw.last_change(engine.store.db.read()))  # type: ignore[attr-defined]
