"""``PostgresStore``: the Store contract (``memoryd.storage.base``) on PostgreSQL.

A session is either bound to one connection (inside ``write`` or ``snapshot``) or
takes a pooled connection per call (``read()``); either way its methods are the
functions of ``memories`` and ``tables`` with that connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import Any, TypeVar

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
from memoryd.storage.postgres import memories, tables
from memoryd.storage.postgres.database import PgDatabase

T = TypeVar("T")


class PgSession:
    __slots__ = ("conn", "db")

    def __init__(self, db: PgDatabase, conn: Any = None) -> None:
        self.db = db
        self.conn = conn

    def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self.conn is not None:
            return fn(self.conn, *args, **kwargs)
        with self.db.connection() as conn:
            return fn(conn, *args, **kwargs)

    # -- memory reads ----------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory | None:
        return self._run(memories.get, memory_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        return self._run(memories.get_many, ids)

    def get_by_key(self, owner: str, key: str, user_id: str = "") -> Memory | None:
        return self._run(memories.get_by_key, owner, key, user_id)

    def existing_ids(self, ids: Sequence[str], flt: Filter | None = None) -> set[str]:
        return self._run(memories.existing_ids, ids, flt)

    def count(self) -> int:
        return self._run(memories.count)

    def owners(self) -> list[str]:
        return self._run(memories.owners)

    def tokens_used(self, owner: str | None = None) -> int:
        return self._run(memories.tokens_used, owner)

    def recent(self, flt: Filter, limit: int) -> list[Memory]:
        return self._run(memories.recent, flt, limit)

    def keyword_search(self, query: str, flt: Filter, limit: int) -> list[tuple[Memory, float]]:
        return self._run(memories.keyword_search, query, flt, limit)

    def hidden_counts(self, flt: Filter) -> dict[str, int]:
        return self._run(memories.hidden_counts, flt)

    def neighbours(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return self._run(memories.neighbours, ids)

    def list_page(self, query: ListQuery) -> Page:
        return self._run(memories.list_page, query)

    def for_owner(self, owner: str, session_id: str | None = None) -> list[Memory]:
        return self._run(memories.for_owner, owner, session_id)

    def owner_rows(self, owner: str, *, after: int, batch: int) -> list[tuple[int, Memory]]:
        return self._run(memories.owner_rows, owner, after=after, batch=batch)

    def older_than(self, owner: str, cutoff: datetime) -> list[Memory]:
        return self._run(memories.older_than, owner, cutoff)

    def decay_candidates(self, owner: str | None, limit: int) -> list[Memory]:
        return self._run(memories.decay_candidates, owner, limit)

    # -- memory writes ---------------------------------------------------------------------

    def upsert(self, new: NewMemory, key: str, now: datetime) -> tuple[Memory, bool]:
        return self._run(memories.upsert, new, key, now)

    def reconcile(
        self, item: Reconcile, new: NewMemory | None, key: str, now: datetime
    ) -> Reconciled:
        return self._run(memories.reconcile, item, new, key, now)

    def restore_history(self, rows: Sequence[tuple[str, datetime, str | None]]) -> None:
        self._run(memories.restore_history, rows)

    def update(self, memory_id: str, patch: MemoryPatch, now: datetime) -> Memory | None:
        return self._run(memories.update, memory_id, patch, now)

    def set_content(self, memory_id: str, content: str, now: datetime) -> None:
        self._run(memories.set_content, memory_id, content, now)

    def delete(self, memory_id: str) -> int | None:
        return self._run(memories.delete, memory_id)

    def delete_matching(self, clearing: Clearing) -> list[tuple[str, int]]:
        return self._run(memories.delete_matching, clearing)

    def delete_expired(self, now: datetime) -> list[tuple[str, int]]:
        return self._run(memories.delete_expired, now)

    def bump_access(self, ids: Iterable[str], now: datetime) -> int:
        return self._run(memories.bump_access, ids, now)

    def optimize_keyword_index(self) -> None:
        return None  # GIN indexes need no compaction after deletes (autovacuum does it)

    # -- settings and keys -----------------------------------------------------------------

    def setting(self, key: str, default: Any = None) -> Any:
        return self._run(tables.setting, key, default)

    def settings(self, prefix: str = "") -> dict[str, Any]:
        return self._run(tables.settings, prefix)

    def write_settings(self, values: Mapping[str, Any], now: datetime, prefix: str = "") -> None:
        self._run(tables.write_settings, values, now, prefix)

    def delete_settings(self, keys: Iterable[str], prefix: str = "") -> None:
        self._run(tables.delete_settings, list(keys), prefix)

    def key(self, key_id: str) -> KeyRow | None:
        return self._run(tables.key, key_id)

    def key_by_hash(self, key_hash: str) -> KeyRow | None:
        return self._run(tables.key_by_hash, key_hash)

    def keys(self, *, include_revoked: bool = True) -> list[KeyRow]:
        return self._run(tables.keys, include_revoked=include_revoked)

    def insert_key(self, key: NewKey) -> bool:
        return self._run(tables.insert_key, key)

    def revoke_key(self, key_id: str, revoked_at: str) -> bool:
        return self._run(tables.revoke_key, key_id, revoked_at)

    def set_key_memory_enabled(self, key_id: str, value: bool | None) -> bool:
        return self._run(tables.set_key_memory_enabled, key_id, value)

    # -- the extraction and reindex queues -------------------------------------------------

    def queued_extractions(self) -> list[QueuedJob]:
        return self._run(tables.queued_extractions)

    def queue_extraction(self, job: NewJob) -> int:
        return self._run(tables.queue_extraction, job)

    def unqueue_extraction(self, job_id: int) -> None:
        self._run(tables.unqueue_extraction, job_id)

    def reindex_pending(self) -> int:
        return self._run(tables.reindex_pending)

    def flagged(self, memory_ids: Sequence[str]) -> list[Flagged]:
        return self._run(tables.flagged, memory_ids)

    def oldest_flagged(self, limit: int) -> list[Flagged]:
        return self._run(tables.oldest_flagged, limit)

    def newest_flagged_of(self, owner: str, limit: int) -> list[Flagged]:
        return self._run(tables.newest_flagged_of, owner, limit)

    def mark_all_reindex(self) -> int:
        return self._run(tables.mark_all_reindex)

    def clear_flag_if_unchanged(self, memory_id: str, content: str) -> bool:
        return self._run(tables.clear_flag_if_unchanged, memory_id, content)

    # -- the external vector tier's outbox -------------------------------------------------

    def outbox_ready(self) -> bool:
        return self._run(tables.outbox_active)

    def outbox_exists(self) -> bool:
        return self._run(tables.outbox_active)

    def outbox_pending(self) -> int:
        return self._run(tables.outbox_pending)

    def outbox_pushable(self) -> int:
        return self._run(tables.outbox_pushable)

    def outbox_rows(self, after: int, limit: int) -> list[Any]:
        return self._run(tables.outbox_rows, after, limit)

    def outbox_tombstones(self, limit: int) -> list[str]:
        return self._run(tables.outbox_tombstones, limit)

    def create_outbox(self) -> None:
        self._run(tables.create_outbox)

    def outbox_queue_all(self) -> int:
        return self._run(tables.outbox_queue_all)

    def outbox_done(self, done: Sequence[tuple[int, int]]) -> None:
        self._run(tables.outbox_done, done)

    def outbox_drop_tombstones(self, memory_ids: Sequence[str]) -> None:
        self._run(tables.outbox_drop_tombstones, memory_ids)


class PostgresStore:
    """The shared store for several memoryd servers (``MEMORYD_DATABASE_URL``)."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        self.capabilities: Capabilities = db.capabilities

    @classmethod
    def open(cls, url: str, *, pool_size: int = 10) -> PostgresStore:
        return cls(PgDatabase(url, max_size=pool_size))

    def read(self) -> Reader:
        return PgSession(self.db)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Reader]:
        with self.db.snapshot() as conn:
            yield PgSession(self.db, conn)

    def write(self, fn: Callable[[Writer], T]) -> T:
        return self.db.write(lambda conn: fn(PgSession(self.db, conn)))

    def submit(self, fn: Callable[[Writer], T]) -> Future[T]:
        return self.db.submit(lambda conn: fn(PgSession(self.db, conn)))

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

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
