"""Lifecycle (docs/design/storage.md#lifecycle): summarization, typed decay, expiry,
clear, export/import.

Ported from the reference memory-summarization, memory-summarization-older-than and
typed-decay (DB cases) tests, minus the reference's bugs: summaries never merge
owners (B7), and an empty non-dry run reports ``dryRun: false``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.core.public import public
from memoryd.engine import MemoryEngine
from memoryd.engine.lifecycle import MAX_IMPORT_LINE_BYTES
from memoryd.errors import ValidationError
from memoryd.models import MemoryType, NewMemory, to_iso, utcnow
from tests.conftest import add

MEMORY_FIELDS = {
    "supersededAt",
    "userId",
    "supersededBy",
    "subjects",
    "id",
    "apiKeyId",
    "sessionId",
    "type",
    "key",
    "content",
    "metadata",
    "createdAt",
    "updatedAt",
    "expiresAt",
    "accessCount",
    "lastAccessedAt",
}


def days_ago(days: float) -> datetime:
    return utcnow() - timedelta(days=days)


def row(engine: MemoryEngine, memory_id: str) -> dict[str, Any] | None:
    """The raw DB row (bypassing the engine's read cache)."""
    rows = engine.store.db.read().execute(
        "SELECT content, needs_reindex, access_count, api_key_id, type FROM memories WHERE id = ?",
        (memory_id,),
    )
    found = next(iter(rows), None)
    if found is None:
        return None
    content, needs_reindex, access_count, owner, type_ = found
    return {
        "content": content,
        "needs_reindex": needs_reindex,
        "access_count": access_count,
        "owner": owner,
        "type": type_,
    }


def count(engine: MemoryEngine, owner: str | None = None) -> int:
    sql = "SELECT COUNT(*) FROM memories"
    conn = engine.store.db.read()
    rows = conn.execute(sql + " WHERE api_key_id = ?", (owner,)) if owner else conn.execute(sql)
    return int(next(iter(rows))[0])


def fts_ids(engine: MemoryEngine, word: str) -> set[str]:
    """Ids of the memories the FTS5 index matches for ``word``."""
    rows = engine.store.db.read().execute(
        "SELECT m.id FROM memory_fts JOIN memories m ON m.seq = memory_fts.rowid "
        "WHERE memory_fts MATCH ?",
        (word,),
    )
    return {r[0] for r in rows}


def fts_index_rowids(engine: MemoryEngine, word: str) -> set[int]:
    """Rowids in the FTS index itself (catches index rows left behind by deletes)."""
    rows = engine.store.db.read().execute(
        "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (word,)
    )
    return {int(r[0]) for r in rows}


def sql(engine: MemoryEngine, statement: str, params: tuple[Any, ...] = ()) -> None:
    engine.store.db.write(lambda conn: conn.execute(statement, params))


@pytest.fixture
def decay_engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    config = EngineConfig.from_env({"MEMORY_TYPED_DECAY_ENABLED": "true"}, data_dir=tmp_path / "d")
    eng = build_engine(config)
    try:
        yield eng
    finally:
        eng.close()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[MemoryEngine]:
    eng = build_engine(EngineConfig.from_env({}, data_dir=tmp_path / "fresh"))
    try:
        yield eng
    finally:
        eng.close()


# -- summarize(owner, session, max_tokens) -------------------------------------------


def test_summarize_missing_owner_data(engine: MemoryEngine) -> None:
    result = engine.summarize("missing-key", "missing-session")
    assert public(result) == {"originalCount": 0, "summarizedCount": 0, "tokensSaved": 0}


def test_summarize_compacts_the_older_memory(engine: MemoryEngine) -> None:
    old = add(
        engine,
        "key-a",
        "Alpha. Beta. Gamma. Delta.",
        key="old",
        session_id="session-a",
        created_at=datetime(2026, 4, 1, tzinfo=UTC),
    )
    new = add(
        engine,
        "key-a",
        "One. Two. Three. Four.",
        key="new",
        session_id="session-a",
        created_at=datetime(2026, 4, 2, tzinfo=UTC),
    )
    result = engine.summarize("key-a", "session-a", max_tokens=8)
    assert result.original_count == 2
    assert result.summarized_count == 1
    assert result.tokens_saved > 0
    assert result.tokens_saved == math.ceil(26 / 4) - math.ceil(len("Alpha. Beta. Gamma.") / 4)
    new_row, old_row = row(engine, new.id), row(engine, old.id)
    assert new_row is not None
    assert old_row is not None
    assert new_row["content"] == "One. Two. Three. Four."
    assert old_row["content"] == "Alpha. Beta. Gamma."
    # The engine's read cache sees the change too.
    cached = engine.get(old.id)
    assert cached is not None
    assert cached.content == "Alpha. Beta. Gamma."


def test_summarized_memory_is_reindexed_and_searchable(engine: MemoryEngine) -> None:
    old = add(
        engine,
        "key-a",
        "Alpha. Beta. Gamma. Delta.",
        key="old",
        created_at=datetime(2026, 4, 1, tzinfo=UTC),
    )
    new = add(
        engine, "key-a", "One. Two. Three. Four.", created_at=datetime(2026, 4, 2, tzinfo=UTC)
    )
    sql(engine, "UPDATE memories SET needs_reindex = 0")
    assert old.id in fts_ids(engine, "delta")
    engine.summarize("key-a", None, max_tokens=8)
    old_row, new_row = row(engine, old.id), row(engine, new.id)
    assert old_row is not None
    assert new_row is not None
    assert old_row["needs_reindex"] == 1
    assert new_row["needs_reindex"] == 0  # kept rows are not touched
    assert old.id in fts_ids(engine, "gamma")
    assert old.id not in fts_ids(engine, "delta")


def test_summarize_restricted_to_a_session(engine: MemoryEngine) -> None:
    t1 = add(
        engine,
        "key-a",
        "One. Two. Three. Four.",
        key="target-1",
        session_id="session-target",
        created_at=datetime(2026, 4, 1, tzinfo=UTC),
    )
    t2 = add(
        engine,
        "key-a",
        "Five. Six. Seven. Eight.",
        key="target-2",
        session_id="session-target",
        created_at=datetime(2026, 4, 2, tzinfo=UTC),
    )
    other = add(
        engine,
        "key-a",
        "Nine. Ten. Eleven. Twelve.",
        key="other",
        session_id="session-other",
        created_at=datetime(2026, 3, 1, tzinfo=UTC),
    )
    result = engine.summarize("key-a", "session-target", max_tokens=8)
    assert result.original_count == 2
    assert result.summarized_count == 1
    assert (row(engine, t1.id) or {})["content"] == "One. Two. Three."
    assert (row(engine, t2.id) or {})["content"] == "Five. Six. Seven. Eight."
    assert (row(engine, other.id) or {})["content"] == "Nine. Ten. Eleven. Twelve."


def test_summarize_without_session_covers_the_owner_only(engine: MemoryEngine) -> None:
    older = add(
        engine,
        "key-a",
        "Red. Blue. Green. Yellow.",
        key="a-older",
        session_id="s1",
        created_at=datetime(2026, 4, 1, tzinfo=UTC),
    )
    newer = add(
        engine,
        "key-a",
        "One. Two. Three. Four.",
        key="a-newer",
        session_id="s2",
        created_at=datetime(2026, 4, 2, tzinfo=UTC),
    )
    b_row = add(
        engine,
        "key-b",
        "Cat. Dog. Cow. Pig.",
        key="b",
        created_at=datetime(2026, 3, 1, tzinfo=UTC),
    )
    result = engine.summarize("key-a", None, max_tokens=9)
    assert result.original_count == 2
    assert result.summarized_count == 1
    assert (row(engine, older.id) or {})["content"] == "Red. Blue. Green."
    assert (row(engine, newer.id) or {})["content"] == "One. Two. Three. Four."
    assert (row(engine, b_row.id) or {})["content"] == "Cat. Dog. Cow. Pig."


def test_summarize_short_memory_is_counted_but_unchanged(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "One. Two. Three.")
    result = engine.summarize("key-a", None, max_tokens=0)
    assert public(result) == {"originalCount": 1, "summarizedCount": 1, "tokensSaved": 0}
    assert (row(engine, memory.id) or {})["content"] == "One. Two. Three."


def test_summarize_rejects_an_empty_owner(engine: MemoryEngine) -> None:
    add(engine, "key-a", "Alpha. Beta. Gamma. Delta.")
    with pytest.raises(ValidationError):
        engine.summarize("", None, max_tokens=0)
    assert count(engine) == 1


# -- summarize_older_than(owner, days, dry_run) --------------------------------------


def _old_rows(engine: MemoryEngine, owner: str, n: int, age_days: float, prefix: str = "m") -> list:
    return [
        add(
            engine,
            owner,
            f"Memory number {i} about topic {prefix}{i}.",
            key=f"{prefix}:{i}",
            type=MemoryType.FACTUAL if i % 2 else MemoryType.EPISODIC,
            created_at=days_ago(age_days + i / 100),
        )
        for i in range(n)
    ]


def test_older_than_dry_run_reports_and_keeps_rows(engine: MemoryEngine) -> None:
    rows = _old_rows(engine, "api-dry", 5, 35)
    result = engine.summarize_older_than("api-dry", 30, dry_run=True)
    assert result.dry_run is True
    assert result.deleted_count == 0
    assert result.summary_id is None
    candidates = result.candidates
    assert len(candidates) == 5
    assert {c.id for c in candidates} == {m.id for m in rows}
    for c in candidates:
        assert set(public(c)) == {
            "id",
            "type",
            "key",
            "content",
            "tokens",
            "createdAt",
            "userId",
            "apiKeyId",  # the owner: a summarize of every owner lists them all
        }
        assert c.api_key_id == "api-dry"
        assert c.tokens == math.ceil(len(c.content) / 4)
    assert result.total_tokens == sum(math.ceil(len(m.content) / 4) for m in rows)
    assert result.total_tokens > 0
    # Oldest first.
    created = [c.created_at for c in candidates]
    assert created == sorted(created)
    assert count(engine, "api-dry") == 5


def test_older_than_creates_one_summary_and_deletes_originals(engine: MemoryEngine) -> None:
    rows = _old_rows(engine, "api-real", 5, 40)
    result = engine.summarize_older_than("api-real", 30, dry_run=False)
    assert result.dry_run is False
    assert len(result.candidates) == 5
    assert result.deleted_count == 5
    summary_id = result.summary_id
    assert isinstance(summary_id, str)
    assert summary_id
    for m in rows:
        assert row(engine, m.id) is None
        assert engine.get(m.id) is None  # the read cache heard about the deletes
    summary = engine.get(summary_id)
    assert summary is not None
    assert summary.type is MemoryType.SEMANTIC
    assert summary.api_key_id == "api-real"
    assert "5" in summary.content
    for m in rows:
        assert m.key in summary.content
    assert summary.metadata["summarizedCount"] == 5
    assert count(engine, "api-real") == 1
    # The summary is searchable like any memory.
    assert summary_id in fts_ids(engine, "topic")


def test_older_than_empty_non_dry_run_reports_dry_run_false(engine: MemoryEngine) -> None:
    # An adaptation: the reference reported dryRun: true here because the empty
    # result took its dry-run return path; memoryd reports what the caller asked for.
    fresh_row = add(engine, "api-fresh", "A fresh memory.")
    result = engine.summarize_older_than("api-fresh", 30, dry_run=False)
    assert public(result) == {
        "candidates": [],
        "totalTokens": 0,
        "deletedCount": 0,
        "summaryId": None,
        "dryRun": False,
        "summaryIds": [],
        "owners": [],  # per owner, when every owner is summarized
    }
    assert row(engine, fresh_row.id) is not None
    assert count(engine, "api-fresh") == 1


def test_older_than_only_old_rows_are_candidates(engine: MemoryEngine) -> None:
    old = _old_rows(engine, "api-mix", 3, 35, prefix="old")
    young = _old_rows(engine, "api-mix", 2, 1, prefix="young")
    result = engine.summarize_older_than("api-mix", 30, dry_run=True)
    assert {c.id for c in result.candidates} == {m.id for m in old}
    result = engine.summarize_older_than("api-mix", 30, dry_run=False)
    assert result.deleted_count == 3
    for m in young:
        assert row(engine, m.id) is not None


def test_older_than_never_touches_other_owners(engine: MemoryEngine) -> None:
    """Reference bug B7: summaries merged every owner into one owned by nobody."""
    mine = _old_rows(engine, "owner-a", 3, 40, prefix="a")
    theirs = _old_rows(engine, "owner-b", 4, 40, prefix="b")
    dry = engine.summarize_older_than("owner-a", 30, dry_run=True)
    assert {c.id for c in dry.candidates} == {m.id for m in mine}
    result = engine.summarize_older_than("owner-a", 30, dry_run=False)
    assert result.deleted_count == 3
    for m in theirs:
        assert row(engine, m.id) is not None
    summary = engine.get(result.summary_id)
    assert summary is not None
    assert summary.api_key_id == "owner-a"
    for m in theirs:
        assert m.key not in summary.content
    assert count(engine, "owner-b") == 4
    assert engine.owners() == ["owner-a", "owner-b"]


@pytest.mark.parametrize("days", [0, -1, 366, 1.5, True, "30"])
def test_older_than_days_out_of_range(engine: MemoryEngine, days: Any) -> None:
    _old_rows(engine, "api-days", 2, 400)
    with pytest.raises(ValidationError):
        engine.summarize_older_than("api-days", days, dry_run=False)
    assert count(engine, "api-days") == 2


def test_older_than_days_boundaries(engine: MemoryEngine) -> None:
    _old_rows(engine, "api-b", 2, 400)
    assert len(engine.summarize_older_than("api-b", 365, dry_run=True).candidates) == 2
    assert len(engine.summarize_older_than("api-b", 1, dry_run=True).candidates) == 2


def test_older_than_rejects_an_empty_owner(engine: MemoryEngine) -> None:
    _old_rows(engine, "api-e", 2, 40)
    with pytest.raises(ValidationError):
        engine.summarize_older_than("", 30, dry_run=False)
    assert count(engine) == 2


def test_summary_sentence_splitting_keeps_decimals_and_urls(engine: MemoryEngine) -> None:
    content = (
        "Pi is 3.14 today. Docs at https://example.com/v2.1/guide.html are good. "
        "Version 2.5 shipped. The fourth sentence is dropped."
    )
    add(engine, "api-s", content, key="note:pi", created_at=days_ago(40))
    result = engine.summarize_older_than("api-s", 30, dry_run=False)
    summary = engine.get(result.summary_id)
    assert summary is not None
    expected_line = (
        "[factual] note:pi: Pi is 3.14 today. Docs at https://example.com/v2.1/guide.html "
        "are good. Version 2.5 shipped."
    )
    assert expected_line in summary.content.splitlines()
    assert "fourth sentence" not in summary.content


# -- typed decay ---------------------------------------------------------------------


def test_decay_disabled_sweep_skips(engine: MemoryEngine) -> None:
    old = add(
        engine, "k1", "We talked about it.", type=MemoryType.EPISODIC, created_at=days_ago(60)
    )
    assert engine.config.decay.enabled is False
    result = engine.sweep_decay()
    assert result.skipped_disabled is True
    assert result.deleted_ids == []
    assert row(engine, old.id) is not None


def test_decay_disabled_dry_run_still_reports_nothing_deleted(engine: MemoryEngine) -> None:
    old = add(
        engine, "k1", "We talked about it.", type=MemoryType.EPISODIC, created_at=days_ago(60)
    )
    result = engine.sweep_decay(dry_run=True)
    assert result.skipped_disabled is False
    assert result.deleted_ids == []
    assert row(engine, old.id) is not None


def test_decay_enabled_dry_run(decay_engine: MemoryEngine) -> None:
    old = add(
        decay_engine, "k1", "We talked about it.", type=MemoryType.EPISODIC, created_at=days_ago(60)
    )
    result = decay_engine.sweep_decay(dry_run=True)
    assert result.skipped_disabled is False
    assert result.decayed == 1
    assert result.scanned == 1
    assert result.deleted_ids == []
    assert row(decay_engine, old.id) is not None


def test_decay_enabled_sweep_deletes_old_episodic_only(decay_engine: MemoryEngine) -> None:
    episodic = add(
        decay_engine, "k1", "We discussed X.", type=MemoryType.EPISODIC, created_at=days_ago(60)
    )
    factual = add(
        decay_engine, "k1", "I prefer dark mode.", type=MemoryType.FACTUAL, created_at=days_ago(60)
    )
    young = add(
        decay_engine, "k1", "We discussed Y.", type=MemoryType.EPISODIC, created_at=days_ago(5)
    )
    result = decay_engine.sweep_decay()
    assert result.deleted_ids == [episodic.id]
    assert result.decayed == 1
    assert row(decay_engine, episodic.id) is None
    assert decay_engine.get(episodic.id) is None
    assert row(decay_engine, factual.id) is not None
    assert row(decay_engine, young.id) is not None


def test_decay_access_immunity(decay_engine: MemoryEngine) -> None:
    used = add(decay_engine, "k1", "We discussed X.", key="used", type=MemoryType.EPISODIC)
    for _ in range(3):
        hits = decay_engine.retrieve("k1", strategy="exact")
        assert used.id in {h.memory.id for h in hits}
    decay_engine.drain()
    assert (row(decay_engine, used.id) or {})["access_count"] == 3
    twice = add(decay_engine, "k1", "We discussed Z.", key="twice", type=MemoryType.EPISODIC)
    sql(decay_engine, "UPDATE memories SET access_count = 2 WHERE id = ?", (twice.id,))
    # Both were created and last accessed 60 days ago: only the access count differs.
    stamp = to_iso(days_ago(60))
    sql(decay_engine, "UPDATE memories SET created_at = ?, last_accessed_at = ?", (stamp, stamp))
    result = decay_engine.sweep_decay()
    assert result.deleted_ids == [twice.id]
    assert row(decay_engine, used.id) is not None


def test_decay_recent_access_keeps_old_memory(decay_engine: MemoryEngine) -> None:
    kept = add(
        decay_engine, "k1", "We discussed X.", type=MemoryType.EPISODIC, created_at=days_ago(60)
    )
    gone = add(
        decay_engine, "k1", "We discussed Q.", type=MemoryType.EPISODIC, created_at=days_ago(60)
    )
    recent = to_iso(days_ago(2))
    sql(decay_engine, "UPDATE memories SET last_accessed_at = ? WHERE id = ?", (recent, kept.id))
    result = decay_engine.sweep_decay()
    assert result.deleted_ids == [gone.id]
    assert row(decay_engine, kept.id) is not None


def test_decay_sweep_scoped_to_one_owner(decay_engine: MemoryEngine) -> None:
    mine = add(
        decay_engine, "k1", "We discussed X.", type=MemoryType.EPISODIC, created_at=days_ago(60)
    )
    theirs = add(
        decay_engine, "k2", "We discussed X.", type=MemoryType.EPISODIC, created_at=days_ago(60)
    )
    result = decay_engine.sweep_decay(owner="k1")
    assert result.deleted_ids == [mine.id]
    assert row(decay_engine, theirs.id) is not None


# -- expiry --------------------------------------------------------------------------


def test_gc_deletes_only_expired_rows(engine: MemoryEngine) -> None:
    expired = add(engine, "k1", "Expired zebra fact.", expires_at=days_ago(1))
    future = add(engine, "k1", "Future zebra fact.", expires_at=utcnow() + timedelta(days=3))
    forever = add(engine, "k1", "Forever zebra fact.")
    other_expired = add(engine, "k2", "Other expired zebra.", expires_at=days_ago(0.01))
    assert engine.gc() == 2
    assert row(engine, expired.id) is None
    assert row(engine, other_expired.id) is None
    assert engine.get(expired.id) is None
    assert row(engine, future.id) is not None
    assert row(engine, forever.id) is not None
    assert fts_ids(engine, "zebra") == {future.id, forever.id}
    assert engine.gc() == 0


def test_gc_with_a_future_now(engine: MemoryEngine) -> None:
    soon = add(engine, "k1", "Soon expired.", expires_at=utcnow() + timedelta(days=3))
    forever = add(engine, "k1", "Never expires.")
    assert engine.gc(now=utcnow() + timedelta(days=4)) == 1
    assert row(engine, soon.id) is None
    assert row(engine, forever.id) is not None


def test_expired_rows_are_invisible_to_retrieve_before_gc(engine: MemoryEngine) -> None:
    expired = add(engine, "k1", "I prefer the zebra theme.", expires_at=days_ago(0.01))
    live = add(engine, "k1", "I prefer the zebra layout.")
    recent_ids = {h.memory.id for h in engine.retrieve("k1", strategy="exact")}
    keyword_ids = {h.memory.id for h in engine.retrieve("k1", "zebra", strategy="hybrid")}
    assert recent_ids == {live.id}
    assert keyword_ids == {live.id}
    preview_ids = {h.memory.id for h in engine.preview("k1", "zebra theme").hits}
    assert expired.id not in preview_ids
    assert row(engine, expired.id) is not None  # still stored until gc


# -- clear ---------------------------------------------------------------------------


def test_clear_deletes_every_match_not_one_page(engine: MemoryEngine) -> None:
    engine.create_many(
        NewMemory(api_key_id="k1", content=f"Walrus fact {i}", key=f"w:{i}") for i in range(120)
    )
    assert count(engine, "k1") == 120
    assert engine.clear("k1") == 120
    assert count(engine, "k1") == 0
    assert engine.list_memories(owner="k1").total == 0
    assert fts_ids(engine, "walrus") == set()
    assert fts_index_rowids(engine, "walrus") == set()


def test_clear_by_type(engine: MemoryEngine) -> None:
    facts = [add(engine, "k1", f"Fact {i}", type=MemoryType.FACTUAL) for i in range(3)]
    episodes = [add(engine, "k1", f"Episode {i}", type=MemoryType.EPISODIC) for i in range(2)]
    assert engine.clear("k1", type=MemoryType.EPISODIC) == 2
    for m in episodes:
        assert row(engine, m.id) is None
    for m in facts:
        assert row(engine, m.id) is not None


def test_clear_older_than(engine: MemoryEngine) -> None:
    oldest = add(engine, "k1", "From 2024.", created_at=datetime(2024, 1, 1, tzinfo=UTC))
    newer = add(engine, "k1", "From mid 2025.", created_at=datetime(2025, 6, 1, tzinfo=UTC))
    assert engine.clear("k1", older_than=datetime(2025, 1, 1, tzinfo=UTC)) == 1
    assert row(engine, oldest.id) is None
    assert row(engine, newer.id) is not None


def test_clear_type_and_older_than_combined(engine: MemoryEngine) -> None:
    old_ep = add(
        engine,
        "k1",
        "Old ep.",
        type=MemoryType.EPISODIC,
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
    )
    old_fact = add(engine, "k1", "Old fact.", created_at=datetime(2024, 1, 1, tzinfo=UTC))
    new_ep = add(engine, "k1", "New ep.", type=MemoryType.EPISODIC)
    cutoff = datetime(2025, 1, 1, tzinfo=UTC)
    assert engine.clear("k1", type=MemoryType.EPISODIC, older_than=cutoff) == 1
    assert row(engine, old_ep.id) is None
    assert row(engine, old_fact.id) is not None
    assert row(engine, new_ep.id) is not None


def test_clear_leaves_other_owners_alone(engine: MemoryEngine) -> None:
    mine = add(engine, "k1", "Mine walrus.")
    theirs = add(engine, "k2", "Theirs walrus.")
    assert engine.clear("k1") == 1
    assert row(engine, mine.id) is None
    assert engine.get(mine.id) is None
    assert row(engine, theirs.id) is not None
    assert fts_ids(engine, "walrus") == {theirs.id}


def test_clear_rejects_an_empty_owner(engine: MemoryEngine) -> None:
    add(engine, "k1", "Keep me.")
    with pytest.raises(ValidationError):
        engine.clear("")
    with pytest.raises(ValidationError):
        engine.clear("   ")
    assert count(engine) == 1


# -- export / import -----------------------------------------------------------------


def _populate(engine: MemoryEngine, owner: str, n: int) -> None:
    types = list(MemoryType)
    future = utcnow() + timedelta(days=30)
    engine.create_many(
        NewMemory(
            api_key_id=owner,
            content=f"Memory {i}: the answer is {i * 7}.",
            key=f"item:{i}",
            type=types[i % 4],
            session_id=f"s{i % 3}" if i % 5 else "",
            metadata={"n": i, "tags": ["x", str(i)]} if i % 2 else None,
            expires_at=future if i % 7 == 0 else None,
            created_at=datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=i),
        )
        for i in range(n)
    )


