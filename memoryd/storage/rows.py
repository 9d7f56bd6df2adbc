"""Rows as both stores keep them: the column order of a memory row, its mapping to
``Memory``, and the small encodings every backend shares (metadata JSON, its slot,
LIKE escaping). No SQL and no driver here."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memoryd.core.scoring import parse_metadata
from memoryd.models import Memory, MemoryType, parse_iso

#: The memory columns in the order ``row_to_memory`` reads them (``m`` = memories).
COLUMNS = (
    "m.id, m.api_key_id, m.session_id, m.type, m.key, m.content, m.metadata, "
    "m.created_at, m.updated_at, m.expires_at, m.access_count, m.last_accessed_at, "
    "m.superseded_at, m.superseded_by, m.user_id"
)
#: How many values ``COLUMNS`` selects (extra selected values follow at this index).
NCOLS = 15


def optional_time(value: object) -> datetime | None:
    """A stored ISO time, or None when empty or unreadable.

    Both stores write ``to_iso``'s form, which ``fromisoformat`` reads straight to a UTC
    datetime in ~0.1 us: no cache needed (a cache of parsed strings filled with every new
    ``updated_at`` and access time a busy server wrote, ~20 MB before it stopped
    growing), and only other forms take ``parse_iso``'s slower normalising path."""
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    text = str(value)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = None
    if parsed is not None and parsed.tzinfo is UTC:
        return parsed
    try:
        return parse_iso(text)
    except ValueError:
        return None


def row_to_memory(row: Sequence[Any]) -> Memory:
    """The ``Memory`` of a row selected with ``COLUMNS`` (extra values after them are
    ignored). The same rows come back search after search, and building one (JSON,
    five times, an enum, a frozen dataclass) was a third of a keyword search: a row
    already seen with exactly these values returns the ``Memory`` built then. Keyed by
    every value, so a changed row is a new entry; ``Memory`` is frozen and nothing
    mutates its metadata in place."""
    values = tuple(row[:NCOLS])
    try:
        return _cached_memory(values)
    except TypeError:  # an unhashable value (a driver's JSON type): build it afresh
        return _build_memory(values)


@functools.lru_cache(maxsize=4096)
def _cached_memory(values: tuple[Any, ...]) -> Memory:
    return _build_memory(values)


def _build_memory(row: Sequence[Any]) -> Memory:
    created = optional_time(row[7])
    assert created is not None, "created_at is NOT NULL"
    return Memory(
        id=row[0],
        api_key_id=row[1],
        session_id=row[2] or "",
        type=MemoryType(row[3]),
        key=row[4],
        content=row[5],
        metadata=parse_metadata(row[6]),
        created_at=created,
        updated_at=optional_time(row[8]) or created,
        expires_at=optional_time(row[9]),
        access_count=int(row[10] or 0),
        last_accessed_at=optional_time(row[11]),
        superseded_at=optional_time(row[12]),
        superseded_by=row[13] or None,
        user_id=row[14] or "",
    )


def dumps(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), default=str)


def slot_of(metadata: dict[str, Any]) -> str | None:
    slot = metadata.get("slot")
    return slot if isinstance(slot, str) and slot else None


def attribute_of(metadata: dict[str, Any]) -> str | None:
    """The ``attribute`` column: what capture says the memory is about (the profile
    and topic lookups seek on it); None without one."""
    value = metadata.get("attribute")
    return value[:64] if isinstance(value, str) and value else None


#: The ``pinned`` column of a memory capture found to be a constraint advice must weigh
#: (metadata "careful"): the profile carries it, as it does a pinned one, by the same
#: partial index; a person's own pin or unpin wins.
CAREFUL = 2


def pinned_of(metadata: dict[str, Any]) -> int | None:
    """The ``pinned`` column: 1 pinned into the profile, 0 kept out of it,
    ``CAREFUL`` carried as a constraint, None when the attribute decides."""
    value = metadata.get("pinned")
    if isinstance(value, bool):
        return int(value)
    return CAREFUL if metadata.get("careful") is True else None


def derived(metadata: dict[str, Any]) -> list[Any]:
    """The metadata and the columns copied from it on every write: metadata, slot,
    subjects, attribute, pinned (``storage.sql.memories.DERIVED``)."""
    return [
        dumps(metadata),
        slot_of(metadata),
        subjects_of(metadata),
        attribute_of(metadata),
        pinned_of(metadata),
    ]


def subjects_of(metadata: dict[str, Any]) -> str | None:
    """The ``subjects`` column: metadata's subjects lowercased, sorted, as
    ``"|anna|user|"`` (a LIKE-free membership test is ``'%|anna|%'``); None without."""
    raw = metadata.get("subjects")
    if not isinstance(raw, list):
        return None
    names = sorted({s.strip().lower() for s in raw if isinstance(s, str) and s.strip()})
    return "|" + "|".join(names) + "|" if names else None


def escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
