"""Context-aware indexing: a memory of a conversation is indexed with its
neighbours, as a keyword field and as a second vector, on both primary stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import MemoryEngine
from memoryd.models import MemoryPatch, utcnow
from memoryd.storage.base import Filter
from tests.conftest import STORES, add, make_engine, sqlite_at_version

#: A conversation whose answer turn lacks the words of its question.
TURNS = [
    "Do you still go swimming?",
    "Yes, every Sunday morning before breakfast.",
    "Where do you go for that?",
    "The lake near our cabin.",
    "Sounds lovely.",
]


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def conversation(
    engine: MemoryEngine, owner: str = "o", user: str = "", session: str = "s1"
) -> list[str]:
    ids = []
    for i, text in enumerate(TURNS):
        memory, _ = engine.create(_new(owner, text, f"{session}-t{i}", session, user))
        ids.append(memory.id)
    return ids


def _new(owner: str, text: str, key: str, session: str, user: str = "") -> Any:
    from memoryd.models import MemoryType, NewMemory

    return NewMemory(
        api_key_id=owner,
        content=text,
        key=key,
        type=MemoryType.EPISODIC,
        session_id=session,
        user_id=user,
    )


def keyword(
    engine: MemoryEngine, query: str, weight: float, owner: str = "o", user: str | None = None
) -> list[str]:
    flt = Filter(owners=(owner,), now=utcnow(), user_id=user)
    return [h.memory.content for h in engine.store.read().keyword_search(query, flt, 10, weight)]


def test_a_word_said_next_to_a_memory_finds_it_through_the_context_field(
    engine: MemoryEngine,
) -> None:
    conversation(engine)
    # "swimming" is said only in the question; the answer is found with it
    assert keyword(engine, "swimming", 0) == [TURNS[0]]
    found = keyword(engine, "swimming", 0.35)
    assert found[0] == TURNS[0]  # its own text still weighs most
    assert set(found) == {TURNS[0], TURNS[1], TURNS[2]}  # two after it, none before


def test_deleting_or_editing_a_memory_takes_its_words_out_of_its_neighbours(
    engine: MemoryEngine,
) -> None:
    ids = conversation(engine)
    assert TURNS[1] in keyword(engine, "swimming", 0.35)
    engine.update(ids[0], MemoryPatch(content="Do you still go running?"))
    assert keyword(engine, "swimming", 0.35) == []
    assert TURNS[1] in keyword(engine, "running", 0.35)
    assert engine.delete(ids[0])
    assert keyword(engine, "running", 0.35) == []  # nothing of a deleted memory stays
    assert TURNS[1] in keyword(engine, "lake", 0.35)  # the others' context is intact


def test_context_stays_within_one_end_user_and_one_session(engine: MemoryEngine) -> None:
    conversation(engine, user="alice", session="s1")
    for i, text in enumerate(["Any plans?", "Quiet weekend at home."]):
        engine.create(_new("o", text, f"bob-{i}", "s1", user="bob"))
    for i, text in enumerate(["Lunch at noon?", "Fine."]):
        engine.create(_new("o", text, f"other-{i}", "s2", user="alice"))
    # bob's turns follow alice's in the same session id: none of her words reach his
    assert keyword(engine, "lake", 0.35, user="bob") == []
    assert keyword(engine, "Sounds lovely", 0.35, user="bob") == []
    # another session of the same user is another conversation
    assert "Lunch at noon?" not in keyword(engine, "lovely", 0.35, user="alice")


def test_memories_without_a_session_get_no_context(engine: MemoryEngine) -> None:
    add(engine, "o", "User swims every Sunday", key="a")
    add(engine, "o", "User lives near a lake", key="b")
    assert keyword(engine, "swims", 0.35) == ["User swims every Sunday"]


# -- the second vector -------------------------------------------------------------------


@pytest.fixture
def hashed(tmp_path: Path, store_env: dict[str, str]) -> Iterator[MemoryEngine]:
    from tests.embedders import fixed_resolver

    env = {**store_env, "MEMORY_CONTEXT_VECTOR_WEIGHT": "0.35"}  # off by default
    engine = make_engine(tmp_path / "h", env, resolver=fixed_resolver("hash", 64))
    engine.settings.update({"relevanceFloor": 0})  # the hash embedder's scale is not MiniLM's
    try:
        yield engine
    finally:
        engine.close()


def vector_counts(engine: MemoryEngine) -> tuple[int, int]:
    assert engine.indexer.store is not None
    stats = engine.indexer.store.stats()
    return int(stats["rowCount"]), int(stats["contextRowCount"])


def test_no_second_vector_by_default(semantic_engine: MemoryEngine) -> None:
    conversation(semantic_engine)
    assert semantic_engine.drain(timeout=60)
    assert vector_counts(semantic_engine) == (5, 0)
    assert not semantic_engine.status()["vectorStore"]["signature"].endswith(":ctx")


def test_each_memory_gets_a_second_vector_deleted_with_it(hashed: MemoryEngine) -> None:
    ids = conversation(hashed)
    add(hashed, "o", "User likes tea", key="solo")  # no session: its own text twice
    assert hashed.drain(timeout=60)
    assert vector_counts(hashed) == (6, 6)
    rows = {row.id: row.view for row in hashed.store.read().oldest_flagged(10)}
    assert rows == {}  # all embedded
    assert hashed.delete(ids[2])
    assert vector_counts(hashed) == (5, 5)
    # what the second view of the following memory is made of: its earlier neighbours
    hashed.store.write(lambda tx: tx.mark_all_reindex())
    views = {row.id: row.view for row in hashed.store.read().oldest_flagged(10)}
    assert views[ids[3]] == "\n".join([TURNS[0], TURNS[1], TURNS[3]])
    assert views[ids[0]] == TURNS[0]


@pytest.mark.parametrize("views", [True, False], ids=["context-views", "no-views"])
def test_an_edit_queues_the_following_memories_for_embedding_again(
    tmp_path: Path, store_env: dict[str, str], views: bool
) -> None:
    """Only an index that holds context views re-embeds the neighbours of an edit:
    without them their vectors are unchanged (work for nothing)."""
    from tests.embedders import fixed_resolver

    env = {**store_env, "MEMORY_CONTEXT_VECTOR_WEIGHT": "0.35" if views else "0"}
    resolver = fixed_resolver("hash", 64)
    engine = make_engine(tmp_path / "x", env, resolver=resolver, start_indexing=False)
    try:
        assert engine.indexer.ready() is not None  # the index records its signature
        assert engine.status()["vectorStore"]["signature"].endswith(":ctx") == views
        # the flags are what is checked: no index worker may embed (and clear) them
        # meanwhile, as it did when it reached a create's notice after the edit
        engine.indexer.close()
        ids = conversation(engine)
        for row in engine.store.read().oldest_flagged(10):
            engine.store.write(lambda tx, m=row.id, c=row.content: tx.clear_flag_if_unchanged(m, c))
        engine.update(ids[1], MemoryPatch(content="Yes, on Saturdays now."))
        flagged = {row.id for row in engine.store.read().oldest_flagged(10)}
        # it, and (with views) the two whose view holds it
        assert flagged == ({ids[1], ids[2], ids[3]} if views else {ids[1]})
        for row in engine.store.read().oldest_flagged(10):
            engine.store.write(lambda tx, m=row.id, c=row.content: tx.clear_flag_if_unchanged(m, c))
        assert engine.delete(ids[2])
        flagged = {row.id for row in engine.store.read().oldest_flagged(10)}
        assert flagged == ({ids[3], ids[4]} if views else set())
    finally:
        engine.close()


def test_the_context_leg_brings_up_the_answer_turn(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    from tests.embedders import fixed_resolver

    found = {}
    for weight in ("0", "1"):
        env = {
            "MEMORY_CONTEXT_VECTOR_WEIGHT": weight,
            # the leg alone: no keyword context field, no neighbour or session prior
            "MEMORY_CONTEXT_FIELD_WEIGHT": "0",
            "MEMORY_NEIGHBOUR_WEIGHT": "0",
            "MEMORY_SESSION_WEIGHT": "0",
        }
        engine = make_engine(
            tmp_path / weight, {**store_env, **env}, resolver=fixed_resolver("hash", 64)
        )
        try:
            engine.settings.update({"relevanceFloor": 0})
            conversation(engine)
            for i, text in enumerate(
                ["Cats or dogs?", "Dogs, always.", "Why is that?", "They are good company."]
            ):
                engine.create(_new("o", text, f"x{i}", "s2"))
            assert engine.drain(timeout=60)
            preview = engine.preview("o", "still go swimming", strategy="hybrid", limit=9)
            found[weight] = [h.memory.content for h in preview.hits]
            assert vector_counts(engine)[1] == (9 if weight == "1" else 0)
        finally:
            engine.close()
    # only the second view of the answer shares the question's words: it rises from
    # among the unrelated memories to right after the two that say them
    assert found["0"].index(TURNS[1]) > 2
    assert found["1"].index(TURNS[1]) == 2


# -- upgrading a database written before context-aware indexing --------------------------


def test_the_migration_fills_the_context_of_existing_memories(tmp_path: Path) -> None:
    from memoryd.models import to_iso
    from memoryd.storage.sqlite.database import Database

    path = tmp_path / "old.db"
    conn = sqlite_at_version(path, 8)  # the release before context-aware indexing
    now = to_iso(utcnow())
    for i, text in enumerate(TURNS):
        conn.execute(
            "INSERT INTO memories (id, api_key_id, type, key, content, metadata, session_id, "
            "created_at, updated_at) VALUES (?, 'o', 'episodic', ?, ?, '{}', 's1', ?, ?)",
            (f"m{i}", f"k{i}", text, now, now),
        )
    conn.close()

    with Database(path, load_vec=False) as db:
        rows = dict(db.read().execute("SELECT id, context FROM memories").fetchall())
        assert rows["m1"] == "\n".join([TURNS[0], TURNS[2], TURNS[3]])
        assert rows["m4"] == "\n".join([TURNS[2], TURNS[3]])
        found = db.read().execute(
            "SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'context : swimming'"
        )
        assert len(found.fetchall()) == 2  # the two turns after the question