def _export_lines(engine: MemoryEngine, owner: str) -> list[str]:
    return [json.dumps(d) for d in engine.export(owner)]


COMPARED = ("content", "key", "type", "sessionId", "metadata", "createdAt", "expiresAt")


def _by_key(engine: MemoryEngine, owner: str) -> dict[str, dict[str, Any]]:
    return {d["key"]: {f: d[f] for f in COMPARED} for d in engine.export(owner)}


def test_export_streams_every_memory(engine: MemoryEngine) -> None:
    _populate(engine, "k1", 1234)
    add(engine, "k2", "Not exported.")
    lines = _export_lines(engine, "k1")
    assert len(lines) == 1234
    parsed = [json.loads(line) for line in lines]
    assert all(set(d) == MEMORY_FIELDS for d in parsed)
    assert {d["key"] for d in parsed} == {f"item:{i}" for i in range(1234)}
    assert {d["apiKeyId"] for d in parsed} == {"k1"}
    assert len({d["id"] for d in parsed}) == 1234
    sample = next(d for d in parsed if d["key"] == "item:7")
    assert sample["type"] == "semantic"
    assert sample["metadata"] == {"n": 7, "tags": ["x", "7"]}
    assert sample["sessionId"] == "s1"
    assert sample["createdAt"] == "2025-01-01T00:07:00.000Z"
    assert sample["expiresAt"] is not None


