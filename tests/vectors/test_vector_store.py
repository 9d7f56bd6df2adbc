"""The sqlite-vec tier against the real extension (docs/design/vectors.md#sqlite-vec).

Ported from the reference suites memory-vectorstore-crud, -ensure-ready, -int8-quant,
-stats, memory-vec-meta and memory-needs-reindex, adapted to our semantics: score =
cosine similarity (higher is better), search takes a ``Filter`` and returns only rows
passing it, vectors are keyed by ``memories.seq``, deleting a memory deletes its vector
(trigger), and a signature change clears every vector and flags every memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memoryd.storage.sqlite.migrations as migrations_pkg
from memoryd.config import EngineConfig
from memoryd.config.settings import SettingsService
from memoryd.engine import MemoryEngine
from memoryd.models import Memory, MemoryType, NewMemory, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sql.flags import (
    count_pending,
    mark_all_reindex,
    mark_reindex,
    reindex_queue,
)
from memoryd.storage.sqlite.database import Database
from memoryd.storage.sqlite.store import SqliteStore
from memoryd.storage.sqlite.vectors import read_meta
from memoryd.vectors.base import VectorItem
from memoryd.vectors.sqlite_vec import SqliteVecStore
from tests.conftest import RecordingConnection, add

SIG4 = "test:dim4:4"
SIG8 = "test:dim8:8"
OLD_STAMP = "2000-01-01T00:00:00.000Z"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    """A real engine on a real file, built without the indexer: the engine's own
    embedder must never touch ``vec_memories`` while a test drives the store."""
    config = EngineConfig.from_env({}, data_dir=tmp_path / "data")
    config.data_dir.mkdir(parents=True)
    db = Database(config.db_path)
    store = SqliteStore(db)
    assert db.capabilities.vec, db.capabilities.vec_reason
    eng = MemoryEngine(store, config, SettingsService(store))
    try:
        yield eng
    finally:
        eng.close()


StoreFactory = Callable[..., SqliteVecStore]


@pytest.fixture
def make_store(engine: MemoryEngine) -> StoreFactory:
    """A new ``SqliteVecStore`` on the engine's DB; ``sig``/``dim`` make it ready."""

    def make(
        quantization: str = "none", sig: str | None = SIG4, dim: int | None = 4
    ) -> SqliteVecStore:
        store = SqliteVecStore(engine.store.db, quantization=quantization)
        if sig is not None:
            assert store.ensure_ready(sig, dim).ready
        return store

    return make


# -- helpers -------------------------------------------------------------------------


def vec(*xs: float, dim: int = 4) -> np.ndarray:
    """An L2-normalized float32 vector, zero-padded to ``dim``."""
    v = np.zeros(dim, dtype=np.float32)
    v[: len(xs)] = xs
    norm = float(np.linalg.norm(v))
    assert norm > 0
    return (v / norm).astype(np.float32)


def e(i: int, dim: int = 4) -> np.ndarray:
    """The unit basis vector e_i (1-based, like the reference's e1..e4)."""
    v = np.zeros(dim, dtype=np.float32)
    v[i - 1] = 1.0
    return v


def rows(engine: MemoryEngine, query: str, params: Any = ()) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in engine.store.db.read().execute(query, params)]


def vec_count(engine: MemoryEngine) -> int:
    return int(rows(engine, "SELECT COUNT(*) FROM vec_memories")[0][0])


def flags(engine: MemoryEngine) -> dict[str, int]:
    return {str(r[0]): int(r[1]) for r in rows(engine, "SELECT id, needs_reindex FROM memories")}


def clear_flags(engine: MemoryEngine, memory_id: str | None = None) -> None:
    """What the indexer does after storing a vector; all rows when no id is given."""
    if memory_id is None:
        engine.store.db.write(lambda c: c.execute("UPDATE memories SET needs_reindex = 0"))
    else:
        engine.store.db.write(lambda c: mark_reindex(c, memory_id, False))


def set_last_reset(engine: MemoryEngine, stamp: str) -> None:
    engine.store.db.write(
        lambda c: c.execute("UPDATE memory_vec_meta SET last_reset_at = ?", (stamp,))
    )


