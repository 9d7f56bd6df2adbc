"""Memory rows as both stores return them, and the cache of built ``Memory`` objects."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memoryd.engine import MemoryEngine
from memoryd.models import MemoryPatch, NewMemory
from memoryd.storage.rows import NCOLS, optional_time, row_to_memory

ROW = (
    "id-1",
    "key-1",
    "",
    "factual",
    "k",
    "Anna lives in Lisbon",
    '{"subjects": ["anna"]}',
    "2026-01-02T03:04:05.000Z",
    "2026-01-02T03:04:05.000Z",
    None,
    3,
    None,
    None,
    None,
    "",
)


def test_a_row_seen_again_returns_an_equal_memory_and_a_changed_row_a_new_one() -> None:
    assert len(ROW) == NCOLS
    first = row_to_memory(ROW)
    assert first.metadata == {"subjects": ["anna"]}
    assert first.access_count == 3
    # Extra values (a rank) do not make another memory.
    assert row_to_memory((*ROW, -1.5)) == first
    bumped = row_to_memory((*ROW[:10], 4, *ROW[11:]))
    assert bumped.access_count == 4
    edited = row_to_memory((*ROW[:5], "Anna lives in Porto", *ROW[6:]))
    assert edited.content == "Anna lives in Porto"
    assert row_to_memory(ROW).content == "Anna lives in Lisbon"


def test_an_unhashable_value_is_built_without_the_cache() -> None:
    row = list(ROW)
    row[6] = {"subjects": ["anna"]}  # a driver's decoded JSON
    assert row_to_memory(row).metadata == {"subjects": ["anna"]}


def test_reads_after_an_update_see_the_update(engine: MemoryEngine) -> None:
    memory, _ = engine.create(NewMemory(api_key_id="k", content="the tide is low"))
    for _ in range(2):  # the second read is served from the cache
        again = engine.get(memory.id, owner="k")
        assert again is not None
        assert again.content == "the tide is low"
    engine.update(memory.id, MemoryPatch(content="the tide is high"), owner="k")
    after = engine.get(memory.id, owner="k")
    assert after is not None
    assert after.content == "the tide is high"
    assert [h.memory.content for h in engine.retrieve("k", "tide")] == ["the tide is high"]


def test_stored_times_in_every_form_read_as_utc() -> None:
    expected = datetime(2026, 1, 2, 3, 4, 5, 123000, tzinfo=UTC)
    for text in (
        "2026-01-02T03:04:05.123Z",  # to_iso's form, the fast path
        "2026-01-02T03:04:05.123+00:00",
        "2026-01-02T05:04:05.123+02:00",  # an offset is converted, not kept
        "2026-01-02 03:04:05.123",  # SQLite's naive space form is UTC
        " 2026-01-02T03:04:05.123z ",
    ):
        parsed = optional_time(text)
        assert parsed == expected, text
        assert parsed is not None, text
        assert parsed.utcoffset() == timedelta(0), text
    assert optional_time("not a time") is None
    assert optional_time("") is None
    assert optional_time(None) is None
    assert optional_time(expected) is expected
