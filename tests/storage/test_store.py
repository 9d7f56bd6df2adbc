"""Store semantics through the engine (docs/design/storage.md#writes): CRUD, upsert,
list, cache, extraction.

A port of the reference's memory-store and memory-store-sync tests, plus tests for
the reference bugs memoryd fixes (B9 upsert expiry, owner scoping, escaped LIKE).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoryd.engine import MemoryEngine
from memoryd.errors import ValidationError
from memoryd.models import Memory, MemoryPatch, MemoryType, NewMemory, to_iso
from memoryd.storage.sql import flags
from tests.conftest import add

EXPIRES = datetime(2030, 4, 6, tzinfo=UTC)


def _day(day: int) -> datetime:
    return datetime(2026, 4, day, 12, 0, tzinfo=UTC)


def put(
    engine: MemoryEngine,
    memory_id: str,
    owner: str,
    content: str,
    *,
    day: int = 1,
    type: MemoryType = MemoryType.FACTUAL,
    session_id: str = "",
    key: str | None = None,
) -> Memory:
    """Create a memory with a chosen id and creation day."""
    memory, created = engine.create(
        NewMemory(
            id=memory_id,
            api_key_id=owner,
            content=content,
            key=key or f"test:{memory_id}",
            type=type,
            session_id=session_id,
            created_at=_day(day),
        )
    )
    assert created
    assert memory.id == memory_id
    return memory


def ids(memories: list[Memory]) -> list[str]:
    return [m.id for m in memories]


def _row_count(engine: MemoryEngine, where: str = "1", params: Any = ()) -> int:
    (n,) = next(
        iter(engine.store.db.read().execute(f"SELECT COUNT(*) FROM memories WHERE {where}", params))
    )
    return int(n)


def _needs_reindex(engine: MemoryEngine, memory_id: str) -> int:
    rows = engine.store.db.read().execute(
        "SELECT needs_reindex FROM memories WHERE id = ?", (memory_id,)
    )
    return int(next(iter(rows))[0])


# --- CRUD ------------------------------------------------------------------------------


def test_crud_round_trip(engine: MemoryEngine) -> None:
    created, is_new = engine.create(
        NewMemory(
            api_key_id="key-a",
            session_id="session-a",
            type=MemoryType.FACTUAL,
            key="preference:theme",
            content="User prefers a dark theme",
            metadata={"source": "test"},
            expires_at=EXPIRES,
        )
    )
    assert is_new
    assert created.id
    got = engine.get(created.id)
    assert got is not None
    assert got.api_key_id == "key-a"
    assert got.session_id == "session-a"
    assert got.key == "preference:theme"
    assert got.metadata == {"source": "test"}
    assert got.expires_at == EXPIRES
    assert got.to_dict()["expiresAt"] == "2030-04-06T00:00:00.000Z"

    updated = engine.update(
        created.id,
        MemoryPatch(
            type=MemoryType.EPISODIC,
            key="decision:layout",
            content="User chose a two-column layout",
            metadata={"source": "update"},
            clear_expiry=True,
        ),
    )
    assert updated is not None
    assert updated.id == created.id
    again = engine.get(created.id)
    assert again is not None
    assert again.type is MemoryType.EPISODIC
    assert again.key == "decision:layout"
    assert again.content == "User chose a two-column layout"
    assert again.metadata == {"source": "update"}
    assert again.expires_at is None
    assert again.created_at == created.created_at

    assert engine.delete(created.id) is True
    assert engine.get(created.id) is None
    assert engine.delete(created.id) is False
    assert _row_count(engine) == 0


def test_update_replaces_metadata(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "some fact", metadata={"a": 1, "b": 1})
    updated = engine.update(memory.id, MemoryPatch(metadata={"b": 2}))
    assert updated is not None
    assert updated.metadata == {"b": 2}


def test_update_sets_expiry_and_leaves_it_alone_otherwise(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "an expiring fact")
    updated = engine.update(memory.id, MemoryPatch(expires_at=EXPIRES))
    assert updated is not None
    assert updated.expires_at == EXPIRES
    untouched = engine.update(memory.id, MemoryPatch(content="an expiring fact, edited"))
    assert untouched is not None
    assert untouched.expires_at == EXPIRES


def test_get_of_empty_or_missing_id_is_none(engine: MemoryEngine) -> None:
    assert engine.get("") is None
    assert engine.get("missing-id") is None


def test_unreadable_metadata_reads_back_as_empty(engine: MemoryEngine) -> None:
    stamp = to_iso(_day(1))
    engine.store.db.write(
        lambda conn: conn.execute(
            "INSERT INTO memories (id, api_key_id, type, key, content, metadata, created_at, "
            "updated_at) VALUES ('bad-json', 'key-a', 'factual', 'k:bad', 'still readable', "
            "'{not-json', ?, ?)",
            (stamp, stamp),
        )
    )
    memory = engine.get("bad-json")
    assert memory is not None
    assert memory.metadata == {}
    assert memory.content == "still readable"
    assert ids(engine.list_memories(owner="key-a").data) == ["bad-json"]


def test_update_of_missing_id_and_list_of_missing_owner(engine: MemoryEngine) -> None:
    assert engine.update("missing-id", MemoryPatch(content="new content")) is None
    page = engine.list_memories(owner="missing-key")
    assert page.data == []
    assert page.total == 0
    assert page.by_type == {}
    assert _row_count(engine) == 0


# --- list ------------------------------------------------------------------------------


def test_list_filters_by_owner_session_and_type(engine: MemoryEngine) -> None:
    put(engine, "mem-1", "key-a", "first", day=1, session_id="session-a")
    put(engine, "mem-2", "key-a", "second", day=3, session_id="session-a", type=MemoryType.EPISODIC)
    put(engine, "mem-3", "key-b", "third", day=2, session_id="session-a")
    put(engine, "mem-4", "key-a", "other session", day=4, session_id="session-b")

    by_owner = engine.list_memories(owner="key-a")
    assert ids(by_owner.data) == ["mem-4", "mem-2", "mem-1"]
    assert by_owner.total == 3

    by_session = engine.list_memories(owner="key-a", session_id="session-a")
    assert ids(by_session.data) == ["mem-2", "mem-1"]
    assert by_session.total == 2

    episodic = engine.list_memories(owner="key-a", session_id="session-a", type=MemoryType.EPISODIC)
    assert ids(episodic.data) == ["mem-2"]
    assert episodic.total == 1
    # byType ignores the type filter (tabs show every type's count).
    assert episodic.by_type == {"factual": 1, "episodic": 1}

    everyone = engine.list_memories()
    assert ids(everyone.data) == ["mem-4", "mem-2", "mem-3", "mem-1"]


def test_pagination_by_offset_and_page(engine: MemoryEngine) -> None:
    for day in (1, 2, 3):
        put(engine, f"pg-{day}", "key-a", f"page row {day}", day=day)

    assert ids(engine.list_memories(owner="key-a", limit=1, offset=1).data) == ["pg-2"]
    by_offset = engine.list_memories(owner="key-a", offset=1)
    assert ids(by_offset.data) == ["pg-2", "pg-1"]
    assert by_offset.total == 3
    assert by_offset.limit == 50

    first = engine.list_memories(owner="key-a", page=1, limit=2)
    assert ids(first.data) == ["pg-3", "pg-2"]
    assert (first.total, first.page, first.total_pages) == (3, 1, 2)
    second = engine.list_memories(owner="key-a", page=2, limit=2)
    assert ids(second.data) == ["pg-1"]
    assert (second.total, second.page) == (3, 2)
    beyond = engine.list_memories(owner="key-a", page=99, limit=2)
    assert beyond.data == []
    assert (beyond.total, beyond.page, beyond.total_pages) == (3, 99, 2)
    assert ids(engine.list_memories(owner="key-a", limit=1).data) == ["pg-3"]


@pytest.mark.parametrize("kwargs", [{"limit": 0}, {"limit": 201}, {"page": 0}, {"offset": -1}])
def test_pagination_bounds_rejected(engine: MemoryEngine, kwargs: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        engine.list_memories(owner="key-a", **kwargs)


def test_limit_bounds_accepted(engine: MemoryEngine) -> None:
    put(engine, "only", "key-a", "one row")
    assert ids(engine.list_memories(owner="key-a", limit=1).data) == ["only"]
    assert ids(engine.list_memories(owner="key-a", limit=200).data) == ["only"]


def test_query_matches_content_or_key_case_insensitively(engine: MemoryEngine) -> None:
    put(engine, "search-1", "key-a", "TypeScript project setup", day=1, key="typescript:guide")
    put(
        engine,
        "search-2",
        "key-a",
        "Production deployment checklist",
        day=2,
        type=MemoryType.EPISODIC,
        key="ops:deploy",
    )
    put(
        engine,
        "search-3",
        "key-a",
        "Use strict compiler flags",
        day=3,
        type=MemoryType.SEMANTIC,
        key="tooling:TypeScript",
    )
    page = engine.list_memories(owner="key-a", q="typescript")
    assert ids(page.data) == ["search-3", "search-1"]
    assert page.total == 2
    assert page.by_type == {"factual": 1, "semantic": 1}
    assert ids(engine.list_memories(owner="key-a", q="CHECKLIST").data) == ["search-2"]


def test_query_escapes_like_wildcards(engine: MemoryEngine) -> None:
    put(engine, "pct", "key-a", "coverage is 100% now", day=1)
    put(engine, "num", "key-a", "coverage is 1000 lines", day=2)
    put(engine, "under", "key-a", "the a_b variable", day=3)
    put(engine, "x", "key-a", "the axb variable", day=4)
    put(engine, "slash", "key-a", "path C:\\temp\\file", day=5)

    assert ids(engine.list_memories(owner="key-a", q="100%").data) == ["pct"]
    assert ids(engine.list_memories(owner="key-a", q="a_b").data) == ["under"]
    assert ids(engine.list_memories(owner="key-a", q="\\").data) == ["slash"]
    assert ids(engine.list_memories(owner="key-a", q="%").data) == ["pct"]
    assert engine.list_memories(owner="key-a", q="_").total == 1  # only a_b (keys use ':')


# --- tokens ----------------------------------------------------------------------------


def test_tokens_used(engine: MemoryEngine) -> None:
    add(engine, "key-a", "aaaa")
    add(engine, "key-b", "aaaaaaaa")
    assert engine.tokens_used("key-a") == 1
    assert engine.tokens_used("key-b") == 2
    assert engine.tokens_used() == 3
    assert engine.tokens_used("missing-key") == 0
    add(engine, "key-f", "Hello World")
    assert engine.tokens_used("key-f") == 3


def test_tokens_used_rejects_empty_owner(engine: MemoryEngine) -> None:
    add(engine, "key-a", "aaaa")
    with pytest.raises(ValidationError):
        engine.tokens_used("")


# --- upsert ----------------------------------------------------------------------------


def test_upsert_on_owner_and_key(engine: MemoryEngine) -> None:
    first = add(
        engine,
        "key-b",
        "first content",
        key="upsert:test",
        metadata={"a": 1, "b": 1},
        created_at=datetime.now(UTC) - timedelta(days=1),
    )
    second, created = engine.create(
        NewMemory(
            api_key_id="key-b",
            key="upsert:test",
            content="second content",
            metadata={"b": 2, "c": 3},
        )
    )
    assert created is False
    assert second.id == first.id
    assert second.content == "second content"
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert second.metadata == {"a": 1, "b": 2, "c": 3}
    assert engine.get(first.id) == second
    assert _row_count(engine, "api_key_id = 'key-b' AND key = 'upsert:test'") == 1

    other, other_created = engine.create(
        NewMemory(api_key_id="key-c", key="upsert:test", content="another owner")
    )
    assert other_created
    assert other.id != first.id
    assert _row_count(engine) == 2
    kept = engine.get(first.id)
    assert kept is not None
    assert kept.content == "second content"


def test_upsert_with_expiry_stores_it(engine: MemoryEngine) -> None:
    """Reference bug B9: re-posting an existing key with expiresAt threw."""
    first = add(engine, "key-a", "temporary note", key="note:temp")
    assert first.expires_at is None
    again, created = engine.create(
        NewMemory(api_key_id="key-a", key="note:temp", content="temporary note", expires_at=EXPIRES)
    )
    assert created is False
    assert again.id == first.id
    assert again.expires_at == EXPIRES
    got = engine.get(first.id)
    assert got is not None
    assert got.expires_at == EXPIRES
    stored = engine.store.db.read().execute(
        "SELECT expires_at FROM memories WHERE id = ?", (first.id,)
    )
    assert next(iter(stored))[0] == "2030-04-06T00:00:00.000Z"


# --- validation ------------------------------------------------------------------------


@pytest.mark.parametrize("owner", ["", "   ", None])
def test_create_rejects_empty_owner(engine: MemoryEngine, owner: Any) -> None:
    with pytest.raises(ValidationError):
        engine.create(NewMemory(api_key_id=owner, content="orphan"))
    assert _row_count(engine) == 0


def test_reads_reject_empty_owner(engine: MemoryEngine) -> None:
    add(engine, "key-a", "belongs to key-a")
    with pytest.raises(ValidationError):
        engine.list_memories(owner="")
    with pytest.raises(ValidationError):
        engine.retrieve("")
    with pytest.raises(ValidationError):
        engine.export("")


@pytest.mark.parametrize("content", ["", "   ", None, 42])
def test_create_rejects_empty_content(engine: MemoryEngine, content: Any) -> None:
    with pytest.raises(ValidationError):
        engine.create(NewMemory(api_key_id="key-a", content=content))
    assert _row_count(engine) == 0


@pytest.mark.parametrize("metadata", [["a"], "text", 3])
def test_create_rejects_non_object_metadata(engine: MemoryEngine, metadata: Any) -> None:
    with pytest.raises(ValidationError):
        engine.create(NewMemory(api_key_id="key-a", content="x", metadata=metadata))
    memory = add(engine, "key-a", "valid")
    with pytest.raises(ValidationError):
        engine.update(memory.id, MemoryPatch(metadata=metadata))


def test_oversize_content_rejected(engine: MemoryEngine) -> None:
    limit = engine.config.max_content_chars
    with pytest.raises(ValidationError):
        engine.create(NewMemory(api_key_id="key-a", content="a" * (limit + 1)))
    memory, _ = engine.create(NewMemory(api_key_id="key-a", content="a" * limit))
    with pytest.raises(ValidationError):
        engine.update(memory.id, MemoryPatch(content="b" * (limit + 1)))
    got = engine.get(memory.id)
    assert got is not None
    assert got.content == "a" * limit


def test_update_to_a_taken_key_is_a_validation_error(engine: MemoryEngine) -> None:
    add(engine, "key-a", "first", key="k:one")
    second = add(engine, "key-a", "second", key="k:two")
    with pytest.raises(ValidationError) as info:
        engine.update(second.id, MemoryPatch(key="k:one", content="changed"))
    assert info.value.details[0]["field"] == "key"
    got = engine.get(second.id)
    assert got is not None
    assert (got.key, got.content) == ("k:two", "second")
    # The same key is free under another owner.
    other = add(engine, "key-b", "elsewhere", key="k:three")
    assert engine.update(other.id, MemoryPatch(key="k:one")) is not None


# --- derived keys and reindex flags ------------------------------------------------------


def test_derived_key_upserts_same_content(engine: MemoryEngine) -> None:
    first, created = engine.create(NewMemory(api_key_id="key-a", content="I like green tea"))
    assert created
    assert first.key.startswith("factual:")
    again, created_again = engine.create(NewMemory(api_key_id="key-a", content="I like green tea"))
    assert created_again is False
    assert again.id == first.id
    different, _ = engine.create(NewMemory(api_key_id="key-a", content="I like black tea"))
    assert different.id != first.id
    assert _row_count(engine) == 2


def test_needs_reindex_follows_content_not_metadata(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "vector pending")
    assert _needs_reindex(engine, memory.id) == 1
    engine.store.db.write(lambda conn: flags.mark_reindex(conn, memory.id, False))

    assert engine.update(memory.id, MemoryPatch(metadata={"tag": "x"})) is not None
    assert _needs_reindex(engine, memory.id) == 0
    assert memory.id not in [r[0] for r in flags.reindex_queue(engine.store.db.read(), 100)]

    assert engine.update(memory.id, MemoryPatch(content="vector pending")) is not None
    assert _needs_reindex(engine, memory.id) == 0  # same text: nothing to re-embed

    assert engine.update(memory.id, MemoryPatch(content="new content changed")) is not None
    assert _needs_reindex(engine, memory.id) == 1
    assert memory.id in [r[0] for r in flags.reindex_queue(engine.store.db.read(), 100)]


def test_upsert_with_new_content_marks_reindex(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "original", key="k:1")
    engine.store.db.write(lambda conn: flags.mark_reindex(conn, memory.id, False))
    engine.create(NewMemory(api_key_id="key-a", key="k:1", content="original", metadata={"m": 1}))
    assert _needs_reindex(engine, memory.id) == 0
    engine.create(NewMemory(api_key_id="key-a", key="k:1", content="rewritten"))
    assert _needs_reindex(engine, memory.id) == 1


# --- read cache and owner scoping ---------------------------------------------------------


def test_get_is_served_from_cache(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "cached fact")
    engine.cache.clear()
    assert engine.get(memory.id) == memory
    after_first = engine.cache.stats()
    assert engine.get(memory.id) == memory
    after_second = engine.cache.stats()
    assert after_second["hits"] == after_first["hits"] + 1
    assert after_second["misses"] == after_first["misses"]


def test_missing_ids_are_negatively_cached(engine: MemoryEngine) -> None:
    engine.cache.clear()
    assert engine.get("nope") is None
    assert engine.cache.stats()["misses"] == 1
    assert engine.get("nope") is None
    stats = engine.cache.stats()
    assert (stats["hits"], stats["misses"]) == (1, 1)


def test_creating_an_id_replaces_its_negative_cache_entry(engine: MemoryEngine) -> None:
    assert engine.get("later") is None
    put(engine, "later", "key-a", "now it exists")
    got = engine.get("later")
    assert got is not None
    assert got.content == "now it exists"


def test_writes_invalidate_the_cache(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "before")
    assert engine.get(memory.id) is not None  # cached
    engine.update(memory.id, MemoryPatch(content="after"))
    got = engine.get(memory.id)
    assert got is not None
    assert got.content == "after"
    assert engine.delete(memory.id)
    assert engine.get(memory.id) is None


def test_owner_scoped_get_update_delete(engine: MemoryEngine) -> None:
    memory = add(engine, "key-a", "private to key-a", metadata={"x": 1})
    assert engine.get(memory.id, owner="other") is None
    assert engine.get(memory.id, owner="key-a") == memory
    assert engine.update(memory.id, MemoryPatch(content="hijacked"), owner="other") is None
    assert engine.delete(memory.id, owner="other") is False
    engine.cache.clear()
    untouched = engine.get(memory.id)
    assert untouched is not None
    assert untouched.content == "private to key-a"
    assert untouched.metadata == {"x": 1}
    assert engine.delete(memory.id, owner="key-a") is True
    assert engine.get(memory.id) is None


# --- extraction through the engine -------------------------------------------------------


def _by_key(engine: MemoryEngine, owner: str) -> dict[str, Memory]:
    return {m.key: m for m in engine.list_memories(owner=owner, limit=200).data}


def test_extraction_stores_user_facts(engine: MemoryEngine) -> None:
    assert (
        engine.submit_extraction(
            "k",
            user_text="I prefer dark mode. I'll use Next.js here.",
            assistant_text="I always use ESLint in my projects.",
            session_id="s-1",
        )
        is not None
    )
    assert engine.drain()
    stored = _by_key(engine, "k")
    # dark mode is the display theme: one value at a time, whatever words
    assert "instruction:theme:dark_mode" in stored
    decisions = [m for key, m in stored.items() if key.startswith("decision:")]
    assert len(decisions) == 1
    assert "Next.js" in decisions[0].content
    assert decisions[0].type is MemoryType.EPISODIC
    assert len(stored) == 2  # the assistant text was ignored (extractFrom ["user"])
    pref = stored["instruction:theme:dark_mode"]
    assert pref.type is MemoryType.FACTUAL
    assert pref.session_id == "s-1"
    assert pref.metadata["category"] == "likes"
    assert pref.metadata["slot"] == "instruction:theme"
    assert pref.metadata["attribute"] == "ui_theme"
    assert pref.metadata["source"] == "user"
    assert pref.metadata["extractedAt"].endswith("Z")


def test_extraction_uses_assistant_text_when_enabled(engine: MemoryEngine) -> None:
    said = "I always use ESLint in my projects."
    assert engine.submit_extraction("k", assistant_text=said) is None
    engine.settings.update({"extractFrom": ["user", "assistant"]})
    assert engine.submit_extraction("k", assistant_text=said) is not None
    assert engine.drain()
    stored = _by_key(engine, "k")
    assert len(stored) == 1
    (memory,) = stored.values()
    assert memory.key.startswith("pattern:")
    assert "ESLint" in memory.content
    assert memory.metadata["source"] == "assistant"


def test_extraction_with_empty_owner_is_refused_quietly(engine: MemoryEngine) -> None:
    assert engine.submit_extraction("", user_text="I prefer dark mode.") is None
    assert engine.drain()
    assert _row_count(engine) == 0
