"""Memory rows: point reads, retrieval, listings and writes in place, and the only
query language callers speak (``Filter``, ``Clearing``, ``ListQuery``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memoryd.models import Memory, MemoryPatch, MemoryType, NewMemory


@dataclass(frozen=True, slots=True)
class Filter:
    """Rows one retrieval may see: owners, optional session, not expired, in retention."""

    #: ``None`` = every owner (admin previews only); an empty tuple matches nothing.
    owners: tuple[str, ...] | None
    now: datetime
    session_id: str | None = None
    created_after: datetime | None = None
    type: MemoryType | None = None
    #: Superseded memories are history: retrieval never sees them.
    current_only: bool = True
    #: An end user of the key sees their own memories and the key's shared ones (""):
    #: never another end user's. None: every end user (admin views).
    user_id: str | None = None
    #: A named end user sees the key's shared rows too (the key's choice) ...
    shared: bool = True
    #: ... but never these attributes of them (instructions given with no end user).
    unshared: tuple[str, ...] = ()
    #: The profile only: rows pinned into it, or of these attributes and not unpinned.
    profile: tuple[str, ...] | None = None
    #: ... and its pinned rows (False: the attributes' rows alone, a question's read).
    pinned: bool = True


@dataclass(frozen=True, slots=True)
class Clearing:
    """Which of one owner's memories a bulk delete removes (every match, current or
    superseded). ``user_id`` None: every end user of the key; "" only its shared ones."""

    owner: str
    user_id: str | None = None
    type: MemoryType | None = None
    older_than: datetime | None = None


@dataclass(frozen=True, slots=True)
class ListQuery:
    """One page of a listing, newest first: ``q`` is a case-insensitive substring of
    content or key; ``user_id`` lists that end user's own memories ("" the shared ones);
    ``owner`` None lists every owner (admin only)."""

    owner: str | None = None
    type: MemoryType | None = None
    session_id: str | None = None
    q: str | None = None
    limit: int = 50
    offset: int = 0
    include_superseded: bool = False
    user_id: str | None = None


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing: the rows, how many match, and per-type counts that
    ignore the type filter (so a UI can show every type as a tab)."""

    memories: list[Memory]
    total: int
    by_type: dict[str, int]
    tokens: int = 0  # estimated tokens of every matching memory (all pages)


@dataclass(frozen=True, slots=True)
class KeywordHit:
    """One keyword match: the memory and its relevance (> 0, higher is better)."""

    memory: Memory
    relevance: float


@dataclass(frozen=True, slots=True)
class OwnerRow:
    """One row of an export page: ``cursor`` resumes the page after it (``after``)."""

    cursor: int
    memory: Memory


@dataclass(frozen=True, slots=True)
class Upserted:
    """An upsert's row as stored, and whether it was inserted (not updated in place)."""

    memory: Memory
    created: bool


@dataclass(frozen=True, slots=True)
class Deleted:
    """A deleted memory: its id, and its sequence number (the vector tiers key on it)."""

    id: str
    seq: int


class MemoryReads(Protocol):
    def get(self, memory_id: str) -> Memory | None: ...
    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]: ...
    def get_by_key(self, owner: str, key: str, user_id: str = "") -> Memory | None:
        """The owner's (end user's) memory under ``key``, current or superseded."""
        ...

    def existing_ids(self, ids: Sequence[str], flt: Filter | None = None) -> set[str]:
        """Those of ``ids`` that exist (and pass ``flt``): candidates from an external
        vector index are checked against the primary store before use."""
        ...

    def count(self) -> int: ...
    def owners(self) -> list[str]: ...
    def tokens_used(self, owner: str | None = None) -> int:
        """Approximate tokens stored (characters / 4, rounded up), for quotas."""
        ...

    def recent(self, flt: Filter, limit: int) -> list[Memory]:
        """Newest first."""
        ...

    def keyword_search(
        self, query: str, flt: Filter, limit: int, context_weight: float = 0.0
    ) -> list[KeywordHit]:
        """Keyword matches of a free-text query, best first, relevance > 0;
        ``context_weight``: the neighbours' field against the memory's own text (1.0;
        0 ignores it). Only stop words: ``[]``."""
        ...

    def known_subjects(self, flt: Filter) -> list[str]:
        """Metadata ``subjects`` (lowercased) of what ``flt`` admits: who a query may name."""
        ...

    def hidden_counts(self, flt: Filter) -> dict[str, int]:
        """Current memories ``flt``'s expiry and retention cut hide:
        ``{"expired": n, "retention": n}``."""
        ...

    def list_page(self, query: ListQuery) -> Page: ...

    def for_owner(self, owner: str, session_id: str | None = None) -> list[Memory]:
        """Every memory of an owner (one session), newest first, superseded included."""
        ...

    def owner_rows(self, owner: str, *, after: int, batch: int) -> list[OwnerRow]:
        """A keyset page for streaming export, oldest first; pass the last row's
        ``cursor`` as ``after`` (0 to start)."""
        ...

    def older_than(self, owner: str, cutoff: datetime) -> list[Memory]:
        """Current memories created before ``cutoff``, oldest first."""
        ...

    def decay_candidates(self, owner: str | None, limit: int) -> list[Memory]:
        """Oldest first, up to ``limit`` (at least 1)."""
        ...


class MemoryWrites(Protocol):
    def upsert(self, new: NewMemory, key: str, now: datetime) -> Upserted:
        """Insert, or update in place on ``(owner, end user, key)``. Stating a
        superseded memory again makes it current again."""
        ...

    def update(self, memory_id: str, patch: MemoryPatch, now: datetime) -> Memory | None:
        """None for an unknown id. A changed content or key queues re-embedding."""
        ...

    def set_content(self, memory_id: str, content: str, now: datetime) -> None: ...
    def delete(self, memory_id: str) -> int | None:
        """The deleted row's sequence number (vector indexes key on it), or None."""
        ...

    def delete_matching(self, clearing: Clearing) -> list[Deleted]:
        """Delete every match; each one's id and seq."""
        ...

    def delete_expired(self, now: datetime) -> list[Deleted]: ...
    def bump_access(self, ids: Iterable[str], now: datetime, times: int = 1) -> int:
        """Count ``times`` accesses of each distinct id; returns how many rows changed."""
        ...

    def lock_memories(self, ids: Iterable[str]) -> None:
        """Take these memories' row locks now, in id order, so that two transactions
        updating several of the same rows wait for each other instead of deadlocking
        (PostgreSQL; SQLite has one writer and needs none)."""
        ...

    def optimize_keyword_index(self) -> None:
        """Compact the keyword index after a large delete (a no-op where not needed)."""
        ...
