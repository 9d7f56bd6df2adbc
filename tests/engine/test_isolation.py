"""Acceptance: tenant isolation (docs/design/owners.md#every-read-filters-by-owner). No
read path returns another owner's memory; the shared pool (owner ``global``) is visible
only in scope ``global``; writes and lifecycle operations addressed to one owner never
touch another's rows (B7)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.engine import MemoryEngine
from memoryd.models import GLOBAL_OWNER, MemoryPatch, MemoryType, NewMemory, utcnow
from memoryd.storage.base import Clearing
from tests.conftest import add

OWNERS = ("a", "b", "c", GLOBAL_OWNER)
READERS = ("a", "b", "c", "d", GLOBAL_OWNER)  # "d" owns nothing
SESSIONS = ("", "s1", "s2")
STRATEGIES = ("exact", "recent", "semantic", "hybrid")
SCOPES = ("session", "apiKey", "global")
WORDS = ("orbit", "apple", "kernel", "vim", "C++", "tea", "shared", "memory", "editor")
HOSTILE = ('"', "*", "-", "(", ")", "'", ":", "^", "+", "?", "&", "OR", "NEAR", "AND", "NOT")


def allowed_owners(reader: str, scope: str) -> set[str]:
    return {reader, GLOBAL_OWNER} if scope == "global" else {reader}


@pytest.fixture(scope="module")
def shared_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryEngine]:
    data_dir: Path = tmp_path_factory.mktemp("isolation") / "data"
    eng = build_engine(EngineConfig.from_env({}, data_dir=data_dir))
    try:
        yield eng
    finally:
        eng.close()


contents = st.lists(st.sampled_from(WORDS + HOSTILE), min_size=1, max_size=6).map(" ".join)
memories = st.lists(
    st.tuples(st.sampled_from(OWNERS), st.sampled_from(SESSIONS), contents),
    min_size=1,
    max_size=14,
)
queries = st.one_of(
    st.none(),
    st.lists(st.sampled_from(WORDS + HOSTILE), min_size=1, max_size=5).map(" ".join),
    st.lists(st.sampled_from(WORDS + HOSTILE), min_size=1, max_size=4).map("".join),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20),
)


@hsettings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(rows=memories, query=queries, session=st.sampled_from(("s1", "s2", "missing")))
def test_no_read_path_leaks_another_owner(
    shared_engine: MemoryEngine,
    rows: list[tuple[str, str, str]],
    query: str | None,
    session: str,
) -> None:
    engine = shared_engine
    engine.delete_by(
        lambda tx: [gone for o in tx.owners() for gone in tx.delete_matching(Clearing(o))]
    )
    engine.cache.clear()
    engine.create_many(
        NewMemory(api_key_id=owner, session_id=sess, content=text) for owner, sess, text in rows
    )
    # Ground truth straight from the table (upserts may have merged duplicates).
    truth = {
        r[0]: (r[1], r[2])
        for r in engine.store.db.read().execute("SELECT id, api_key_id, session_id FROM memories")
    }
    own = {o: {i for i, (ow, _) in truth.items() if ow == o} for o in READERS}

    for reader in READERS:
        for strategy in STRATEGIES:
            for scope in SCOPES:
                hits = engine.retrieve(
                    reader,
                    query,
                    strategy=strategy,
                    scope=scope,
                    session_id=session,
                    max_tokens=16000,
                    limit=100,
                )
                for hit in hits:
                    assert hit.memory.api_key_id in allowed_owners(reader, scope), (
                        reader,
                        strategy,
                        scope,
                        query,
                        hit.memory,
                    )
                    assert truth[hit.memory.id][0] == hit.memory.api_key_id
                    if scope == "session":
                        assert hit.memory.session_id == session
        # Not vacuous: newest-first without a query returns exactly the reader's rows.
        everything = engine.retrieve(reader, strategy="exact", max_tokens=16000, limit=100)
        assert {h.memory.id for h in everything} == own[reader]

        page = engine.list_memories(owner=reader, limit=200)
        assert {m.id for m in page.data} == own[reader]
        assert page.total == len(own[reader])
        assert sum(page.by_type.values()) == len(own[reader])
        filtered = engine.list_memories(owner=reader, q=query or None, limit=200)
        assert {m.api_key_id for m in filtered.data} <= {reader}

        exported = list(engine.export(reader))
        assert {m["id"] for m in exported} == own[reader]
        assert {m["apiKeyId"] for m in exported} <= {reader}

        for memory_id, (owner, _) in truth.items():
            got = engine.get(memory_id, owner=reader)
            assert (got is not None) == (owner == reader)
            if owner != reader:
                assert (
                    engine.update(memory_id, MemoryPatch(content="hijacked"), owner=reader) is None
                )
                assert engine.delete(memory_id, owner=reader) is False
    # The refused writes really changed nothing.
    assert len(truth) == len(list(engine.store.db.read().execute("SELECT 1 FROM memories")))
    assert not list(
        engine.store.db.read().execute("SELECT 1 FROM memories WHERE content = 'hijacked'")
    )
    engine.drain()


# -- plain cases -------------------------------------------------------------------------


@pytest.fixture
def two_owners(engine: MemoryEngine) -> tuple[MemoryEngine, list[str], list[str]]:
    a_ids = [add(engine, "a", f"shared orbit note {i} from alpha").id for i in range(5)]
    b_ids = [add(engine, "b", f"shared orbit note {i} from beta").id for i in range(5)]
    return engine, a_ids, b_ids


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("query", [None, "shared orbit note", "rbit", "note 3"])
@pytest.mark.parametrize("scope", SCOPES)
def test_every_strategy_returns_only_the_owner(
    two_owners: tuple[MemoryEngine, list[str], list[str]],
    strategy: str,
    query: str | None,
    scope: str,
) -> None:
    engine, a_ids, _ = two_owners
    session = None if scope != "session" else ""
    hits = engine.retrieve("a", query, strategy=strategy, scope=scope, session_id=session)
    assert hits
    assert {h.memory.api_key_id for h in hits} == {"a"}
    assert {h.memory.id for h in hits} <= set(a_ids)
    preview = engine.preview("a", query, strategy=strategy, scope=scope, session_id=session)
    assert {h.memory.api_key_id for h in preview.hits} == {"a"}


def test_cross_owner_update_and_delete_do_nothing(
    two_owners: tuple[MemoryEngine, list[str], list[str]],
) -> None:
    engine, _, b_ids = two_owners
    target = b_ids[0]
    before = engine.get(target)
    assert before is not None
    patch = MemoryPatch(content="overwritten by a", key="stolen", metadata={"x": 1})
    assert engine.update(target, patch, owner="a") is None
    assert engine.delete(target, owner="a") is False
    engine.cache.clear()
    after = engine.get(target)
    assert after == before
    assert engine.get(target, owner="a") is None
    assert engine.list_memories(owner="b").total == 5
    # The rightful owner can still do both.
    assert engine.update(target, MemoryPatch(content="edited by b"), owner="b") is not None
    assert engine.delete(target, owner="b") is True


def test_clear_leaves_other_owners(two_owners: tuple[MemoryEngine, list[str], list[str]]) -> None:
    engine, a_ids, b_ids = two_owners
    assert engine.clear("a") == len(a_ids)
    assert engine.list_memories(owner="a").total == 0
    assert {m.id for m in engine.list_memories(owner="b").data} == set(b_ids)
    hits = engine.retrieve("b", "shared orbit", strategy="hybrid")
    assert {h.memory.id for h in hits} == set(b_ids)
    assert engine.retrieve("a", "shared orbit", strategy="hybrid") == []


def test_summarize_older_than_stays_within_the_owner(engine: MemoryEngine) -> None:
    old = utcnow() - timedelta(days=40)
    a_old = {add(engine, "a", f"alpha old fact {i}", created_at=old).id for i in range(3)}
    a_fresh = add(engine, "a", "alpha fresh fact").id
    b_old = {
        add(engine, "b", f"beta old fact {i}", type=MemoryType.EPISODIC, created_at=old).id
        for i in range(3)
    }
    b_before = {m.id: m for m in engine.list_memories(owner="b").data}

    dry = engine.summarize_older_than("a", 30, dry_run=True)
    assert {c.id for c in dry.candidates} == a_old
    assert dry.deleted_count == 0
    assert dry.summary_id is None

    result = engine.summarize_older_than("a", 30)
    assert {c.id for c in result.candidates} == a_old
    assert result.deleted_count == 3
    summary = engine.get(result.summary_id)
    assert summary is not None
    assert summary.api_key_id == "a"
    assert summary.type == MemoryType.SEMANTIC
    assert "beta" not in summary.content
    assert {m.id for m in engine.list_memories(owner="a").data} == {a_fresh, summary.id}

    engine.cache.clear()
    b_after = {m.id: m for m in engine.list_memories(owner="b").data}
    assert b_after == b_before
    assert set(b_after) == b_old
    assert engine.get(summary.id, owner="b") is None
    assert summary.id not in {h.memory.id for h in engine.retrieve("b", "fact", scope="global")}
