"""Context-aware indexing on the Qdrant tier, through a real engine and both
backends (qdrant-client local mode, Qdrant Edge): each memory's two vectors in one
point, the context view searched with the same owner filter and fused by retrieval,
deleted with the memory, refreshed when a neighbour changes; a collection from before
(one unnamed vector) still serves the memory view and gains the context one on a forced
backfill; with context indexing off nothing changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memoryd.engine import MemoryEngine
from memoryd.models import MemoryType, NewMemory, utcnow
from memoryd.storage.base import Filter
from memoryd.vectors.qdrant.client import QdrantStore, point_id
from memoryd.vectors.qdrant.edge import META, QdrantEdgeStore
from memoryd.vectors.qdrant.tier import QdrantTier
from tests.conftest import make_engine

qdrant_client = pytest.importorskip("qdrant_client")
qdrant_edge = pytest.importorskip("qdrant_edge")

BACKENDS = ["qdrant", "qdrant-edge"]
#: A conversation whose answer turn lacks the words of its question (as in
#: test_context_index.py), and a second one about something else.
TURNS = [
    "Do you still go swimming?",
    "Yes, every Sunday morning before breakfast.",
    "Where do you go for that?",
    "The lake near our cabin.",
    "Sounds lovely.",
]
OTHER = ["Cats or dogs?", "Dogs, always.", "Why is that?", "They are good company."]
QUERY = "still go swimming"
#: The context leg alone: no keyword context field, no neighbour or session prior.
LEG_ONLY = {
    "MEMORY_CONTEXT_FIELD_WEIGHT": "0",
    "MEMORY_NEIGHBOUR_WEIGHT": "0",
    "MEMORY_SESSION_WEIGHT": "0",
}


def open_engine(data: Path, context: bool, store_env: dict[str, str] | None = None) -> MemoryEngine:
    from tests.embedders import fixed_resolver

    env = {**(store_env or {}), **LEG_ONLY, "MEMORY_CONTEXT_VECTOR_WEIGHT": "1" if context else "0"}
    engine = make_engine(data, env, resolver=fixed_resolver("hash", 64))
    engine.settings.update({"relevanceFloor": 0})  # the hash embedder's scale is not MiniLM's
    return engine


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    made = open_engine(tmp_path / "data", context=True)
    try:
        yield made
    finally:
        made.close()


def converse(engine: MemoryEngine, owner: str = "o") -> list[str]:
    """The two conversations of ``owner``; the ids of the first."""
    ids = []
    for session, texts in (("s1", TURNS), ("s2", OTHER)):
        for i, text in enumerate(texts):
            new = NewMemory(
                api_key_id=owner,
                content=text,
                key=f"{session}-{i}",
                type=MemoryType.EPISODIC,
                session_id=session,
            )
            memory, _ = engine.create(new)
            if session == "s1":
                ids.append(memory.id)
    assert engine.drain(30)
    return ids


def tier_of(engine: MemoryEngine) -> QdrantTier:
    tier = engine.qdrant
    assert isinstance(tier, QdrantTier)
    return tier


def settle(engine: MemoryEngine) -> QdrantTier:
    tier = tier_of(engine)
    for _ in range(3):
        assert engine.drain(10)
        tier.notify()
        assert tier.join(20)
    return tier


def enable(engine: MemoryEngine, backend: str, tmp: Path) -> QdrantTier:
    if backend == "qdrant":
        tier_of(engine).update_config({"enabled": True, "path": str(tmp / "q")})
    else:
        engine.settings.update({"vectorStore": "qdrant-edge"})
    return settle(engine)


def store_of(tier: QdrantTier) -> Any:
    store, reason = tier.prepare()
    assert store is not None, reason
    return store


def point_vectors(store: Any, memory_id: str) -> dict[str, np.ndarray]:
    """The vectors Qdrant holds for a memory, by name ("" = unnamed); {} if no point."""
    if isinstance(store, QdrantStore):
        records = store.client().retrieve(
            store.collection, [point_id(memory_id)], with_vectors=True
        )
    else:
        assert isinstance(store, QdrantEdgeStore)
        records = store._ready_shard().retrieve([point_id(memory_id)], False, True)
    if not records:
        return {}
    vector = records[0].vector
    named = vector if isinstance(vector, dict) else {"": vector}
    return {name: np.asarray(v, dtype=np.float32) for name, v in named.items()}


def sqlite_vectors(engine: MemoryEngine, memory_id: str) -> dict[str, np.ndarray]:
    """The memory's vectors in sqlite-vec, by view."""
    out = {}
    for view, table in (("memory", "vec_memories"), ("context", "vec_context")):
        rows = engine.store.db.read().execute(
            f"SELECT v.emb FROM {table} v JOIN memories m ON m.seq = v.seq WHERE m.id = ?",
            (memory_id,),
        )
        for (blob,) in rows:
            out[view] = np.frombuffer(blob, dtype=np.float32)
    return out


