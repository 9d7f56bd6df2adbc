"""The Qdrant tier inside a real engine (deterministic hash embedder,
docs/design/vectors.md#qdrant): backfill on enable, dual write (SQLite first, then
Qdrant), deletes and payload edits propagating, the retrieval ladder with its fallback
reasons, the dimension guard, Qdrant down and recovering, and the embedded Qdrant Edge
backend."""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memoryd.config.qdrant import QdrantConfig
from memoryd.engine import MemoryEngine
from memoryd.models import MemoryPatch, NewMemory, utcnow
from memoryd.storage.base import Filter
from memoryd.vectors.base import VectorItem
from memoryd.vectors.qdrant.client import QdrantStore
from memoryd.vectors.qdrant.tier import QdrantTier
from tests.conftest import add, make_engine

qdrant_client = pytest.importorskip("qdrant_client")
pytest.importorskip("qdrant_edge")

FACTS = [
    "I prefer dark mode in every editor",
    "I use PostgreSQL for production databases",
    "My favourite language is Python",
    "I deploy with Kubernetes on weekends",
    "I drink green tea in the morning",
]


def tier_of(engine: MemoryEngine) -> QdrantTier:
    assert engine.indexer is not None
    tier = engine.qdrant
    assert tier is not None
    return tier


def settle(engine: MemoryEngine) -> QdrantTier:
    """Embed what is queued, then let the Qdrant worker push it."""
    tier = tier_of(engine)
    for _ in range(3):
        assert engine.drain(10)
        tier.notify()
        assert tier.join(20)
    return tier


def enable_local(engine: MemoryEngine, path: Path | str) -> QdrantTier:
    tier = tier_of(engine)
    tier.update_config({"enabled": True, "path": str(path)})
    return settle(engine)


def store_of(tier: QdrantTier) -> Any:
    store, reason = tier.prepare()
    assert store is not None, reason
    return store


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def facts(semantic_engine: MemoryEngine) -> list[Any]:
    made = [add(semantic_engine, "alice", text) for text in FACTS]
    made.append(add(semantic_engine, "bob", "I prefer dark mode too"))
    assert semantic_engine.drain(10)
    return made


# -- backfill and dual write -------------------------------------------------------------