def test_export_is_a_lazy_stream(engine: MemoryEngine) -> None:
    _populate(engine, "k1", 3)
    stream = engine.export("k1")
    assert next(stream)["key"] == "item:0"  # a generator, not a materialized list


def test_export_rejects_an_empty_owner(engine: MemoryEngine) -> None:
    with pytest.raises(ValidationError):
        list(engine.export(""))


def test_import_round_trip_and_idempotency(engine: MemoryEngine, fresh: MemoryEngine) -> None:
    _populate(engine, "k1", 1234)
    lines = _export_lines(engine, "k1")
    result = fresh.import_jsonl(lines)
    assert public(result) == {"imported": 1234, "updated": 0, "skipped": 0, "errors": []}
    assert _by_key(fresh, "k1") == _by_key(engine, "k1")
    assert fresh.owners() == ["k1"]

    again = fresh.import_jsonl(lines)
    assert public(again) == {"imported": 0, "updated": 0, "skipped": 1234, "errors": []}
    assert count(fresh, "k1") == 1234

    changed = json.loads(lines[10])
    changed["content"] = "A corrected memory."
    update = fresh.import_jsonl([*lines[:10], json.dumps(changed)])
    assert (update.imported, update.updated, update.skipped) == (0, 1, 10)
    stored = {d["key"]: d for d in fresh.export("k1")}[changed["key"]]
    assert stored["content"] == "A corrected memory."
    assert count(fresh, "k1") == 1234


