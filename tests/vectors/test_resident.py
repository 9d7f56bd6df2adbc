"""Large owners searched in memory (``vectors.resident``): the same answers as the SQL
search, fresh after every kind of write from any connection, filtered by SQL, bounded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memoryd.config import EngineConfig
from memoryd.config.settings import SettingsService
from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sqlite import vectors as vec_sql
from memoryd.storage.sqlite.database import Database
from memoryd.storage.sqlite.store import SqliteStore
from memoryd.vectors.base import VectorItem
from memoryd.vectors.resident import ResidentVectors
from memoryd.vectors.sqlite_vec import SqliteVecStore
from tests.conftest import raw_write

DIM = 8
SIG = "test:dim8:8"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    """A real file without the indexer: the test writes every vector itself."""
    config = EngineConfig.from_env({}, data_dir=tmp_path / "data")
    config.data_dir.mkdir(parents=True)
    store = SqliteStore(Database(config.db_path))
    eng = MemoryEngine(store, config, SettingsService(store))
    try:
        yield eng
    finally:
        eng.close()


def vec_store(engine: MemoryEngine, **resident: int) -> SqliteVecStore:
    options = {"min_rows": 10, "budget_bytes": 2**20} | resident
    store = SqliteVecStore(engine.store.db, resident=ResidentVectors(**options))
    assert store.ensure_ready(SIG, DIM).ready
    return store


def plain(engine: MemoryEngine) -> SqliteVecStore:
    store = SqliteVecStore(engine.store.db)  # no resident copies: SQL only
    assert store.ensure_ready(SIG, DIM).ready
    return store


def fill(
    engine: MemoryEngine,
    store: SqliteVecStore,
    owner: str,
    n: int,
    seed: int = 0,
    user: str = "",
    view: str = "memory",
) -> list[str]:
    rng = np.random.default_rng(seed)
    created = engine.create_many(
        NewMemory(owner, f"{owner} memory {i}", user_id=user) for i in range(n)
    )
    ids = [m.id for m, _ in created]
    store.upsert(
        [
            VectorItem(mid, owner, rng.standard_normal(DIM).astype(np.float32), view=view)
            for mid in ids
        ]
    )
    return ids


def owner_filter(owner: str, **more: object) -> Filter:
    return Filter(owners=(owner,), now=utcnow(), **more)  # type: ignore[arg-type]


def same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    """The same ids in the same order, the same scores to float32 rounding."""
    assert [mid for mid, _ in got] == [mid for mid, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)


def query(seed: int) -> np.ndarray:
    return np.random.default_rng(1000 + seed).standard_normal(DIM).astype(np.float32)


def test_same_answers_as_the_sql_search(engine: MemoryEngine) -> None:
    store, sql = vec_store(engine), plain(engine)
    fill(engine, store, "big", 300)
    fill(engine, store, "other", 300, seed=1)
    flt = owner_filter("big")
    for seed in range(20):
        same(store.search(query(seed), 10, flt), sql.search(query(seed), 10, flt))
    stats = store.resident.stats()  # type: ignore[union-attr]
    assert stats["searches"] == 20
    assert stats["owners"] == 1
    assert stats["vectors"] == 300


def test_small_owners_stay_in_sql(engine: MemoryEngine) -> None:
    store = vec_store(engine, min_rows=50)
    fill(engine, store, "small", 20)
    fill(engine, store, "big", 60, seed=1)
    assert store.search(query(0), 5, owner_filter("small"))
    assert store.resident.stats()["searches"] == 0  # type: ignore[union-attr]
    assert store.search(query(0), 5, owner_filter("big"))
    assert store.resident.stats()["searches"] == 1  # type: ignore[union-attr]


def test_several_owners_are_asked_one_by_one_and_merged(engine: MemoryEngine) -> None:
    """The global scope: the key's own memories (resident) and the global owner's (few,
    in SQL), the same nearest as one SQL search over both."""
    store, sql = vec_store(engine, min_rows=50), plain(engine)
    fill(engine, store, "big", 80)
    fill(engine, store, "shared", 20, seed=1)
    fill(engine, store, "someone else", 80, seed=2)
    both = Filter(owners=("big", "shared"), now=utcnow())
    for seed in range(10):
        got = store.search(query(seed), 8, both)
        same(got, sql.search(query(seed), 8, both))
        owners = {m.api_key_id for m in engine.store.read().get_many([i for i, _ in got]).values()}
        assert owners <= {"big", "shared"}
    assert store.resident.stats()["searches"] == 10  # type: ignore[union-attr]


def test_new_changed_and_deleted_vectors_are_seen(engine: MemoryEngine) -> None:
    store = vec_store(engine)
    ids = fill(engine, store, "big", 50)
    flt = owner_filter("big")
    target = query(7)
    assert store.search(target, 5, flt)  # the copy is built
    # A new memory whose vector is the query itself comes first.
    fresh, _ = engine.create(NewMemory("big", "a new one"))
    store.upsert([VectorItem(fresh.id, "big", target)])
    assert store.search(target, 1, flt)[0][0] == fresh.id
    # Re-embedded away from the query: no longer first.
    store.upsert([VectorItem(fresh.id, "big", -target)])
    assert store.search(target, 1, flt)[0][0] != fresh.id
    # An old memory re-embedded onto the query takes its place.
    store.upsert([VectorItem(ids[3], "big", target)])
    assert store.search(target, 1, flt)[0][0] == ids[3]
    # Deleted (the trigger drops its vector): gone from the copy too.
    engine.delete(ids[3], owner="big")
    found = [mid for mid, _ in store.search(target, 60, flt)]
    assert ids[3] not in found
    assert len(found) == 50
    # The vector store's own delete.
    store.delete([ids[4]])
    assert ids[4] not in [mid for mid, _ in store.search(target, 60, flt)]


def test_a_write_by_another_connection_is_seen(engine: MemoryEngine, tmp_path: Path) -> None:
    """Another process (a CLI command) writing the same file: the log carries it."""
    store = vec_store(engine)
    fill(engine, store, "big", 40)
    flt = owner_filter("big")
    target = query(3)
    assert store.search(target, 3, flt)
    other_store = SqliteStore(Database(engine.store.db.path))
    other = MemoryEngine(other_store, engine.config, SettingsService(other_store))
    try:
        fresh, _ = other.create(NewMemory("big", "written elsewhere"))
        peer = SqliteVecStore(other_store.db)
        assert peer.ensure_ready(SIG, DIM).ready
        peer.upsert([VectorItem(fresh.id, "big", target)])
    finally:
        other.close()
    assert store.search(target, 1, flt)[0][0] == fresh.id


def test_an_owner_change_moves_the_vector_between_copies(engine: MemoryEngine) -> None:
    store = vec_store(engine)
    ids = fill(engine, store, "a", 30)
    fill(engine, store, "b", 30, seed=1)
    target = query(5)
    store.upsert([VectorItem(ids[0], "a", target)])
    assert store.search(target, 1, owner_filter("a"))[0][0] == ids[0]
    assert store.search(target, 1, owner_filter("b"))[0][0] != ids[0]
    raw_write(engine, "UPDATE memories SET api_key_id = 'b' WHERE id = ?", (ids[0],))
    assert store.search(target, 1, owner_filter("a"))[0][0] != ids[0]
    assert store.search(target, 1, owner_filter("b"))[0][0] == ids[0]


def test_the_filter_decides_and_a_selective_one_falls_back(engine: MemoryEngine) -> None:
    store, sql = vec_store(engine), plain(engine)
    fill(engine, store, "big", 200, user="alice")
    mine = fill(engine, store, "big", 5, seed=2, user="bob")
    flt = owner_filter("big", user_id="bob")
    got = store.search(query(1), 5, flt)
    # Five of bob's among 200 of alice's: not among the best candidates, so SQL answers.
    assert sorted(mid for mid, _ in got) == sorted(mine)
    same(got, sql.search(query(1), 5, flt))
    assert store.resident.stats()["fallbacks"] == 1  # type: ignore[union-attr]
    # Never another end user's memories, whatever the copy holds.
    for seed in range(10):
        found = {mid for mid, _ in store.search(query(seed), 10, flt)}
        assert found <= set(mine)


def test_candidates_past_the_first_check_are_checked_before_falling_back(
    engine: MemoryEngine,
) -> None:
    """The first ``k`` + a few candidates are checked alone; when too few of them pass,
    the rest of the overfetch is checked before the SQL search is asked."""
    store, sql = vec_store(engine), plain(engine)
    alice = fill(engine, store, "big", 120, user="alice")
    bob = fill(engine, store, "big", 80, seed=3, user="bob")
    flt, k = owner_filter("big", user_id="bob"), 10
    first = k + max(k // 2, vec_sql.FIRST_EXTRA)
    nearest = [mid for mid, _ in sql.search(query(4), first, owner_filter("big"))]
    assert sum(mid in set(bob) for mid in nearest) < k  # the first check alone is short
    assert set(nearest) & set(alice)
    got = store.search(query(4), k, flt)
    same(got, sql.search(query(4), k, flt))
    stats = store.resident.stats()  # type: ignore[union-attr]
    assert (stats["searches"], stats["fallbacks"]) == (1, 0)


def test_superseded_memories_are_filtered_out(engine: MemoryEngine) -> None:
    store = vec_store(engine)
    ids = fill(engine, store, "big", 40)
    target = query(9)
    store.upsert([VectorItem(ids[0], "big", target)])
    stamp = "2020-01-01T00:00:00.000Z"
    raw_write(engine, "UPDATE memories SET superseded_at = ? WHERE id = ?", (stamp, ids[0]))
    assert store.search(target, 1, owner_filter("big"))[0][0] != ids[0]


def test_a_copy_behind_a_pruned_log_is_rebuilt(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vec_sql, "KEEP_CHANGES", 5)
    store = vec_store(engine)
    fill(engine, store, "big", 30)
    target = query(2)
    assert store.search(target, 3, owner_filter("big"))
    assert store.resident.stats()["builds"] == 1  # type: ignore[union-attr]
    fresh = fill(engine, store, "big", 20, seed=4)
    store.upsert([VectorItem(fresh[0], "big", target)])
    engine.store.db.write(vec_sql.prune_changes)
    assert store.search(target, 1, owner_filter("big"))[0][0] == fresh[0]
    assert store.resident.stats()["builds"] == 2  # type: ignore[union-attr]


def test_the_budget_bounds_the_copies(engine: MemoryEngine) -> None:
    per_vector = DIM * 4 + 8
    store = vec_store(engine, budget_bytes=per_vector * 50)
    fill(engine, store, "a", 30)
    fill(engine, store, "b", 30, seed=1)
    fill(engine, store, "huge", 60, seed=2)
    assert store.search(query(0), 3, owner_filter("huge"))  # too large: SQL
    assert store.resident.stats()["owners"] == 0  # type: ignore[union-attr]
    store.search(query(0), 3, owner_filter("a"))
    store.search(query(0), 3, owner_filter("b"))  # a goes: both do not fit
    stats = store.resident.stats()  # type: ignore[union-attr]
    assert stats["owners"] == 1
    assert stats["mb"] * 2**20 <= per_vector * 50


def test_both_views_have_their_own_copy(engine: MemoryEngine) -> None:
    store, sql = vec_store(engine), plain(engine)
    ids = fill(engine, store, "big", 40)
    rng = np.random.default_rng(5)
    store.upsert(
        [
            VectorItem(mid, "big", rng.standard_normal(DIM).astype(np.float32), view="context")
            for mid in ids
        ]
    )
    flt = owner_filter("big")
    for view in ("memory", "context"):
        same(store.search(query(4), 8, flt, view=view), sql.search(query(4), 8, flt, view=view))
    assert store.resident.stats()["vectors"] == 80  # type: ignore[union-attr]


def test_a_new_embedder_drops_the_copies(engine: MemoryEngine) -> None:
    store = vec_store(engine)
    fill(engine, store, "big", 30)
    assert store.search(query(0), 3, owner_filter("big"))
    assert store.resident.stats()["vectors"] == 30  # type: ignore[union-attr]
    assert store.ensure_ready("test:dim4:4", 4).recreated
    assert store.resident.stats()["vectors"] == 0  # type: ignore[union-attr]
    assert store.search(np.ones(4, dtype=np.float32), 3, owner_filter("big")) == []


def test_the_engine_status_shows_the_copies(tmp_path: Path) -> None:
    from tests import embedders
    from tests.conftest import make_engine

    eng = make_engine(
        tmp_path, {"MEMORY_RESIDENT_MIN_ROWS": "5"}, resolver=embedders.fixed_resolver("hash", 16)
    )
    try:
        eng.create_many(NewMemory("k", f"fact number {i} about gardens") for i in range(12))
        eng.drain(timeout=60)
        assert eng.preview("k", "gardens", strategy="semantic").hits
        resident = eng.status()["vectorStore"]["resident"]
        assert resident["owners"] == 1
        assert resident["vectors"] == 12
        assert resident["searches"] >= 1
        assert resident["minRows"] == 5
    finally:
        eng.close()