def query_vector(engine: MemoryEngine, text: str = QUERY) -> np.ndarray:
    tier = tier_of(engine)
    active = tier.indexer.ready()
    assert active is not None
    vector: np.ndarray = tier.indexer.embeddings.embed(active[1], [text])[0]
    return vector


def owners(*names: str) -> Filter:
    return Filter(owners=names, now=utcnow())


def contents(preview: Any) -> list[str]:
    return [h.memory.content for h in preview.hits]


def scores(preview: Any) -> list[float]:
    """The ranking's scores, best first (memories that tie may come in any order)."""
    return [round(h.score, 4) for h in preview.hits]


# -- both vectors in one point -----------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_point_carries_both_vectors_as_sqlite_holds_them(
    engine: MemoryEngine, tmp_path: Path, backend: str
) -> None:
    ids = converse(engine)
    tier = enable(engine, backend, tmp_path)
    store = store_of(tier)
    assert store.count() == len(TURNS) + len(OTHER)
    for memory_id in ids:
        held, stored = point_vectors(store, memory_id), sqlite_vectors(engine, memory_id)
        assert set(held) == set(stored) == {"memory", "context"}
        for view in ("memory", "context"):
            np.testing.assert_allclose(held[view], stored[view], atol=1e-6)
    # the answer turn's context view is not its own text: it holds the question
    assert not np.allclose(point_vectors(store, ids[1])["context"], stored["memory"])
    assert store.stats()["vectors"] == ["memory", "context"]
    status = engine.status()["qdrant"]
    assert status["contextView"] == {"indexed": True, "available": True, "reason": None}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_context_view_finds_the_answer_turn_as_sqlite_vec_does(
    engine: MemoryEngine, tmp_path: Path, backend: str
) -> None:
    ids = converse(engine)
    before = engine.preview("o", QUERY, strategy="hybrid", limit=9)
    tier = enable(engine, backend, tmp_path)
    vector, flt = query_vector(engine), owners("o")

    assert engine.indexer is not None
    assert engine.indexer.store is not None
    in_store = engine.indexer.store.search(vector, 5, flt, view="context")
    found = tier.search(vector, 5, flt, view="context")
    assert found.backend == backend
    assert found.hits is not None
    assert [m for m, _ in found.hits] == [m for m, _ in in_store]
    assert [s for _, s in found.hits] == pytest.approx([s for _, s in in_store], abs=1e-4)
    # only the answer's context view shares the question's words
    assert ids[1] in [m for m, _ in found.hits[:3]]
    memory_view = dict(tier.search(vector, 9, flt).hits or [])
    assert memory_view.get(ids[1], 0.0) < dict(found.hits)[ids[1]]

    # retrieval fuses Qdrant's context leg: the same ranking as with sqlite-vec serving
    preview = engine.preview("o", QUERY, strategy="hybrid", limit=9)
    assert preview.resolution.vector_store == backend
    assert scores(preview) == scores(before)
    assert contents(preview)[:3] == contents(before)[:3]
    assert contents(preview).index(TURNS[1]) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_context_view_never_crosses_owners(
    engine: MemoryEngine, tmp_path: Path, backend: str
) -> None:
    mine = converse(engine, "o")
    theirs = converse(engine, "mallory")  # the same words, another owner
    tier = enable(engine, backend, tmp_path)
    vector = query_vector(engine)
    for owner, own, other in (("o", mine, theirs), ("mallory", theirs, mine)):
        found = tier.search(vector, 50, owners(owner), view="context")
        got = {m for m, _ in found.hits or []}
        assert set(own) <= got
        assert not got & set(other)
        assert len(got) == len(TURNS) + len(OTHER)  # all of the owner's, nobody else's
    preview = engine.preview("o", QUERY, strategy="hybrid", limit=20)
    assert preview.resolution.vector_store == backend
    assert {h.memory.api_key_id for h in preview.hits} == {"o"}
    assert tier.search(vector, 5, owners(), view="context").hits == []  # no owner: nothing


