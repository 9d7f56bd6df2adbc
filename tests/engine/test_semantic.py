"""The vector tier wired into the engine: write path, retrieval, ladder, reindex.

Uses the deterministic hash embedder (tests/embedders.py) through the real registry,
the real in-store vector index (sqlite-vec, and pgvector) and the real indexer thread.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from memoryd.engine import MemoryEngine
from memoryd.models import MemoryType, NewMemory, utcnow
from tests.conftest import STORES, add, make_engine
from tests.embedders import fixed_resolver


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Every test here runs on sqlite-vec and on pgvector."""
    return str(request.param)


def vec_rows(engine: MemoryEngine) -> int:
    assert engine.indexer is not None
    assert engine.indexer.store is not None
    return int(engine.indexer.store.stats()["rowCount"])


def in_store(engine: MemoryEngine) -> str:
    assert engine.indexer is not None
    assert engine.indexer.store is not None
    return engine.indexer.store.name


def test_writes_are_embedded_in_the_background(semantic_engine: MemoryEngine) -> None:
    for i in range(5):
        add(semantic_engine, "alice", f"alice likes topic number {i}")
    assert semantic_engine.drain(timeout=30)
    assert vec_rows(semantic_engine) == 5
    assert semantic_engine.store.read().reindex_pending() == 0
    status = semantic_engine.status()
    assert status["embedding"]["source"] == "hash"
    assert status["embedding"]["available"] is True
    assert status["vectorStore"]["backend"] == in_store(semantic_engine)
    assert status["vectorStore"]["rowCount"] == 5
    assert status["vectorStore"]["activeDim"] == 64
    assert status["vectorStore"]["signature"] == "hash:hash-64:64"


def test_bulk_writes_are_embedded_in_batches(semantic_engine: MemoryEngine) -> None:
    items = [NewMemory("bulk", f"memory about subject {i}") for i in range(300)]
    semantic_engine.create_many(items)
    assert semantic_engine.drain(timeout=60)
    assert vec_rows(semantic_engine) == 300
    embedder = semantic_engine.embeddings.current()[1]  # type: ignore[union-attr]
    inner_calls = embedder.inner.calls  # type: ignore[union-attr]
    assert inner_calls <= 300 // 64 + 3  # batched, not one call per memory


def test_semantic_and_hybrid_use_the_vector_tier(semantic_engine: MemoryEngine) -> None:
    add(semantic_engine, "alice", "the cat sat on the warm mat")
    add(semantic_engine, "alice", "quarterly revenue grew strongly")
    add(semantic_engine, "alice", "my dog chases the cat")
    semantic_engine.drain()
    semantic = semantic_engine.preview("alice", "cat mat", strategy="semantic")
    assert semantic.resolution.vector_store == in_store(semantic_engine)
    assert semantic.resolution.embedding_source == "hash"
    assert semantic.resolution.fallback_reason is None
    assert semantic.hits[0].memory.content == "the cat sat on the warm mat"
    assert {h.tier for h in semantic.hits} == {"vector"}
    assert all(h.vec_score is not None and -1.0 <= h.vec_score <= 1.0 for h in semantic.hits)
    scores = [h.score for h in semantic.hits]
    assert scores == sorted(scores, reverse=True)

    hybrid = semantic_engine.preview("alice", "cat mat", strategy="hybrid")
    assert hybrid.resolution.strategy_used == "hybrid"
    assert {h.tier for h in hybrid.hits} == {"hybrid"}
    top = hybrid.hits[0]
    assert top.memory.content == "the cat sat on the warm mat"
    assert top.fts_score is not None
    assert top.vec_score is not None
    # first in both legs: the best fused score, ahead of the rest
    assert top.score > max(h.score for h in hybrid.hits[1:])


def test_rrf_fusion_is_still_available(tmp_path: Path) -> None:
    data = tmp_path / "rrf"
    env = {"MEMORY_FUSION": "rrf", "MEMORY_NEIGHBOUR_WEIGHT": "0", "MEMORY_SESSION_WEIGHT": "0"}
    eng = make_engine(data, env, resolver=fixed_resolver("hash", 64))
    try:
        add(eng, "alice", "the cat sat on the warm mat")
        add(eng, "alice", "quarterly revenue grew strongly")
        eng.drain()
        top = eng.preview("alice", "cat mat", strategy="hybrid").hits[0]
        assert top.memory.content == "the cat sat on the warm mat"
        # at rank 1 in every list (keyword, vector; the context vector is off): w/(60+1) each
        config = eng.retriever.config
        weights = config.rrf_fts_weight + config.rrf_vector_weight + config.context_vector_weight
        assert top.score == pytest.approx(weights / 61, rel=1e-6)
    finally:
        eng.close()


def test_vector_paths_apply_every_filter(semantic_engine: MemoryEngine) -> None:
    semantic_engine.settings.update({"retentionDays": 30})  # opt-in
    now = utcnow()
    add(semantic_engine, "alice", "blue whales sing songs", session_id="s1")
    add(semantic_engine, "alice", "blue whales sing loudly", session_id="s2")
    add(semantic_engine, "alice", "blue whales sing expired", expires_at=now - timedelta(hours=1))
    add(semantic_engine, "alice", "blue whales sing long ago", created_at=now - timedelta(days=40))
    add(semantic_engine, "bob", "blue whales sing for bob")
    semantic_engine.drain()
    for strategy in ("semantic", "hybrid"):
        hits = semantic_engine.retrieve("alice", "blue whales sing", strategy=strategy)
        contents = {h.memory.content for h in hits}
        assert contents == {"blue whales sing songs", "blue whales sing loudly"}, strategy
        session = semantic_engine.retrieve(
            "alice", "blue whales sing", strategy=strategy, scope="session", session_id="s1"
        )
        assert [h.memory.content for h in session] == ["blue whales sing songs"]