def test_import_with_owner_override(engine: MemoryEngine, fresh: MemoryEngine) -> None:
    _populate(engine, "k1", 20)
    lines = _export_lines(engine, "k1")
    result = fresh.import_jsonl(lines, owner="other")
    assert result.imported == 20
    assert fresh.owners() == ["other"]
    assert _by_key(fresh, "other") == _by_key(engine, "k1")
    # Importing into the same engine under another owner copies, never moves.
    same = engine.import_jsonl(lines, owner="copy")
    assert same.imported == 20
    assert count(engine, "k1") == 20
    assert count(engine, "copy") == 20


def test_import_reports_bad_lines_and_keeps_good_ones(fresh: MemoryEngine) -> None:
    def good(i: int) -> bytes:
        return json.dumps({"content": f"Good line {i}", "key": f"good:{i}"}).encode()

    lines = [
        good(1),
        good(2),
        b"not json",
        good(4),
        b'{"content": ""}',
        b"[1,2]",
        b'{"content": "bad \xff\xfe bytes", "key": "utf"}',
        json.dumps({"content": "Typed", "key": "t", "type": "bogus"}).encode(),
        json.dumps({"content": "Dated", "key": "d", "expiresAt": "yesterday"}).encode(),
        b"",
        b"   \n",
        good(12) + b"\n",
    ]
    result = fresh.import_jsonl(lines, owner="k1")
    assert result.imported == 4
    assert {m["key"] for m in fresh.export("k1")} == {"good:1", "good:2", "good:4", "good:12"}
    errors = {e["line"]: e["message"] for e in result.errors}
    assert sorted(errors) == [3, 5, 6, 7, 8, 9]
    assert all(isinstance(m, str) and m for m in errors.values())
    assert "content" in errors[5]
    assert "UTF-8" in errors[7]
    assert "type" in errors[8]
    assert "expiresAt" in errors[9]


