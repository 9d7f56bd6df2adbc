"""What every concern's contract tests share: fixed times, small builders of rows and
jobs, and ``Contract``, the base each concern's test class extends.

Times are explicit (``NOW`` and offsets from it, millisecond-aligned because that is
what a store keeps), so nothing sleeps and nothing depends on the wall clock.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Generic, Protocol

import pytest

from memoryd.models import Memory, MemoryType, NewMemory, utcnow
from memoryd.storage.base import Filter, NewJob, Reader, Store, Writer


def _ms(value: datetime) -> datetime:
    """``value`` truncated to milliseconds (the precision a store keeps)."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


NOW = _ms(utcnow())
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def job(
    owner: str,
    session_id: str,
    texts: Sequence[tuple[str, str]],
    now: datetime,
    user_id: str = "",
) -> NewJob:
    return NewJob(owner, session_id, texts, now, user_id)


class Boom(Exception):
    """Raised inside a write to prove the transaction rolls back."""


def new(
    owner: str,
    content: str,
    *,
    user_id: str = "",
    session_id: str = "",
    type: MemoryType = MemoryType.FACTUAL,
    metadata: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    created_at: datetime | None = None,
    memory_id: str | None = None,
) -> NewMemory:
    return NewMemory(
        api_key_id=owner,
        content=content,
        user_id=user_id,
        session_id=session_id,
        type=type,
        metadata=metadata,
        expires_at=expires_at,
        created_at=created_at,
        id=memory_id,
    )


def add(
    store: Store,
    owner: str,
    content: str,
    *,
    key: str | None = None,
    now: datetime = NOW,
    **fields: Any,
) -> Memory:
    """Store one new memory (its own transaction) and return it."""
    item = new(owner, content, **fields)
    stored = store.write(lambda w: w.upsert(item, key or content, now))
    assert stored.created, f"{owner}/{key or content} already existed"
    return stored.memory


def get(store: Store, memory_id: str) -> Memory:
    memory = store.read().get(memory_id)
    assert memory is not None, memory_id
    return memory


def ids(memories: Sequence[Memory]) -> list[str]:
    return [m.id for m in memories]


def flt(*owners: str, **fields: Any) -> Filter:
    """A retrieval filter over ``owners`` at ``NOW`` (unless ``now`` is given)."""
    fields.setdefault("now", NOW)
    return Filter(owners=owners, **fields)


def clear_flags(store: Store, *memories: Memory) -> None:
    """Mark memories as embedded (their reindex flag cleared)."""

    def run(w: Writer) -> None:
        for m in memories:
            assert w.clear_flag_if_unchanged(m.id, get_in(w, m.id).content)

    store.write(run)


def get_in(r: Reader, memory_id: str) -> Memory:
    memory = r.get(memory_id)
    assert memory is not None, memory_id
    return memory


class Contract:
    """A concern's contract tests; ``covers`` names the protocols they exercise (every
    member must be called in the concern's module). A backend's test class provides
    ``store``."""

    covers: ClassVar[tuple[type, ...]] = ()

    @pytest.fixture
    def store(self) -> Iterator[Store]:
        """Overridden by each backend's test class: an open, empty store, closed after."""
        raise NotImplementedError("a backend's test class must provide the `store` fixture")


def protocol_members() -> set[str]:
    """Public names (methods, properties, attributes) of ``Store``, ``Reader`` and
    ``Writer`` and of every concern protocol they are made of."""
    names: set[str] = set()
    for proto in (Store, Reader, Writer):
        for cls in proto.__mro__:
            if cls in (object, Protocol, Generic) or not getattr(cls, "_is_protocol", False):
                continue
            names |= {n for n in vars(cls) if not n.startswith("_")}
            names |= {n for n in getattr(cls, "__annotations__", {}) if not n.startswith("_")}
    return names
