"""``SqliteStore``: the Store contract (``memoryd.storage.base``) over one SQLite file.

A session is a connection plus the functions of this package's SQL modules bound to
it: reads on the calling thread's read-only connection, writes on the writer thread
inside ``Database.write`` (one transaction, group-committed with its neighbours).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from memoryd.core.fts_query import build_fts_query
from memoryd.models import Memory, MemoryPatch, NewMemory, Reconcile, Reconciled
from memoryd.storage.base import (
    Capabilities,
    Clearing,
    Filter,
    Flagged,
    KeyRow,
    ListQuery,
    NewJob,
    NewKey,
    Page,
    QueuedJob,
    Reader,
    StorageFault,
    Writer,
)
from memoryd.storage.sqlite import history, keys, kv, memories, qdrant_sync, queue, vectors
from memoryd.storage.sqlite.database import Connection, Database

T = TypeVar("T")


class SqliteSession:
    """One connection seen through the contract (a ``Reader``, or a ``Writer`` when the
    connection is the writer's)."""

    __slots__ = ("conn", "fts5")

    def __init__(self, conn: Connection, *, fts5: bool) -> None:
        self.conn = conn
        self.fts5 = fts5

    # -- memory reads ----------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory | None:
        return memories.get(self.conn, memory_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        return memories.get_many(self.conn, ids)

    def get_by_key(self, owner: str, key: str, user_id: str = "") -> Memory | None:
        return memories.get_by_key(self.conn, owner, key, user_id)

    def existing_ids(self, ids: Sequence[str], flt: Filter | None = None) -> set[str]:
        return memories.existing_ids(self.conn, ids, flt)

    def count(self) -> int:
        return memories.count(self.conn)

    def owners(self) -> list[str]:
        return memories.owners(self.conn)

    def tokens_used(self, owner: str | None = None) -> int:
        return memories.tokens_used(self.conn, owner)

    def recent(self, flt: Filter, limit: int) -> list[Memory]:
        return memories.recent(self.conn, flt, limit)

    def keyword_search(self, query: str, flt: Filter, limit: int) -> list[tuple[Memory, float]]:
        match = build_fts_query(query) if self.fts5 else None
        return [] if match is None else memories.fts_search(self.conn, match, flt, limit)

    def hidden_counts(self, flt: Filter) -> dict[str, int]:
        return memories.hidden_counts(self.conn, flt)

    def neighbours(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return memories.neighbours(self.conn, ids)

    def list_page(self, query: ListQuery) -> Page:
        return memories.list_page(self.conn, query)

    def for_owner(self, owner: str, session_id: str | None = None) -> list[Memory]:
        return memories.for_owner(self.conn, owner, session_id)

    def owner_rows(self, owner: str, *, after: int, batch: int) -> list[tuple[int, Memory]]:
        return memories.owner_rows(self.conn, owner, after_seq=after, batch=batch)

    def older_than(self, owner: str, cutoff: datetime) -> list[Memory]:
        return memories.older_than(self.conn, owner, cutoff)

    def decay_candidates(self, owner: str | None, limit: int) -> list[Memory]:
        return memories.decay_candidates(self.conn, owner, limit)

    # -- memory writes ---------------------------------------------------------------------

    def upsert(self, new: NewMemory, key: str, now: datetime) -> tuple[Memory, bool]:
        return memories.upsert(self.conn, new, key, now)

    def reconcile(
        self, item: Reconcile, new: NewMemory | None, key: str, now: datetime
    ) -> Reconciled:
        return history.reconcile(self.conn, item, new, key, now)

    def restore_history(self, rows: Sequence[tuple[str, datetime, str | None]]) -> None:
        history.restore_history(self.conn, rows)

    def update(self, memory_id: str, patch: MemoryPatch, now: datetime) -> Memory | None:
        return memories.update(self.conn, memory_id, patch, now)

    def set_content(self, memory_id: str, content: str, now: datetime) -> None:
        memories.set_content(self.conn, memory_id, content, now)

    def delete(self, memory_id: str) -> int | None:
        return memories.delete(self.conn, memory_id)

    def delete_matching(self, clearing: Clearing) -> list[tuple[str, int]]:
        return memories.delete_matching(self.conn, clearing)

    def delete_expired(self, now: datetime) -> list[tuple[str, int]]:
        return memories.delete_expired(self.conn, now)

    def bump_access(self, ids: Iterable[str], now: datetime) -> int:
        return memories.bump_access(self.conn, ids, now)

    def optimize_keyword_index(self) -> None:
        if self.fts5:
            memories.optimize_fts(self.conn)

    # -- settings and keys -----------------------------------------------------------------

    def setting(self, key: str, default: Any = None) -> Any:
        return kv.read_one(self.conn, key, default)

    def settings(self, prefix: str = "") -> dict[str, Any]:
        return kv.read_all(self.conn, prefix)

    def write_settings(self, values: Mapping[str, Any], now: datetime, prefix: str = "") -> None:
        kv.write_many(self.conn, values, now, prefix)

    def delete_settings(self, keys: Iterable[str], prefix: str = "") -> None:
        kv.delete_many(self.conn, keys, prefix)

    def key(self, key_id: str) -> KeyRow | None:
        return keys.get(self.conn, key_id)

    def key_by_hash(self, key_hash: str) -> KeyRow | None:
        return keys.get_by_hash(self.conn, key_hash)

    def keys(self, *, include_revoked: bool = True) -> list[KeyRow]:
        return keys.list_all(self.conn, include_revoked=include_revoked)

    def insert_key(self, key: NewKey) -> bool:
        return keys.insert(self.conn, key)

    def revoke_key(self, key_id: str, revoked_at: str) -> bool:
        return keys.revoke(self.conn, key_id, revoked_at)

    def set_key_memory_enabled(self, key_id: str, value: bool | None) -> bool:
        return keys.set_memory_enabled(self.conn, key_id, value)

    # -- the extraction and reindex queues -------------------------------------------------

    def queued_extractions(self) -> list[QueuedJob]:
        return queue.queued_extractions(self.conn)

    def queue_extraction(self, job: NewJob) -> int:
        return queue.queue_extraction(self.conn, job)

    def unqueue_extraction(self, job_id: int) -> None:
        queue.unqueue_extraction(self.conn, job_id)

    def reindex_pending(self) -> int:
        return memories.count_pending(self.conn)

    def flagged(self, memory_ids: Sequence[str]) -> list[Flagged]:
        return vectors.flagged(self.conn, memory_ids)

    def oldest_flagged(self, limit: int) -> list[Flagged]:
        return vectors.oldest_flagged(self.conn, limit)

    def newest_flagged_of(self, owner: str, limit: int) -> list[Flagged]:
        return vectors.newest_flagged_of(self.conn, owner, limit)

    def mark_all_reindex(self) -> int:
        return memories.mark_all_reindex(self.conn)

    def clear_flag_if_unchanged(self, memory_id: str, content: str) -> bool:
        return vectors.clear_flag_if_unchanged(self.conn, memory_id, content)

    # -- the external vector tier's outbox -------------------------------------------------

    def outbox_ready(self) -> bool:
        return qdrant_sync.schema_complete(self.conn)

    def outbox_exists(self) -> bool:
        return qdrant_sync.pending_table_exists(self.conn)

    def outbox_pending(self) -> int:
        return qdrant_sync.count_pending(self.conn)

    def outbox_pushable(self) -> int:
        return qdrant_sync.count_pushable(self.conn)

    def outbox_rows(self, after: int, limit: int) -> list[Any]:
        return qdrant_sync.pending_rows(self.conn, after, limit)

    def outbox_tombstones(self, limit: int) -> list[str]:
        return qdrant_sync.tombstones(self.conn, limit)

    def create_outbox(self) -> None:
        qdrant_sync.create_schema(self.conn)

    def outbox_queue_all(self) -> int:
        return qdrant_sync.queue_all(self.conn)

    def outbox_done(self, done: Sequence[tuple[int, int]]) -> None:
        qdrant_sync.drop_pending(self.conn, done)

    def outbox_drop_tombstones(self, memory_ids: Sequence[str]) -> None:
        qdrant_sync.drop_tombstones(self.conn, memory_ids)


class SqliteStore:
    """The embedded default store. ``db`` is the underlying ``Database`` for the parts
    that are SQLite by nature (sqlite-vec, backup, repair) and for tests."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.capabilities: Capabilities = db.capabilities
        self._fts5 = db.capabilities.fts5

    @classmethod
    def open(cls, path: str | Path, *, load_vec: bool = True) -> SqliteStore:
        return cls(Database(path, load_vec=load_vec))

    @property
    def path(self) -> Path:
        return self.db.path

    def _session(self, conn: Connection) -> SqliteSession:
        return SqliteSession(conn, fts5=self._fts5)

    def read(self) -> Reader:
        return self._session(self.db.read())

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Reader]:
        with self.db.snapshot() as conn:
            yield self._session(conn)

    def write(self, fn: Callable[[Writer], T]) -> T:
        return self.db.write(lambda conn: fn(self._session(conn)))

    def submit(self, fn: Callable[[Writer], T]) -> Future[T]:
        return self.db.submit(lambda conn: fn(self._session(conn)))

    def flush(self) -> None:
        self.db.flush()

    @property
    def fault(self) -> StorageFault | None:
        return self.db.fault

    def storage_status(self) -> dict[str, Any]:
        return self.db.storage_status()

    def probe(self) -> StorageFault | None:
        return self.db.probe()

    def ping(self) -> None:
        self.db.ping()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