def test_import_rejects_an_oversized_line(fresh: MemoryEngine) -> None:
    huge = b'{"content": "' + b"a" * MAX_IMPORT_LINE_BYTES + b'", "key": "huge"}'
    lines = [b'{"content": "before", "key": "b"}', huge, b'{"content": "after", "key": "a"}']
    result = fresh.import_jsonl(lines, owner="k1")
    assert result.imported == 2
    assert [e["line"] for e in result.errors] == [2]
    assert str(MAX_IMPORT_LINE_BYTES) in result.errors[0]["message"]
    huge_text = '{"content": "' + "a" * MAX_IMPORT_LINE_BYTES + '"}'
    text_result = fresh.import_jsonl(["", huge_text], owner="k1")
    assert [e["line"] for e in text_result.errors] == [2]


def test_import_without_owner_needs_api_key_id(fresh: MemoryEngine) -> None:
    lines = [
        json.dumps({"apiKeyId": "k1", "content": "Owned", "key": "a"}),
        json.dumps({"content": "Orphan", "key": "b"}),
        json.dumps({"apiKeyId": "", "content": "Empty owner", "key": "c"}),
        json.dumps({"apiKeyId": "k2", "content": "Other owner", "key": "d"}),
    ]
    result = fresh.import_jsonl(lines)
    assert result.imported == 2
    assert [e["line"] for e in result.errors] == [2, 3]
    assert all("apiKeyId" in e["message"] for e in result.errors)
    assert fresh.owners() == ["k1", "k2"]