def flt(*owners: str, **kwargs: Any) -> Filter:
    return Filter(owners=owners, now=utcnow(), **kwargs)


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [memory_id for memory_id, _ in hits]


def put(store: SqliteVecStore, memory: Memory, vector: np.ndarray) -> None:
    store.upsert([VectorItem(memory.id, memory.api_key_id, vector)])


#: Both views' tables and their delete triggers.
VEC_SCHEMA = {"vec_memories", "vec_memories_ad", "vec_context", "vec_context_ad"}


def schema_names(engine: MemoryEngine) -> set[str]:
    marks = ", ".join(f"'{name}'" for name in sorted(VEC_SCHEMA))
    found = rows(engine, f"SELECT name FROM sqlite_master WHERE name IN ({marks})")
    return {str(r[0]) for r in found}


def three(engine: MemoryEngine, owner: str = "k1") -> list[Memory]:
    return [add(engine, owner, text) for text in ("alpha", "bravo", "charlie")]


# -- CRUD ----------------------------------------------------------------------------


def test_upsert_three_memories_stores_three_rows(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    for i, memory in enumerate(three(engine), start=1):
        put(store, memory, e(i))
    assert vec_count(engine) == 3


def test_upsert_twice_keeps_one_row_and_the_new_vector_wins(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    a, b = add(engine, "k1", "first"), add(engine, "k1", "second")
    put(store, a, e(1))
    put(store, b, e(2))
    put(store, a, e(3))
    assert vec_count(engine) == 2
    one_row = "SELECT COUNT(*) FROM vec_memories v JOIN memories m USING (seq) WHERE m.id = ?"
    assert rows(engine, one_row, (a.id,)) == [(1,)]
    hits = store.search(e(3), 1, flt("k1"))
    assert ids(hits) == [a.id]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    old_direction = dict(store.search(e(1), 2, flt("k1")))
    assert old_direction[a.id] == pytest.approx(0.0, abs=1e-5)  # e1 is gone


def test_upsert_of_an_unknown_memory_is_a_no_op(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    store.upsert([VectorItem("nonexistent-id", "k1", e(1))])
    assert vec_count(engine) == 0
    written = engine.store.write(
        lambda tx: store.upsert_in(tx, [VectorItem("nonexistent-id", "k1", e(1))])
    )
    assert written == 0
    memory = add(engine, "k1", "real")
    item = VectorItem(memory.id, "k1", e(1))
    assert engine.store.write(lambda tx: store.upsert_in(tx, [item, item])) == 2
    assert vec_count(engine) == 1
    store.upsert([])  # nothing to do, no transaction needed


def test_search_orders_by_similarity_best_first(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    mems = three(engine)
    for i, memory in enumerate(mems, start=1):
        put(store, memory, e(i))
    hits = store.search(vec(0.9, 0.1), 2, flt("k1"))
    assert ids(hits) == [mems[0].id, mems[1].id]
    scores = [score for _, score in hits]
    assert all(isinstance(s, float) and 0.0 < s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(0.9 / np.hypot(0.9, 0.1), abs=1e-5)


def test_exact_match_scores_one_and_never_above(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    memory = add(engine, "k1", "exact")
    v = vec(0.3, -0.2, 0.7, 0.1)
    put(store, memory, v)
    [(found, score)] = store.search(v, 5, flt("k1"))
    assert found == memory.id
    assert 0.0 < score <= 1.0
    assert score == pytest.approx(1.0, abs=1e-5)


def test_opposite_vector_scores_minus_one(engine: MemoryEngine, make_store: StoreFactory) -> None:
    store = make_store()
    memory = add(engine, "k1", "opposite")
    put(store, memory, e(1))
    [(_, score)] = store.search(-e(1), 1, flt("k1"))
    assert -1.0 <= score == pytest.approx(-1.0, abs=1e-5)


def test_search_with_k_zero_or_negative_returns_nothing(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    for i, memory in enumerate(three(engine), start=1):
        put(store, memory, e(i))
    assert store.search(e(1), 0, flt("k1")) == []
    assert store.search(e(1), -1, flt("k1")) == []  # not SQLite's "LIMIT -1 = all"
    assert len(store.search(e(1), 2, flt("k1"))) == 2


def test_search_before_ensure_ready_returns_nothing(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    put(make_store(), add(engine, "k1", "stored"), e(1))
    assert make_store(sig=None).search(e(1), 5, flt("k1")) == []


def test_delete_removes_only_that_vector(engine: MemoryEngine, make_store: StoreFactory) -> None:
    store = make_store()
    a, b = add(engine, "k1", "a"), add(engine, "k1", "b")
    put(store, a, e(1))
    put(store, b, e(2))
    assert vec_count(engine) == 2
    store.delete([a.id])
    assert vec_count(engine) == 1
    assert ids(store.search(e(1), 5, flt("k1"))) == [b.id]
    assert engine.get(a.id) is not None  # the memory itself stays


def test_delete_of_unknown_or_no_ids_is_harmless(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    memory = add(engine, "k1", "kept")
    put(store, memory, e(1))
    store.delete(["nonexistent-id"])
    store.delete([])
    store.delete([memory.id])
    store.delete([memory.id])  # idempotent
    assert vec_count(engine) == 0


def test_deleting_the_memory_deletes_its_vector_through_the_trigger(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    a, b = add(engine, "k1", "goes"), add(engine, "k1", "stays")
    put(store, a, e(1))
    put(store, b, e(2))
    assert engine.delete(a.id)
    assert vec_count(engine) == 1
    assert ids(store.search(e(1), 5, flt("k1"))) == [b.id]


# -- owner filtering -----------------------------------------------------------------


def test_owner_filter_returns_only_that_owners_vectors(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    m1, m2 = add(engine, "key1", "same"), add(engine, "key2", "same")
    put(store, m1, e(1))
    put(store, m2, e(1))
    assert ids(store.search(e(1), 10, flt("key1"))) == [m1.id]
    assert ids(store.search(e(1), 10, flt("key2"))) == [m2.id]
    assert set(ids(store.search(e(1), 10, flt("key1", "key2")))) == {m1.id, m2.id}
    everyone = Filter(owners=None, now=utcnow())
    assert set(ids(store.search(e(1), 10, everyone))) == {m1.id, m2.id}
    assert store.search(e(1), 10, flt()) == []  # an empty owner tuple matches nothing
    assert store.search(e(1), 10, flt("key3")) == []


def test_filtered_knn_returns_k_hits_for_a_small_owner_among_many(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    """The other owners' vectors all sit closer to the query than the small owner's,
    so a search that filtered after a global top-k would find none of them."""
    rng = np.random.default_rng(7)
    dim = 8
    query = e(1, dim)

    def near(direction: np.ndarray, n: int, spread: float) -> np.ndarray:
        raw: np.ndarray = direction + spread * rng.standard_normal((n, dim)).astype(np.float32)
        unit: np.ndarray = raw / np.linalg.norm(raw, axis=1, keepdims=True)
        return unit.astype(np.float32)

    plan = [(f"other{o}", f"o{o}", 100, 0.1) for o in range(20)]
    plan += [("small", "s", 5, 0.3), ("big", "b", 50, 0.3)]
    created: dict[str, list[tuple[Memory, np.ndarray]]] = {}
    for owner, tag, n, spread in plan:
        direction = query if owner.startswith("other") else e(2, dim)
        vectors = near(direction, n, spread)
        batch = engine.create_many(
            NewMemory(api_key_id=owner, content=f"{tag} memory {i}") for i in range(n)
        )
        created[owner] = [(m, v) for (m, _), v in zip(batch, vectors, strict=True)]
    store = make_store(sig=SIG8, dim=8)
    store.upsert(
        [VectorItem(m.id, m.api_key_id, v) for pairs in created.values() for m, v in pairs]
    )
    assert vec_count(engine) == 2055

    small = store.search(query, 10, flt("small"))
    assert set(ids(small)) == {m.id for m, _ in created["small"]}
    assert len(small) == 5

    big = store.search(query, 10, flt("big"))
    assert len(big) == 10
    sims = {m.id: float(v @ query) for m, v in created["big"]}
    exact_top = sorted(sims, key=sims.__getitem__, reverse=True)[:10]
    assert ids(big) == exact_top
    for memory_id, score in big:
        assert score == pytest.approx(sims[memory_id], abs=1e-5)


# -- the rest of the filter inside the vector path -----------------------------------


def test_expired_memories_are_never_returned(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    now = utcnow()
    expired = add(engine, "k1", "stale", expires_at=now - timedelta(hours=1))
    future = add(engine, "k1", "later", expires_at=now + timedelta(days=1))
    forever = add(engine, "k1", "forever")
    for memory in (expired, future, forever):
        put(store, memory, e(1))
    found = ids(store.search(e(1), 10, flt("k1")))
    assert set(found) == {future.id, forever.id}
    assert vec_count(engine) == 3  # excluded by the filter, not deleted


def test_created_after_excludes_memories_older_than_retention(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    now = utcnow()
    old = add(engine, "k1", "ancient", created_at=now - timedelta(days=90))
    fresh = add(engine, "k1", "recent")
    put(store, old, e(1))
    put(store, fresh, vec(0.5, 0.5))
    assert ids(store.search(e(1), 10, flt("k1"))) == [old.id, fresh.id]
    retained = flt("k1", created_after=now - timedelta(days=30))
    assert ids(store.search(e(1), 10, retained)) == [fresh.id]


def test_session_and_type_filters(engine: MemoryEngine, make_store: StoreFactory) -> None:
    store = make_store()
    s1 = add(engine, "k1", "in one", session_id="s1")
    s2 = add(engine, "k1", "in two", session_id="s2")
    none = add(engine, "k1", "no session")
    proc = add(engine, "k1", "how to", session_id="s1", type=MemoryType.PROCEDURAL)
    for memory in (s1, s2, none, proc):
        put(store, memory, e(1))
    assert set(ids(store.search(e(1), 10, flt("k1", session_id="s1")))) == {s1.id, proc.id}
    assert ids(store.search(e(1), 10, flt("k1", session_id="s2"))) == [s2.id]
    assert len(store.search(e(1), 10, flt("k1"))) == 4
    only_proc = flt("k1", session_id="s1", type=MemoryType.PROCEDURAL)
    assert ids(store.search(e(1), 10, only_proc)) == [proc.id]


# -- ensure_ready and the meta row ---------------------------------------------------


def test_first_ensure_ready_writes_the_meta_row(engine: MemoryEngine) -> None:
    store = SqliteVecStore(engine.store.db)
    state = store.ensure_ready(SIG4, 4)
    assert state.ready
    assert state.reason
    assert schema_names(engine) == VEC_SCHEMA
    assert vec_count(engine) == 0
    assert rows(
        engine, "SELECT embedding_signature, active_dim, vec_ready FROM memory_vec_meta"
    ) == [(SIG4, 4, 1)]
    meta = read_meta(engine.store.db.read())
    assert meta["signature"] == SIG4  # no quantization suffix by default
    assert meta["activeDim"] == 4
    assert meta["vecReady"] is True


def test_same_signature_again_does_not_reset(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    set_last_reset(engine, OLD_STAMP)
    memory = add(engine, "k1", "kept")
    put(store, memory, e(1))
    clear_flags(engine)

    again = store.ensure_ready(SIG4, 4)
    fresh_instance = SqliteVecStore(engine.store.db).ensure_ready(SIG4, 4)  # state read from meta
    for state in (again, fresh_instance):
        assert state.ready
        assert not state.recreated
    assert read_meta(engine.store.db.read())["lastResetAt"] == OLD_STAMP
    assert vec_count(engine) == 1
    assert flags(engine) == {memory.id: 0}


def test_new_signature_clears_vectors_and_flags_every_memory(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    mems = three(engine)
    for i, memory in enumerate(mems, start=1):
        put(store, memory, e(i))
    clear_flags(engine)
    set_last_reset(engine, OLD_STAMP)

    state = SqliteVecStore(engine.store.db).ensure_ready("test:other:8", 8)
    assert state.ready
    assert state.recreated
    assert "recreated" in state.reason.lower()
    assert vec_count(engine) == 0
    assert set(flags(engine).values()) == {1}
    assert len(flags(engine)) == 3
    meta = read_meta(engine.store.db.read())
    assert (meta["signature"], meta["activeDim"], meta["vecReady"]) == ("test:other:8", 8, True)
    assert meta["lastResetAt"] is not None
    assert meta["lastResetAt"] != OLD_STAMP


def test_same_signature_with_another_dimension_also_resets(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    put(store, add(engine, "k1", "four"), e(1))
    state = SqliteVecStore(engine.store.db).ensure_ready(SIG4, 8)
    assert state.recreated
    assert vec_count(engine) == 0
    assert read_meta(engine.store.db.read())["activeDim"] == 8


def test_switching_instances_reset_each_other(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    """Two store instances with different signatures: each one's ensure_ready wins."""
    first = make_store()
    memory = add(engine, "k1", "ping")
    put(first, memory, e(1))
    make_store(sig=SIG8, dim=8)
    assert vec_count(engine) == 0
    state = SqliteVecStore(engine.store.db).ensure_ready(SIG4, 4)
    assert state.recreated
    assert read_meta(engine.store.db.read())["signature"] == SIG4


@pytest.mark.parametrize("dimensions", [None, 0])
def test_no_dimensions_is_not_ready_with_a_reason(
    engine: MemoryEngine, dimensions: int | None
) -> None:
    store = SqliteVecStore(engine.store.db)
    state = store.ensure_ready(SIG4, dimensions)
    assert state.ready is False
    assert isinstance(state.reason, str)
    assert state.reason
    assert not state.recreated
    meta = read_meta(engine.store.db.read())
    assert meta["signature"] is None
    assert meta["vecReady"] is False


def test_read_meta_defaults_and_a_missing_sentinel_row(engine: MemoryEngine) -> None:
    defaults = {"activeDim": None, "signature": None, "lastResetAt": None, "vecReady": False}
    assert read_meta(engine.store.db.read()) == defaults
    engine.store.db.write(lambda c: c.execute("DELETE FROM memory_vec_meta"))
    assert read_meta(engine.store.db.read()) == defaults
    assert SqliteVecStore(engine.store.db).ensure_ready(SIG4, 4).ready  # re-inserts the row
    assert rows(engine, "SELECT COUNT(*) FROM memory_vec_meta") == [(1,)]
    assert read_meta(engine.store.db.read())["signature"] == SIG4


def test_vec_migration_is_idempotent(engine: MemoryEngine, make_store: StoreFactory) -> None:
    store = make_store()
    put(store, add(engine, "k1", "survives"), e(1))
    ddl = (Path(migrations_pkg.__file__).parent / "0003_vec_memories.sql").read_text()
    engine.store.db.write(lambda c: c.execute(ddl))
    assert vec_count(engine) == 1
    columns = {r[1] for r in rows(engine, "PRAGMA table_info(memories)")}
    assert "needs_reindex" in columns


# -- self-heal -----------------------------------------------------------------------


@pytest.mark.parametrize("same_instance", [False, True])
@pytest.mark.parametrize("drop_trigger", [True, False])
def test_missing_table_is_recreated(
    engine: MemoryEngine, make_store: StoreFactory, drop_trigger: bool, same_instance: bool
) -> None:
    """A dropped ``vec_memories`` (with or without its trigger) is rebuilt by the next
    ``ensure_ready``: by a new store, and by a long-lived one that was already ready."""
    store = make_store()
    mems = three(engine)
    for i, memory in enumerate(mems, start=1):
        put(store, memory, e(i))
    clear_flags(engine)

    def drop(conn: Any) -> None:
        if drop_trigger:
            conn.execute("DROP TRIGGER vec_memories_ad")
        conn.execute("DROP TABLE vec_memories")

    engine.store.db.write(drop)
    assert "vec_memories" not in schema_names(engine)
    assert SqliteVecStore(engine.store.db).stats()["rowCount"] == 0  # a missing table is tolerated

    healed = store if same_instance else SqliteVecStore(engine.store.db)
    state = healed.ensure_ready(SIG4, 4)
    assert state.ready
    assert state.recreated
    assert schema_names(engine) == VEC_SCHEMA
    assert set(flags(engine).values()) == {1}
    assert read_meta(engine.store.db.read())["signature"] == SIG4

    for i, memory in enumerate(mems, start=1):
        put(healed, memory, e(i))
    assert ids(healed.search(e(2), 1, flt("k1"))) == [mems[1].id]
    assert engine.delete(mems[1].id)
    assert vec_count(engine) == 2
    assert mems[1].id not in ids(healed.search(e(2), 3, flt("k1")))


def test_missing_trigger_alone_is_recreated_without_a_reindex(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    memory = add(engine, "k1", "orphan-proof")
    put(store, memory, e(1))
    clear_flags(engine)
    engine.store.db.write(lambda c: c.execute("DROP TRIGGER vec_memories_ad"))
    state = store.ensure_ready(SIG4, 4)
    assert state.ready
    assert not state.recreated
    assert schema_names(engine) == VEC_SCHEMA
    assert vec_count(engine) == 1
    assert flags(engine) == {memory.id: 0}
    assert engine.delete(memory.id)
    assert vec_count(engine) == 0


# -- int8 quantization ---------------------------------------------------------------


def _recall_fixture(engine: MemoryEngine) -> list[tuple[Memory, np.ndarray]]:
    vectors = [
        e(1, 8),
        e(2, 8),
        e(3, 8),
        vec(0.6, 0.8, dim=8),
        e(4, 8),
        vec(0, 0, 0, 0, 0.7071, 0.7071, dim=8),
    ]
    return [(add(engine, "k1", f"m{i}"), v) for i, v in enumerate(vectors)]


def test_int8_signature_suffix_and_blob_size(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store("int8", sig=SIG8, dim=8)
    assert store.effective_signature(SIG8) == SIG8 + ":int8"
    assert read_meta(engine.store.db.read())["signature"] == SIG8 + ":int8"
    stats = store.stats()
    assert str(stats["signature"]).endswith(":int8")
    assert stats["quantization"] == "int8"
    for memory, v in _recall_fixture(engine):
        put(store, memory, v)
    assert rows(engine, "SELECT DISTINCT length(emb) FROM vec_memories") == [(8,)]


def test_float_blobs_are_four_bytes_per_dimension(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store(sig=SIG8, dim=8)
    put(store, add(engine, "k1", "float"), e(1, 8))
    assert rows(engine, "SELECT length(emb) FROM vec_memories") == [(32,)]


def test_int8_recall_matches_exact_float_search(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store("int8", sig=SIG8, dim=8)
    fixture = _recall_fixture(engine)
    for memory, v in fixture:
        put(store, memory, v)
    query = vec(0.05, 0.05, 0.95, dim=8)
    exact = sorted(fixture, key=lambda mv: float(mv[1] @ query), reverse=True)
    exact_top3 = {m.id for m, _ in exact[:3]}

    hits = store.search(query, 3, flt("k1"))
    assert len(hits) == 3
    assert hits[0][0] == fixture[2][0].id  # m2 = e3
    assert len(exact_top3 & set(ids(hits))) >= 2
    assert hits[0][1] == pytest.approx(float(fixture[2][1] @ query), abs=0.02)
    assert all(-1.0 <= s <= 1.0 for _, s in hits)


@pytest.mark.parametrize("quantization", ["none", "int8"])
def test_exact_matches_score_at_most_one(
    engine: MemoryEngine, make_store: StoreFactory, quantization: str
) -> None:
    """Rounding (int8 above all) can give an exact match a cosine distance just below
    zero; the score is still a cosine similarity, so never above 1."""
    store = make_store(quantization)
    rng = np.random.default_rng(3)
    raw = rng.standard_normal((20, 4)).astype(np.float32)
    vectors = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    mems = [add(engine, "k1", f"random {i}") for i in range(len(vectors))]
    store.upsert([VectorItem(m.id, "k1", v) for m, v in zip(mems, vectors, strict=True)])
    for memory, v in zip(mems, vectors, strict=True):
        best_id, best = store.search(v, 1, flt("k1"))[0]
        assert best_id == memory.id
        assert 0.98 < best <= 1.0


def test_switching_to_int8_recreates_and_flags_everything(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    floats = make_store(sig=SIG8, dim=8)
    fixture = _recall_fixture(engine)
    for memory, v in fixture:
        put(floats, memory, v)
    clear_flags(engine)
    assert floats.stats()["rowCount"] == 6

    quantized = SqliteVecStore(engine.store.db, quantization="int8")
    state = quantized.ensure_ready(SIG8, 8)
    assert state.recreated
    assert "recreated" in state.reason.lower()
    stats = quantized.stats()
    assert str(stats["signature"]).endswith(":int8")
    assert stats["rowCount"] == 0
    assert stats["needsReindex"] == len(fixture)

    back = SqliteVecStore(engine.store.db).ensure_ready(SIG8, 8)  # and back to float32
    assert back.recreated
    assert read_meta(engine.store.db.read())["signature"] == SIG8


def test_unknown_quantization_means_float(engine: MemoryEngine) -> None:
    store = SqliteVecStore(engine.store.db, quantization="binary")
    assert store.quantization == "none"
    assert store.effective_signature(SIG4) == SIG4


# -- validation ----------------------------------------------------------------------


def test_wrong_dimension_raises_and_stores_nothing(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    good, bad = add(engine, "k1", "good"), add(engine, "k1", "bad")
    batch = [VectorItem(good.id, "k1", e(1)), VectorItem(bad.id, "k1", e(1, 8))]
    with pytest.raises(ValueError, match="dims"):
        store.upsert(batch)
    assert vec_count(engine) == 0  # the whole batch rolled back
    with pytest.raises(ValueError, match="dims"):
        put(store, bad, np.ones(3, dtype=np.float32) / np.sqrt(3))
    assert vec_count(engine) == 0
    put(store, good, e(1))
    assert vec_count(engine) == 1


# -- stats and health ----------------------------------------------------------------


def test_stats_before_ensure_ready(engine: MemoryEngine) -> None:
    store = SqliteVecStore(engine.store.db)
    assert store.stats() == {
        "rowCount": 0,
        "contextRowCount": 0,
        "needsReindex": 0,
        "activeDim": None,
        "signature": None,
        "quantization": "none",
        "resident": None,
    }
    add(engine, "k1", "one")
    add(engine, "k1", "two")  # new memories start flagged
    assert store.stats()["needsReindex"] == 2


def test_stats_after_ensure_ready_and_upserts(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    mems = three(engine)
    for i, memory in enumerate(mems, start=1):
        put(store, memory, e(i))
    stats = store.stats()
    assert (stats["rowCount"], stats["activeDim"], stats["signature"]) == (3, 4, SIG4)
    store.delete([mems[0].id])
    assert store.stats()["rowCount"] == 2


def test_mark_all_reindex_and_clearing_flags_drive_needs_reindex(
    engine: MemoryEngine, make_store: StoreFactory
) -> None:
    store = make_store()
    mems = [add(engine, "k1", f"memory {i}") for i in range(5)]
    clear_flags(engine)
    assert store.stats()["needsReindex"] == 0
    assert engine.store.db.write(mark_all_reindex) == 5
    assert store.stats()["needsReindex"] == 5
    assert engine.store.db.write(mark_all_reindex) == 0  # counts rows changed, not rows flagged
    engine.store.db.write(
        lambda c: c.execute("UPDATE memories SET needs_reindex = 0 WHERE id = ?", (mems[0].id,))
    )
    assert store.stats()["needsReindex"] == 4


def test_health_reports_latency(engine: MemoryEngine, make_store: StoreFactory) -> None:
    for store in (SqliteVecStore(engine.store.db), make_store()):
        health = store.health()
        assert health["ok"] is True
        assert isinstance(health["latencyMs"], float)
        assert health["latencyMs"] >= 0.0


# -- the needs-reindex queue (memory-needs-reindex) ----------------------------------


def test_reindex_queue_returns_flagged_rows_with_content_and_key(engine: MemoryEngine) -> None:
    memory = add(engine, "k1", "Paris is the capital of France", key="capital-france")
    other = add(engine, "k1", "Berlin is the capital of Germany")
    clear_flags(engine)
    conn = engine.store.db.read()
    assert reindex_queue(conn, 10) == []
    assert count_pending(conn) == 0
    engine.store.db.write(lambda c: mark_reindex(c, memory.id, True))
    assert reindex_queue(conn, 10) == [(memory.id, memory.content, "capital-france")]
    assert other.id not in [r[0] for r in reindex_queue(conn, 10)]


def test_reindex_queue_is_oldest_first_limited_and_shrinks_as_flags_clear(
    engine: MemoryEngine,
) -> None:
    now = utcnow()
    mems = [
        add(engine, "k1" if i % 2 else "k2", f"note {i}", created_at=now - timedelta(days=10 - i))
        for i in range(5)
    ]
    unflagged = add(engine, "k1", "never flagged", created_at=now - timedelta(days=30))
    clear_flags(engine, unflagged.id)
    conn = engine.store.db.read()
    queue = reindex_queue(conn, 10)
    assert [r[0] for r in queue] == [m.id for m in mems]
    assert [r[0] for r in reindex_queue(conn, 3)] == [m.id for m in mems[:3]]
    assert [r[0] for r in reindex_queue(conn, 10, owner="k1")] == [mems[1].id, mems[3].id]
    assert count_pending(conn) == 5
    for expected, memory in zip((4, 3, 2), mems, strict=False):
        clear_flags(engine, memory.id)
        assert count_pending(conn) == expected
    assert [r[0] for r in reindex_queue(conn, 10)] == [mems[3].id, mems[4].id]


def test_mark_all_reindex_workflow(engine: MemoryEngine) -> None:
    conn = engine.store.db.read()
    assert engine.store.db.write(mark_all_reindex) == 0  # empty DB
    assert count_pending(conn) == 0
    mems = three(engine)
    clear_flags(engine)
    assert engine.store.db.write(mark_all_reindex) == 3
    assert len(reindex_queue(conn, 10)) == 3
    assert count_pending(conn) == 3
    clear_flags(engine, mems[0].id)
    queue_ids = [r[0] for r in reindex_queue(conn, 10)]
    assert len(queue_ids) == 2
    assert mems[0].id not in queue_ids
    assert count_pending(conn) == 2


# -- query plan ----------------------------------------------------------------------


@pytest.mark.parametrize("quantization", ["none", "int8"])
@pytest.mark.parametrize("session", [None, "s1"])
def test_search_plan_uses_the_owner_index_and_the_vector_primary_key(
    engine: MemoryEngine,
    make_store: StoreFactory,
    quantization: str,
    session: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = make_store(quantization)
    engine.create_many(
        NewMemory(api_key_id=f"k{i % 5}", content=f"plan {i}", session_id="s1") for i in range(50)
    )
    recorder = RecordingConnection(engine.store.db.read())
    monkeypatch.setattr(store.db, "read", lambda: recorder)
    store.search(e(1), 10, flt("k1", session_id=session))
    monkeypatch.undo()
    assert len(recorder.statements) == 1
    plan = recorder.plan()
    memories_step = [p for p in plan if p.startswith(("SEARCH m ", "SCAN m"))]
    vectors_step = [p for p in plan if p.startswith(("SEARCH v ", "SCAN v"))]
    assert len(memories_step) == 1, plan
    assert memories_step[0].startswith("SEARCH m USING INDEX idx_memories_owner_"), plan
    assert "(api_key_id=?" in memories_step[0], plan
    assert vectors_step == ["SEARCH v USING INTEGER PRIMARY KEY (rowid=?)"], plan