@pytest.mark.parametrize("backend", BACKENDS)
def test_deleting_a_memory_deletes_both_vectors_and_refreshes_its_neighbours(
    engine: MemoryEngine, tmp_path: Path, backend: str
) -> None:
    ids = converse(engine)
    tier = enable(engine, backend, tmp_path)
    store = store_of(tier)
    following = point_vectors(store, ids[2])["context"]
    assert engine.delete(ids[1])
    assert engine.store.read().reindex_pending() == 2  # the two whose view held it
    engine.reindex()  # (a search of the owner would embed them as well)
    settle(engine)
    assert point_vectors(store, ids[1]) == {}
    assert store.count() == len(TURNS) + len(OTHER) - 1
    vector = query_vector(engine)
    for view in ("memory", "context"):
        hits = tier.search(vector, 50, owners("o"), view=view).hits or []
        assert ids[1] not in {m for m, _ in hits}
    # the next turn's context view lost the deleted words: Qdrant has the new vector
    refreshed = point_vectors(store, ids[2])["context"]
    assert not np.allclose(refreshed, following)
    np.testing.assert_allclose(refreshed, sqlite_vectors(engine, ids[2])["context"], atol=1e-6)
    assert tier.progress()["pending"] == 0


# -- a collection from before context-aware indexing ---------------------------------------


def make_legacy(engine: MemoryEngine, backend: str, tmp: Path) -> None:
    """What the tier created before: one unnamed vector (and for Edge, a meta file
    without a vector layout)."""
    if backend == "qdrant":
        client = qdrant_client.QdrantClient(path=str(tmp / "q"))
        models = qdrant_client.models
        params = models.VectorParams(size=64, distance=models.Distance.COSINE)
        client.create_collection("memoryd_memory", vectors_config=params)
        client.close()
        return
    active = tier_of(engine).indexer.ready()
    assert active is not None
    edge_dir = engine.config.data_dir / "qdrant-edge"
    params = qdrant_edge.EdgeVectorParams(size=64, distance=qdrant_edge.Distance.Cosine)
    shard = qdrant_edge.EdgeShard.create(
        str(edge_dir / "memoryd_memory"), qdrant_edge.EdgeConfig(vectors=params)
    )
    shard.close()
    meta = {"signature": active[0].signature, "dimensions": 64}
    (edge_dir / f"memoryd_memory.{META}").write_text(json.dumps(meta), encoding="utf-8")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_single_vector_collection_serves_the_memory_view_until_a_forced_backfill(
    engine: MemoryEngine, tmp_path: Path, backend: str
) -> None:
    ids = converse(engine)
    with_context = engine.preview("o", QUERY, strategy="hybrid", limit=9)
    make_legacy(engine, backend, tmp_path)
    tier = enable(engine, backend, tmp_path)
    store = store_of(tier)
    assert store.count() == len(TURNS) + len(OTHER)
    assert set(point_vectors(store, ids[1])) == {""}  # the memory view, unnamed
    view = engine.status()["qdrant"]["contextView"]
    assert (view["indexed"], view["available"]) == (True, False)
    assert "context view unavailable" in view["reason"]
    assert '"force": true' in view["reason"]
    assert store.stats()["contextView"] == view["reason"]

    vector = query_vector(engine)
    found = tier.search(vector, 5, owners("o"), view="context")
    assert found.hits is None
    assert found.reason == view["reason"]
    memory_view = tier.search(vector, 5, owners("o"))
    assert memory_view.backend == backend
    assert memory_view.hits
    assert memory_view.hits[0][0] == ids[0]
    # retrieval goes on without the context leg: Qdrant serves, the answer turn stays low
    preview = engine.preview("o", QUERY, strategy="hybrid", limit=9)
    assert preview.resolution.vector_store == backend
    assert contents(preview).index(TURNS[1]) > 2

    # the rebuild: a forced backfill adds the context vector and pushes every memory
    tier.start_backfill(force=True)
    settle(engine)
    assert engine.status()["qdrant"]["contextView"]["available"] is True
    assert tier.last_error is None or "context vector" not in tier.last_error
    held = point_vectors(store, ids[1])
    assert set(held) == {"", "context"}
    np.testing.assert_allclose(
        held["context"], sqlite_vectors(engine, ids[1])["context"], atol=1e-6
    )
    preview = engine.preview("o", QUERY, strategy="hybrid", limit=9)
    assert preview.resolution.vector_store == backend
    assert scores(preview) == scores(with_context)
    assert contents(preview).index(TURNS[1]) == 2


# -- context indexing off ------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_context_indexing_off_points_hold_the_memory_view_only(
    tmp_path: Path, backend: str
) -> None:
    engine = open_engine(tmp_path / "plain", context=False)
    try:
        ids = converse(engine)
        before = engine.preview("o", QUERY, strategy="hybrid", limit=9)
        tier = enable(engine, backend, tmp_path)
        store = store_of(tier)
        assert set(point_vectors(store, ids[1])) == {"memory"}
        np.testing.assert_allclose(
            point_vectors(store, ids[1])["memory"], sqlite_vectors(engine, ids[1])["memory"]
        )
        assert sqlite_vectors(engine, ids[1]).keys() == {"memory"}
        view = engine.status()["qdrant"]["contextView"]
        assert view == {"indexed": False, "available": True, "reason": None}
        after = engine.preview("o", QUERY, strategy="hybrid", limit=9)
        assert after.resolution.vector_store == backend
        assert contents(after)[:3] == contents(before)[:3]
        assert scores(after) == scores(before)
    finally:
        engine.close()