def test_import_rejects_an_empty_owner_override(fresh: MemoryEngine) -> None:
    with pytest.raises(ValidationError):
        fresh.import_jsonl([json.dumps({"content": "x", "key": "x"})], owner="")
    assert count(fresh) == 0


def test_imported_memories_are_searchable(fresh: MemoryEngine) -> None:
    fresh.import_jsonl(
        [json.dumps({"content": "I prefer the narwhal theme.", "key": "n"})], owner="k1"
    )
    hits = fresh.retrieve("k1", "narwhal", strategy="hybrid")
    assert [h.memory.key for h in hits] == ["n"]


def test_an_export_imported_under_another_owner_links_no_history_to_the_first(
    engine: MemoryEngine,
) -> None:
    """Beside the original the ids are taken, so the copies get new ones; their
    supersededBy still named the original owner's memories."""
    from memoryd.models import Reconcile

    home = NewMemory("first", "User lives in Berlin", metadata={"slot": "home"})
    engine.reconcile([Reconcile("first", home)])
    moved = NewMemory("first", "User lives in Lisbon", metadata={"slot": "home"})
    engine.reconcile([Reconcile("first", moved, supersedes=("home",))])
    lines = [json.dumps(m) for m in engine.export("first")]
    result = engine.import_jsonl(lines, owner="copy")
    assert result.errors == []
    first_ids = {m["id"] for m in engine.export("first")}
    copied = list(engine.export("copy"))
    assert len(copied) == 2
    assert not first_ids & {m["id"] for m in copied}
    links = [m["supersededBy"] for m in copied if m["supersededAt"]]
    assert len(links) == 1
    assert links[0] is None or links[0] in {m["id"] for m in copied}