def test_small_owner_gets_its_hits_among_many_others(semantic_engine: MemoryEngine) -> None:
    semantic_engine.create_many(
        NewMemory(f"owner{i % 10}", f"shared words apple banana {i}") for i in range(1500)
    )
    semantic_engine.create_many(NewMemory("small", f"apple banana small {i}") for i in range(3))
    semantic_engine.drain(timeout=120)
    hits = semantic_engine.retrieve("small", "apple banana", strategy="semantic")
    assert len(hits) == 3
    assert {h.memory.api_key_id for h in hits} == {"small"}


def test_failing_embedder_degrades_to_keyword_search(semantic_engine: MemoryEngine) -> None:
    add(semantic_engine, "alice", "I prefer dark mode in every editor")
    semantic_engine.drain()
    semantic_engine.embeddings.resolver = fixed_resolver("failing", 64)  # type: ignore[union-attr]
    for strategy in ("semantic", "hybrid"):
        preview = semantic_engine.preview("alice", "dark mode", strategy=strategy)
        assert [h.memory.content for h in preview.hits] == ["I prefer dark mode in every editor"]
        assert preview.hits[0].tier == "fts5"
        assert "provider is down" in (preview.resolution.fallback_reason or "")
        hits = semantic_engine.retrieve("alice", "dark mode", strategy=strategy)
        assert len(hits) == 1
    # a write while the embedder fails stays flagged instead of being lost
    down = add(semantic_engine, "alice", "written while the embedder is down")
    semantic_engine.drain()
    queue = semantic_engine.store.read().oldest_flagged(10)
    assert down.id in {row.id for row in queue}
    assert semantic_engine.status()["embedding"]["lastError"]


def test_changing_the_embedder_recreates_and_refills(semantic_engine: MemoryEngine) -> None:
    for i in range(20):
        add(semantic_engine, "alice", f"note {i} about gardens")
    semantic_engine.drain()
    assert semantic_engine.status()["vectorStore"]["signature"] == "hash:hash-64:64"
    semantic_engine.embeddings.resolver = fixed_resolver("hash", 32)  # type: ignore[union-attr]
    semantic_engine.preview("alice", "gardens", strategy="semantic")  # noticing the change
    assert semantic_engine.drain(timeout=60)
    status = semantic_engine.status()["vectorStore"]
    assert status["signature"] == "hash:hash-32:32"
    assert status["activeDim"] == 32
    assert status["rowCount"] == 20
    assert status["needsReindex"] == 0
    hits = semantic_engine.preview("alice", "gardens", strategy="semantic").hits
    assert hits
    assert all(h.tier == "vector" for h in hits)


def test_lazy_backfill_before_a_semantic_search(semantic_engine: MemoryEngine) -> None:
    assert semantic_engine.indexer is not None
    semantic_engine.indexer.close()  # no background worker: only the backfill can embed
    for i in range(5):
        add(semantic_engine, "alice", f"pending memory about rivers {i}")
    add(semantic_engine, "bob", "bob's pending memory about rivers")
    assert vec_rows(semantic_engine) == 0
    hits = semantic_engine.retrieve("alice", "rivers", strategy="semantic")
    assert len(hits) == 5
    assert {h.tier for h in hits} == {"vector"}
    assert vec_rows(semantic_engine) == 5  # alice's only; bob's stays pending
    assert semantic_engine.store.read().reindex_pending() == 1


def test_reindex_force_drains_with_progress(semantic_engine: MemoryEngine) -> None:
    semantic_engine.create_many(NewMemory("alice", f"fact {i}") for i in range(150))
    semantic_engine.drain()
    started = semantic_engine.reindex(force=True)
    assert started["started"] is True
    assert started["pending"] == 150
    assert semantic_engine.drain(timeout=60)
    progress = semantic_engine.status()["reindex"]
    assert progress["running"] is False
    assert progress["pending"] == 0
    assert progress["processed"] >= 300  # 150 on write + 150 on the forced reindex


def test_content_update_reembeds_and_metadata_update_does_not(
    semantic_engine: MemoryEngine,
) -> None:
    from memoryd.models import MemoryPatch

    memory = add(semantic_engine, "alice", "original text about mountains")
    semantic_engine.drain()
    before = semantic_engine.status()["reindex"]["processed"]
    semantic_engine.update(memory.id, MemoryPatch(metadata={"tag": "x"}))
    semantic_engine.drain()
    assert semantic_engine.status()["reindex"]["processed"] == before
    semantic_engine.update(memory.id, MemoryPatch(content="new text about oceans"))
    semantic_engine.drain()
    assert semantic_engine.status()["reindex"]["processed"] == before + 1
    hits = semantic_engine.retrieve("alice", "new text about oceans", strategy="semantic")
    assert hits[0].memory.id == memory.id
    assert hits[0].vec_score == pytest.approx(1.0, abs=1e-5)  # the new content's vector


def test_deleting_a_memory_deletes_its_vector(semantic_engine: MemoryEngine) -> None:
    memory = add(semantic_engine, "alice", "to be deleted", type=MemoryType.EPISODIC)
    semantic_engine.drain()
    assert vec_rows(semantic_engine) == 1
    assert semantic_engine.delete(memory.id)
    assert vec_rows(semantic_engine) == 0