def test_switching_context_indexing_on_later_needs_no_new_collection(tmp_path: Path) -> None:
    """The collection declares both vectors from the start: turning context indexing on
    re-embeds in SQLite and re-pushes every point with its second vector."""
    data = tmp_path / "data"
    first = open_engine(data, context=False)
    try:
        ids = converse(first)
        enable(first, "qdrant", tmp_path)
    finally:
        first.close()
    second = open_engine(data, context=True)
    try:
        assert second.reindex()["started"]  # the index signature changed (":ctx")
        store = store_of(settle(second))
        held = point_vectors(store, ids[1])
        assert set(held) == {"memory", "context"}
        np.testing.assert_allclose(
            held["context"], sqlite_vectors(second, ids[1])["context"], atol=1e-6
        )
        preview = second.preview("o", QUERY, strategy="hybrid", limit=9)
        assert preview.resolution.vector_store == "qdrant"
        assert contents(preview).index(TURNS[1]) == 2
    finally:
        second.close()


def test_on_postgresql_both_views_reach_qdrant_and_follow_a_neighbours_delete(
    tmp_path: Path, pg_url: str
) -> None:
    """pgvector's two tables feed the same points; the outbox trigger (migration 0007)
    queues the neighbours whose context view a delete changed."""
    engine = open_engine(tmp_path / "pg", True, {"MEMORYD_DATABASE_URL": pg_url})
    try:
        ids = converse(engine)
        tier = enable(engine, "qdrant", tmp_path)
        store = store_of(tier)
        held = point_vectors(store, ids[1])
        assert set(held) == {"memory", "context"}
        found = tier.search(query_vector(engine), 3, owners("o"), view="context")
        assert ids[1] in {m for m, _ in found.hits or []}
        following = point_vectors(store, ids[2])["context"]
        assert engine.delete(ids[1])
        engine.reindex()
        settle(engine)
        assert point_vectors(store, ids[1]) == {}
        assert not np.allclose(point_vectors(store, ids[2])["context"], following)
        assert tier.progress()["pending"] == 0
    finally:
        engine.close()


def test_an_edge_index_build_counts_both_vectors_of_a_point(tmp_path: Path) -> None:
    """Qdrant Edge's indexed count covers every named vector: 3,000 points with their
    context vector are 6,000 vectors to index (over the 5,000 that start a build), and
    after the build none is left."""
    from memoryd.vectors.base import VectorItem

    dim, n = 8, 3000
    rng = np.random.default_rng(3)
    store = QdrantEdgeStore(
        tmp_path / "e", "c", full_scan_threshold_kb=10, indexing_threshold_kb=10
    )
    try:
        assert store.ensure_ready("test:c:8", dim).ready
        items = []
        for i in range(n):
            mid = point_id(f"m{i}")
            for view in ("memory", "context"):
                v = rng.standard_normal(dim).astype(np.float32)
                items.append(VectorItem(mid, "o", v / np.linalg.norm(v), view=view))
        store.upsert(items)
        assert store.info()["vectors"] == 2 * n
        assert store.needs_optimize()
        assert store.optimize_in_subprocess()["ok"]
        info = store.info()
        assert (info["points"], info["indexed"]) == (n, 2 * n)
        assert not store.needs_optimize()
        hits = store.search(items[1].vector, 1, owners("o"), view="context")
        assert [m for m, _ in hits] == [items[1].memory_id]
    finally:
        store.close()


def test_int8_sqlite_vec_blobs_are_embedded_again_for_both_views(tmp_path: Path) -> None:
    """int8 blobs cannot go to Qdrant: the worker embeds the memory's text and its
    context view (the memory with the two before it) again."""
    from tests.embedders import fixed_resolver

    env = {**LEG_ONLY, "MEMORY_CONTEXT_VECTOR_WEIGHT": "1", "MEMORY_VEC_QUANTIZATION": "int8"}
    engine = make_engine(tmp_path / "i8", env, resolver=fixed_resolver("hash", 64))
    try:
        assert engine.status()["vectorStore"]["quantization"] == "int8"
        ids = converse(engine)
        store = store_of(enable(engine, "qdrant", tmp_path))
        held = point_vectors(store, ids[2])
        expected = {
            "memory": query_vector(engine, TURNS[2]),
            "context": query_vector(engine, "\n".join(TURNS[:3])),
        }
        assert set(held) == {"memory", "context"}
        for view in ("memory", "context"):
            np.testing.assert_allclose(held[view], expected[view], atol=1e-6)
    finally:
        engine.close()