def test_enabling_backfills_existing_memories_and_reads_switch_to_qdrant(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    before = semantic_engine.preview("alice", "dark mode editor", strategy="semantic")
    assert before.resolution.vector_store == "sqlite-vec"
    tier = enable_local(semantic_engine, tmp_path / "q")
    assert semantic_engine.settings.get().vector_store == "qdrant"
    assert store_of(tier).count() == len(facts)
    progress = tier.progress()
    assert progress["pending"] == 0
    assert progress["complete"] is True
    status = semantic_engine.status()["qdrant"]
    assert status["enabled"] is True
    assert status["healthy"] is True
    assert status["pointCount"] == len(facts)
    assert status["servesReads"] is True
    assert isinstance(status["latencyMs"], float)

    after = semantic_engine.preview("alice", "dark mode editor", strategy="semantic")
    assert after.resolution.vector_store == "qdrant"
    assert after.resolution.fallback_reason is None
    assert after.hits[0].memory.content == FACTS[0]
    assert {h.tier for h in after.hits} == {"qdrant"}
    assert all(h.memory.api_key_id == "alice" for h in after.hits)
    # Same ranking as sqlite-vec (ties in any order): the same scores, best first.
    assert [round(h.score, 4) for h in after.hits] == [round(h.score, 4) for h in before.hits]


def test_hybrid_fuses_qdrant_candidates_with_fts5(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    enable_local(semantic_engine, tmp_path / "q")
    preview = semantic_engine.preview("alice", "PostgreSQL databases", strategy="hybrid")
    assert preview.resolution.vector_store == "qdrant"
    assert preview.resolution.strategy_used == "hybrid"
    top = preview.hits[0]
    assert top.memory.content == FACTS[1]
    assert top.tier == "qdrant"
    assert top.fts_score is not None
    assert top.vec_score is not None
    # first in both legs: the best fused score (score fusion, the default)
    assert all(top.score > h.score for h in preview.hits[1:])


def test_writes_edits_and_deletes_reach_qdrant(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    tier = enable_local(semantic_engine, tmp_path / "q")
    store = store_of(tier)
    fresh = add(semantic_engine, "alice", "I collect vinyl records", session_id="s9")
    settle(semantic_engine)
    assert store.count() == len(facts) + 1
    vector = tier.indexer.embeddings.embed(tier.indexer.ready()[1], ["vinyl records"])[0]  # type: ignore[index]
    everyone = Filter(owners=("alice",), now=utcnow())
    hits = store.search_payloads(vector, 1, everyone, True)
    assert hits[0][0] == fresh.id
    payload = hits[0][2]
    assert payload["kind"] == "memoryd_memory"
    assert (payload["apiKeyId"], payload["sessionId"], payload["type"]) == (
        "alice", "s9", "factual",
    )  # fmt: skip
    assert payload["content"] == "I collect vinyl records"
    assert payload["createdAtUnix"] == pytest.approx(fresh.created_at.timestamp(), abs=0.01)
    assert payload["expiresAtUnix"] is None

    # An expiry-only edit re-embeds nothing, but the payload follows (trigger + worker).
    soon = utcnow() - timedelta(seconds=1)
    semantic_engine.update(fresh.id, MemoryPatch(expires_at=soon))
    settle(semantic_engine)
    assert store.search_payloads(vector, 5, everyone, ())[0][0] != fresh.id

    # A content edit is re-embedded first (SQLite), then pushed.
    semantic_engine.update(fresh.id, MemoryPatch(content="I collect jazz vinyl", clear_expiry=True))
    settle(semantic_engine)
    [(_, _, data)] = store.search_payloads(vector, 1, everyone, True)
    assert data["content"] == "I collect jazz vinyl"

    assert semantic_engine.delete(fresh.id)
    settle(semantic_engine)
    assert store.count() == len(facts)
    assert tier.progress()["deleted"] >= 1
    assert semantic_engine.clear("bob") == 1
    settle(semantic_engine)
    assert store.count() == len(facts) - 1


def test_retrieval_through_qdrant_applies_session_expiry_and_retention(
    semantic_engine: MemoryEngine, tmp_path: Path
) -> None:
    semantic_engine.settings.update({"retentionDays": 30})  # opt-in
    now = utcnow()
    inside = add(semantic_engine, "alice", "kubernetes cluster notes", session_id="s1")
    other = add(semantic_engine, "alice", "kubernetes cluster plans", session_id="s2")
    add(semantic_engine, "alice", "kubernetes cluster old", created_at=now - timedelta(days=60))
    add(semantic_engine, "alice", "kubernetes cluster gone", expires_at=now - timedelta(hours=1))
    add(semantic_engine, "mallory", "kubernetes cluster secrets")
    enable_local(semantic_engine, tmp_path / "q")
    everything = semantic_engine.preview("alice", "kubernetes cluster", strategy="semantic")
    assert everything.resolution.vector_store == "qdrant"
    assert {h.memory.id for h in everything.hits} == {inside.id, other.id}
    session = semantic_engine.preview(
        "alice", "kubernetes cluster", strategy="semantic", scope="session", session_id="s1"
    )
    assert [h.memory.id for h in session.hits] == [inside.id]
    hits = semantic_engine.retrieve("alice", "kubernetes cluster", strategy="semantic")
    assert all(h.memory.api_key_id == "alice" for h in hits)


def test_an_end_users_one_memory_is_found_among_many_of_another(
    semantic_engine: MemoryEngine, tmp_path: Path
) -> None:
    """Qdrant's payload filter has no end user: the top k were all carol's, the SQL
    re-check dropped them, and dave's one relevant memory was never seen."""
    engine = semantic_engine
    query = "what do I like to eat for dinner"
    for n in range(60):  # closer to the query than dave's: they fill Qdrant's top k
        engine.create(NewMemory("eu", f"{query} {n}", user_id="carol"))
    engine.create(NewMemory("eu", "User enjoys spicy noodles for dinner", user_id="dave"))
    enable_local(engine, tmp_path / "q")
    for strategy in ("semantic", "hybrid"):
        preview = engine.preview("eu", query, strategy=strategy, user_id="dave")
        found = [(h.memory.content, h.vec_score is not None) for h in preview.hits]
        assert found == [("User enjoys spicy noodles for dinner", True)], strategy
        assert "mostly filtered" in (preview.resolution.fallback_reason or "")
    # carol, whose memories fill Qdrant's answer, is still served by Qdrant
    carol = engine.preview("eu", query, strategy="semantic", user_id="carol")
    assert carol.resolution.vector_store == "qdrant"
    assert carol.resolution.fallback_reason is None


def test_stale_payloads_never_override_sqlite_filters(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    """A point whose payload still says "live" is dropped when SQLite says expired."""
    tier = enable_local(semantic_engine, tmp_path / "q")
    tier.close()  # stop the worker: the payload stays stale
    target = facts[0]
    stamp = "2000-01-01T00:00:00.000Z"
    semantic_engine.store.db.write(
        lambda c: c.execute("UPDATE memories SET expires_at = ? WHERE id = ?", (stamp, target.id))
    )
    semantic_engine.cache.invalidate(target.id)
    tier._closed = False  # reads still work on a closed worker
    preview = semantic_engine.preview("alice", "dark mode editor", strategy="semantic")
    assert target.id not in {h.memory.id for h in preview.hits}


def test_reads_wait_for_the_first_backfill(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    tier = enable_local(semantic_engine, tmp_path / "q")
    tier._set_sync(complete=False)
    preview = semantic_engine.preview("alice", "dark mode editor", strategy="semantic")
    assert preview.resolution.vector_store == "sqlite-vec"
    assert "backfill in progress" in (preview.resolution.fallback_reason or "")


def test_disabling_resets_vector_store_and_stops_qdrant_reads(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    tier = enable_local(semantic_engine, tmp_path / "q")
    tier.update_config({"enabled": False})
    assert semantic_engine.settings.get().vector_store == "auto"
    preview = semantic_engine.preview("alice", "dark mode editor", strategy="semantic")
    assert preview.resolution.vector_store == "sqlite-vec"
    assert preview.resolution.fallback_reason is None
    assert semantic_engine.status()["qdrant"]["enabled"] is False


def test_force_reindex_repushes_and_removes_orphans(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    tier = enable_local(semantic_engine, tmp_path / "q")
    store = store_of(tier)
    orphan = "00000000-0000-4000-8000-000000000001"
    store.upsert([VectorItem(orphan, "alice", np.ones(64, dtype=np.float32) / 8.0)])
    assert store.count() == len(facts) + 1
    processed = tier.processed
    started = tier.start_backfill(force=True)
    assert started["started"] is True
    assert started["pending"] == len(facts)
    settle(semantic_engine)
    assert store.count() == len(facts)
    assert tier.processed == processed + len(facts)


# -- failure and recovery ------------------------------------------------------------------


def test_qdrant_down_falls_back_and_writes_still_succeed(
    semantic_engine: MemoryEngine, facts: list[Any]
) -> None:
    tier = tier_of(semantic_engine)
    tier.update_config({"enabled": True, "host": "127.0.0.1", "port": closed_port()})
    memory = add(semantic_engine, "alice", "I ride a red bicycle")
    settle(semantic_engine)
    assert semantic_engine.get(memory.id) is not None  # the write succeeded
    preview = semantic_engine.preview("alice", "red bicycle", strategy="semantic")
    assert preview.resolution.vector_store == "sqlite-vec"
    assert "Qdrant" in (preview.resolution.fallback_reason or "")
    assert preview.hits[0].memory.id == memory.id  # sqlite-vec answered
    status = semantic_engine.status()["qdrant"]
    assert status["enabled"] is True
    assert status["healthy"] is False
    assert status["error"]
    assert status["servesReads"] is False
    health = tier.health()
    assert health["ok"] is False
    assert "refused" in health["error"].lower() or health["error"]
    assert tier.progress()["lastError"]


def test_a_later_reindex_pushes_what_was_missed(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    """Local mode held by another client (another process, as far as memoryd can tell):
    pushes fail and stay pending; once it is free, reindex {target: qdrant} catches up."""
    path = tmp_path / "q"
    tier = enable_local(semantic_engine, path)
    store = store_of(tier)
    assert store.count() == len(facts)
    store.close()
    squatter = qdrant_client.QdrantClient(path=str(path))
    try:
        missed = [add(semantic_engine, "alice", f"I visited city number {i}") for i in range(3)]
        settle(semantic_engine)
        assert tier.progress()["pending"] >= 3
        preview = semantic_engine.preview("alice", "visited city", strategy="semantic")
        assert preview.resolution.vector_store == "sqlite-vec"
        assert "Qdrant" in (preview.resolution.fallback_reason or "")
    finally:
        squatter.close()
    assert tier.start_backfill()["pending"] >= 3
    settle(semantic_engine)
    assert tier.progress()["pending"] == 0
    assert store.count() == len(facts) + len(missed)
    preview = semantic_engine.preview("alice", "visited city number", strategy="semantic")
    assert preview.resolution.vector_store == "qdrant"


def test_dimension_guard_leaves_a_mismatched_collection_alone(
    semantic_engine: MemoryEngine, facts: list[Any], tmp_path: Path
) -> None:
    path = tmp_path / "q"
    other = QdrantStore(QdrantConfig(enabled=True, path=str(path)))
    assert other.ensure_ready("someone:else:8", 8).ready
    other.close()
    tier = enable_local(semantic_engine, path)
    status = semantic_engine.status()["qdrant"]
    assert status["healthy"] is True
    guard = status["dimensionGuard"]
    assert guard
    assert "8-d" in guard
    assert "64-d" in guard
    assert "new collection name" in guard
    preview = semantic_engine.preview("alice", "dark mode editor", strategy="semantic")
    assert preview.resolution.vector_store == "sqlite-vec"
    assert "dimension guard" in (preview.resolution.fallback_reason or "")
    tier.close()  # release the local storage before reading it directly
    check = QdrantStore(QdrantConfig(enabled=True, path=str(path)))
    assert check.count() == 0  # never written
    check.close()
    # The fix: a new collection name, created with the right size and backfilled.
    semantic_engine.attach_qdrant(QdrantTier(
        semantic_engine.store, semantic_engine.settings, semantic_engine.indexer,  # type: ignore[arg-type]
        data_dir=semantic_engine.config.data_dir,
    ))  # fmt: skip
    fixed = tier_of(semantic_engine)
    fixed.update_config({"collection": "memoryd_memory_64"})
    settle(semantic_engine)
    assert store_of(fixed).count() == len(facts)
    assert semantic_engine.status()["qdrant"]["dimensionGuard"] is None


# -- Qdrant Edge ------------------------------------------------------------------------


def test_qdrant_edge_backend_through_vector_store_setting(
    semantic_engine: MemoryEngine, facts: list[Any]
) -> None:
    semantic_engine.settings.update({"vectorStore": "qdrant-edge"})
    tier = settle(semantic_engine)
    store = store_of(tier)
    assert store.name == "qdrant-edge"
    assert store.count() == len(facts)
    assert (semantic_engine.config.data_dir / "qdrant-edge").is_dir()
    preview = semantic_engine.preview("alice", "dark mode editor", strategy="semantic")
    assert preview.resolution.vector_store == "qdrant-edge"
    assert preview.hits[0].memory.content == FACTS[0]
    assert preview.hits[0].tier == "qdrant"
    assert all(h.memory.api_key_id == "alice" for h in preview.hits)
    status = semantic_engine.status()["qdrant"]
    assert (status["backend"], status["mode"], status["pointCount"]) == (
        "qdrant-edge", "edge", len(facts),
    )  # fmt: skip
    assert semantic_engine.delete(facts[0].id)
    settle(semantic_engine)
    assert store.count() == len(facts) - 1


def test_qdrant_edge_survives_a_restart(tmp_path: Path) -> None:
    from tests.embedders import fixed_resolver

    data = tmp_path / "edge-data"

    def open_engine() -> MemoryEngine:
        return make_engine(data, resolver=fixed_resolver("hash", 64))

    first = open_engine()
    try:
        first.settings.update({"vectorStore": "qdrant-edge"})
        for text in FACTS:
            add(first, "alice", text)
        settle(first)
        assert store_of(tier_of(first)).count() == len(FACTS)
    finally:
        first.close()
    second = open_engine()
    try:
        tier = settle(second)
        assert store_of(tier).count() == len(FACTS)
        assert tier.processed == 0  # nothing had to be pushed again
        preview = second.preview("alice", "green tea morning", strategy="semantic")
        assert preview.resolution.vector_store == "qdrant-edge"
        assert preview.hits[0].memory.content == FACTS[4]
    finally:
        second.close()


def test_a_store_that_is_down_is_said_once_not_a_traceback_a_tick(
    semantic_engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """During a PostgreSQL outage the sync worker logged "Qdrant sync failed" with a
    traceback every tick, Qdrant enabled or not."""
    import logging

    from memoryd.errors import StorageUnavailableError

    tier = tier_of(semantic_engine)
    errors_before = tier.errors

    def down() -> None:
        raise StorageUnavailableError("the database is unreachable")

    monkeypatch.setattr(tier, "step", down)
    with caplog.at_level(logging.INFO, logger="memoryd"):
        for _ in range(3):
            tier._tick()
    mine = [r for r in caplog.records if r.name.startswith("memoryd.vectors")]
    assert [r.levelname for r in mine] == ["WARNING"]
    assert "the database is unreachable" in mine[0].getMessage()
    assert tier.last_error == "the database is unreachable"
    assert tier.errors == errors_before

    def broken() -> None:
        raise RuntimeError("a real bug")

    monkeypatch.setattr(tier, "step", broken)
    tier._tick()  # anything else is still an error, with its traceback
    assert tier.errors == errors_before + 1
    assert caplog.records[-1].levelname == "ERROR"
