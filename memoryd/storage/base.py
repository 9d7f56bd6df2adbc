"""The Store contract: everything the engine, indexer, vector tiers and API ask of the
primary store, and nothing about how it keeps it.

A store hands out *sessions*: ``read()`` gives a ``Reader`` (each call may see the
newest committed state), ``snapshot()`` one consistent ``Reader`` for several queries,
and ``write(fn)`` runs ``fn(writer)`` as one transaction, all or nothing, returning what
``fn`` returned once it is durable. So a multi-step change (upsert, then supersede the
slot) is one unit of work on any backend: the SQLite store commits it on its writer
thread, a server database in one transaction.

Protocols are grouped by concern (memories, settings, keys, the extraction and reindex
queues, the external vector tier's outbox); a ``Reader`` is all the read halves, a
``Writer`` a ``Reader`` that may also write. ``Filter`` and ``Clearing`` are the only
query language callers speak. ``tests/storage/contract.py`` runs this against every
backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from memoryd.models import (
    Memory,
    MemoryPatch,
    MemoryType,
    NewMemory,
    Reconcile,
    Reconciled,
)
from memoryd.storage.drivers import driver_errors as driver_errors
from memoryd.storage.drivers import register_driver as register_driver
from memoryd.storage.drivers import storage_error as storage_error
from memoryd.storage.faults import StorageFault as StorageFault
from memoryd.storage.faults import fault_status as fault_status
from memoryd.storage.jobs import ErasureReads, ErasureWrites, HeldReads, HeldWrites
from memoryd.storage.jobs import NewJob as NewJob
from memoryd.storage.jobs import QueuedJob as QueuedJob

T = TypeVar("T")

#: An API key row in ``(id, name, prefix, created_at, revoked_at, memory_enabled)``
#: order; ``memory_enabled`` is None (follow the global setting), 0 or 1. Never the hash.
KeyRow = tuple[Any, ...]
#: A memory waiting for its embedding: ``(id, owner, its text, its context view)``.
Flagged = tuple[str, str, str, str]


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
class NewKey:
    """A client key row to insert (the secret's hash, never the secret)."""

    key_id: str
    name: str
    key_hash: str
    prefix: str
    created_at: str  # canonical ISO-8601
    memory_enabled: bool | None = None
    revoked_at: str | None = None  # a copied revoked key stays revoked


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing: the rows, how many match, and per-type counts that
    ignore the type filter (so a UI can show every type as a tab)."""

    memories: list[Memory]
    total: int
    by_type: dict[str, int]
    tokens: int = 0  # estimated tokens of every matching memory (all pages)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What this store can do, probed once when it opens."""

    fts5: bool  # a keyword (full-text) index answers ``keyword_search``
    fts5_reason: str
    vec: bool  # an in-store vector index is available
    vec_reason: str
    sqlite_version: str  # the engine's version string, for status
    deferred_migrations: tuple[str, ...] = ()
    backend: str = "sqlite"  # sqlite | postgresql
    #: Several servers may use this store at once (PostgreSQL); the SQLite file is one
    #: server's (its data-dir lock), so what it left queued is that server's to run.
    shared: bool = False
    keyword_backend: str = "FTS5"  # what answers keyword_search, for status


@dataclass(frozen=True, slots=True)
class Change:
    """A row another process changed: ``table`` is ``memories`` (``key`` = its id),
    ``api_keys`` (the key id) or ``settings`` (the setting's key). ``table == "*"``
    means anything may have changed (notifications were lost): drop every cache."""

    table: str
    key: str = ""


#: What ``Change(ANY)`` means: the feed cannot say what changed.
ANY = "*"


# -- memory rows ---------------------------------------------------------------------------


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

    def usage(self, owner: str) -> tuple[int, int]:
        """``(rows, bytes)`` ``owner`` keeps: every end user, history included."""
        ...

    def recent(self, flt: Filter, limit: int) -> list[Memory]:
        """Newest first."""
        ...

    def keyword_search(
        self, query: str, flt: Filter, limit: int, context_weight: float = 0.0
    ) -> list[tuple[Memory, float]]:
        """Keyword matches of a free-text query, best first, as ``(memory, relevance)``
        with relevance > 0; ``context_weight``: the neighbours' field against the
        memory's own text (1.0; 0 ignores it). Only stop words: ``[]``."""
        ...

    def known_subjects(self, flt: Filter) -> list[str]:
        """Metadata ``subjects`` (lowercased) of what ``flt`` admits: who a query may name."""
        ...

    def hidden_counts(self, flt: Filter) -> dict[str, int]:
        """Current memories ``flt``'s expiry and retention cut hide:
        ``{"expired": n, "retention": n}``."""
        ...

    def neighbours(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Per id, the ids stored next to it in its session (context priors)."""
        ...

    def list_page(self, query: ListQuery) -> Page: ...

    def for_owner(self, owner: str, session_id: str | None = None) -> list[Memory]:
        """Every memory of an owner (one session), newest first, superseded included."""
        ...

    def owner_rows(self, owner: str, *, after: int, batch: int) -> list[tuple[int, Memory]]:
        """A keyset page for streaming export, oldest first: ``(cursor, memory)``;
        pass the last cursor as ``after`` (0 to start)."""
        ...

    def older_than(self, owner: str, cutoff: datetime) -> list[Memory]:
        """Current memories created before ``cutoff``, oldest first."""
        ...

    def decay_candidates(self, owner: str | None, limit: int) -> list[Memory]:
        """Oldest first, up to ``limit`` (at least 1)."""
        ...


class MemoryWrites(Protocol):
    def upsert(self, new: NewMemory, key: str, now: datetime) -> tuple[Memory, bool]:
        """Insert, or update in place on ``(owner, end user, key)``: ``(memory,
        created)``. Stating a superseded memory again makes it current again."""
        ...

    def reconcile(
        self, item: Reconcile, new: NewMemory | None, key: str, now: datetime
    ) -> Reconciled:
        """Upsert ``new`` (None: only retract), then supersede what it replaces: the
        owner's current memories in ``item.supersedes`` slots (``prefix:*`` = every
        slot under it) or with ``item.retract_ids``."""
        ...

    def restore_history(self, rows: Sequence[tuple[str, datetime, str | None]]) -> None:
        """Set ``(id, superseded_at, superseded_by)`` as an import found it."""
        ...

    def restore_usage(
        self, rows: Sequence[tuple[str, datetime | None, int, datetime | None]]
    ) -> None:
        """Set ``(id, updated_at, access_count, last_accessed_at)`` as another system
        kept them (a None time is left as it is)."""
        ...

    def update(self, memory_id: str, patch: MemoryPatch, now: datetime) -> Memory | None:
        """None for an unknown id. A changed content or key queues re-embedding."""
        ...

    def set_content(self, memory_id: str, content: str, now: datetime) -> None: ...
    def delete(self, memory_id: str) -> int | None:
        """The deleted row's sequence number (vector indexes key on it), or None."""
        ...

    def delete_matching(self, clearing: Clearing) -> list[tuple[str, int]]:
        """Delete every match: ``(id, seq)`` of each."""
        ...

    def delete_expired(self, now: datetime) -> list[tuple[str, int]]: ...
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


# -- settings, keys, queues ----------------------------------------------------------------


class SettingsReads(Protocol):
    def setting(self, key: str, default: Any = None) -> Any:
        """One JSON value; ``default`` when missing or unreadable."""
        ...

    def settings(self, prefix: str = "") -> dict[str, Any]:
        """Every key starting with ``prefix``, the prefix stripped."""
        ...


class SettingsWrites(Protocol):
    def write_settings(
        self, values: Mapping[str, Any], now: datetime, prefix: str = ""
    ) -> None: ...

    def delete_settings(self, keys: Iterable[str], prefix: str = "") -> None: ...

    def setting_default(self, key: str, value: Any, now: datetime) -> Any:
        """Store ``value`` under ``key`` unless something is stored; return what is
        stored. Writers racing on one key all get the same winner (a secret several
        servers must share, generated by whichever starts first)."""
        ...


class KeyReads(Protocol):
    def key(self, key_id: str) -> KeyRow | None: ...
    def key_by_hash(self, key_hash: str) -> KeyRow | None: ...  # revoked or not

    def keys(self, *, include_revoked: bool = True) -> list[KeyRow]:
        """Newest first; insertion order breaks ties."""
        ...

    def export_keys(self) -> list[NewKey]:
        """Every key with its hash, oldest first: for copying a store to another (the
        API never shows a hash)."""
        ...


class KeyWrites(Protocol):
    def insert_key(self, key: NewKey) -> bool:
        """False (nothing written) when the id is taken."""
        ...

    def revoke_key(self, key_id: str, revoked_at: str) -> bool: ...  # False: unknown/revoked

    def set_key_memory_enabled(self, key_id: str, value: bool | None) -> bool: ...


class QueueReads(Protocol):
    def queued_extractions(self) -> list[QueuedJob]:
        """Jobs never finished, oldest first (an unreadable job has no texts)."""
        ...

    def lease_of(self, job_id: int) -> tuple[str | None, datetime | None] | None:
        """``(claimed_by, claimed_until)`` of a queued job; None when it is gone."""
        ...

    def reindex_pending(self) -> int:
        """How many memories wait for their embedding."""
        ...

    def flagged(self, memory_ids: Sequence[str]) -> list[Flagged]:
        """Those of ``memory_ids`` still waiting for their embedding."""
        ...

    def oldest_flagged(self, limit: int) -> list[Flagged]: ...
    def newest_flagged_of(self, owner: str, limit: int) -> list[Flagged]: ...


class QueueWrites(Protocol):
    def queue_extraction(self, job: NewJob) -> int:
        """The new job's id."""
        ...

    def unqueue_extraction(self, job_id: int) -> None: ...
    def drop_queued_extractions(self, owner: str, user_id: str | None) -> int: ...
    def release_extractions(self, worker: str, keep: Sequence[int] = ()) -> int:
        """Free every job ``worker`` holds but ``keep``, for the next claimer; how many."""
        ...

    def claim_extractions(
        self, worker: str, now: datetime, until: datetime, limit: int
    ) -> list[QueuedJob]:
        """Take up to ``limit`` jobs nobody holds (never claimed, or their lease ran out
        before ``now``), oldest first, for ``worker`` until ``until``. Two servers
        claiming at once never get the same job."""
        ...

    def mark_all_reindex(self) -> int:
        """Queue every memory for embedding again; how many were not queued yet."""
        ...

    def clear_flag_if_unchanged(self, memory_id: str, content: str) -> bool:
        """Mark embedded only if the memory still has ``content`` (a racing edit
        stays queued)."""
        ...


class OutboxReads(Protocol):
    """The external vector tier's durable to-do list: memories whose payload or vector
    it lacks, and ids it must drop. Kept by the store itself (triggers, or the same
    transaction), so no write can slip past it."""

    def outbox_ready(self) -> bool: ...
    def outbox_exists(self) -> bool: ...
    def outbox_pending(self) -> int: ...
    def outbox_pushable(self) -> int:
        """Pending rows whose vector is ready (not waiting for embedding)."""
        ...

    def outbox_rows(self, after: int, limit: int) -> list[Any]:
        """Pushable rows with ``seq > after`` in ``seq`` order: ``(seq, gen, id,
        api_key_id, session_id, type, key, content, created_at, expires_at, emb, ctx_emb,
        ctx_text)``: float32 blobs of both views (or None), the context view's text."""
        ...

    def outbox_tombstones(self, limit: int) -> list[str]: ...


class OutboxWrites(Protocol):
    def create_outbox(self) -> None:
        """Create the to-do list if missing (idempotent)."""
        ...

    def outbox_queue_all(self) -> int:
        """Queue every memory again and forget tombstones (the backend starts empty)."""
        ...

    def outbox_done(self, done: Sequence[tuple[int, int]]) -> None:
        """Clear pushed ``(seq, gen)`` rows; a row whose ``gen`` moved stays."""
        ...

    def outbox_drop_tombstones(self, memory_ids: Sequence[str]) -> None: ...


class Reader(
    MemoryReads,
    SettingsReads,
    KeyReads,
    QueueReads,
    OutboxReads,
    ErasureReads,
    HeldReads,
    Protocol,
):
    """Everything a read may ask."""


class Writer(
    Reader,
    MemoryWrites,
    SettingsWrites,
    KeyWrites,
    QueueWrites,
    OutboxWrites,
    ErasureWrites,
    HeldWrites,
    Protocol,
):
    """A ``Reader`` inside a write transaction: it sees its own changes."""


class Store(Protocol):
    """A primary store. Thread-safe: any thread may read; writes are serialized."""

    capabilities: Capabilities

    def read(self) -> Reader: ...
    def snapshot(self) -> AbstractContextManager[Reader]:
        """One consistent view for several reads (one retrieval)."""
        ...

    def write(self, fn: Callable[[Writer], T]) -> T:
        """Run ``fn`` as one transaction; its result once durable. A ``write`` inside
        ``fn`` joins the same transaction, and is undone by itself if it raises (even
        when ``fn`` catches the error)."""
        ...

    def submit(self, fn: Callable[[Writer], T]) -> Future[T]:
        """``write`` without waiting (access counts, queue rows)."""
        ...

    def flush(self) -> None:
        """Return once every submitted write has committed."""
        ...

    @property
    def fault(self) -> StorageFault | None:
        """The storage failure writes hit (disk full, I/O), until a write succeeds."""
        ...

    def storage_status(self) -> dict[str, Any]: ...
    def probe(self) -> StorageFault | None:
        """Try a cheap write when faulted (rate-limited); the fault that remains."""
        ...

    def ping(self) -> None:
        """Raise if the store cannot answer a trivial read."""
        ...

    def scrub(self) -> None:
        """After an erasure: no deleted byte left in the store's files (SQLite zeroes
        deleted content and truncates its write-ahead log; on PostgreSQL the committed
        delete is the end of it)."""
        ...

    def watch(self, fn: Callable[[Change], None]) -> None:
        """Call ``fn`` (on a background thread) for every change committed to the store,
        so in-process caches follow writes made by other servers. A store only one
        server uses may never call it: that server's own writes drop its caches."""
        ...

    def close(self) -> None: ...
