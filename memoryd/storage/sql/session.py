"""``SqlSession``: the Reader/Writer contract over the portable SQL of this package and
one backend's dialect (its keyword search and its outbox for the external tier).

A session runs each call through ``run``: bound to one connection inside a write or a
snapshot, or (PostgreSQL's ``read()``) taking a pooled connection per call. Both
backends share this class, so a contract method is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from memoryd.models import Erasure, Held, Memory, MemoryPatch, NewMemory, Reconcile, Reconciled
from memoryd.storage.contract.flags import Flagged
from memoryd.storage.contract.keys import KeyRow, NewKey
from memoryd.storage.contract.memories import (
    Clearing,
    Deleted,
    Filter,
    KeywordHit,
    ListQuery,
    OwnerRow,
    Page,
    Upserted,
)
from memoryd.storage.contract.outbox import OutboxRow
from memoryd.storage.contract.quarantine import NewHeld
from memoryd.storage.contract.queue import Lease, NewJob, QueuedJob
from memoryd.storage.contract.usage import Usage
from memoryd.storage.sql import (
    erasures,
    flags,
    history,
    keys,
    kv,
    memories,
    quarantine,
    queue,
    usage,
)

T = TypeVar("T")
#: Runs ``fn(conn)`` on the session's connection (or a pooled one) and returns its result.
Runner = Callable[[Callable[[Any], Any]], Any]


class Dialect(Protocol):
    """What a backend does its own way: keyword search and the outbox."""

    def keyword_search(
        self, conn: Any, query: str, flt: Filter, limit: int, context_weight: float
    ) -> list[KeywordHit]: ...
    def neighbours(self, conn: Any, ids: Sequence[str]) -> dict[str, tuple[str, ...]]: ...
    def optimize_keyword_index(self, conn: Any) -> None: ...
    def lock_rows(self, conn: Any, ids: Sequence[str]) -> None: ...
    def outbox_ready(self, conn: Any) -> bool: ...
    def outbox_exists(self, conn: Any) -> bool: ...
    def outbox_pending(self, conn: Any) -> int: ...
    def outbox_pushable(self, conn: Any) -> int: ...
    def outbox_rows(self, conn: Any, after: int, limit: int) -> list[OutboxRow]: ...
    def outbox_tombstones(self, conn: Any, limit: int) -> list[str]: ...
    def create_outbox(self, conn: Any) -> None: ...
    def outbox_queue_all(self, conn: Any) -> int: ...
    def outbox_done(self, conn: Any, done: Sequence[tuple[int, int]]) -> None: ...
    def outbox_drop_tombstones(self, conn: Any, memory_ids: Sequence[str]) -> None: ...


class SqlSession:
    """A ``Reader`` (and, inside a write, a ``Writer``) of a SQL store. ``conn`` is the
    connection the session is bound to, or None when each call takes its own."""

    __slots__ = ("conn", "dialect", "run")

    def __init__(self, run: Runner, dialect: Dialect, conn: Any = None) -> None:
        self.run = run
        self.dialect = dialect
        self.conn = conn

    def _do(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        result: T = self.run(lambda conn: fn(conn, *args, **kwargs))
        return result

    # -- memory reads ----------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory | None:
        return self._do(memories.get, memory_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        return self._do(memories.get_many, ids)

    def get_by_key(self, owner: str, key: str, user_id: str = "") -> Memory | None:
        return self._do(memories.get_by_key, owner, key, user_id)

    def existing_ids(self, ids: Sequence[str], flt: Filter | None = None) -> set[str]:
        return self._do(memories.existing_ids, ids, flt)

    def count(self) -> int:
        return self._do(memories.count)

    def owners(self) -> list[str]:
        return self._do(memories.owners)

    def tokens_used(self, owner: str | None = None) -> int:
        return self._do(memories.tokens_used, owner)

    def usage(self, owner: str) -> Usage:
        return self._do(usage.usage, owner)

    def recent(self, flt: Filter, limit: int) -> list[Memory]:
        return self._do(memories.recent, flt, limit)

    def keyword_search(
        self, query: str, flt: Filter, limit: int, context_weight: float = 0.0
    ) -> list[KeywordHit]:
        return self._do(self.dialect.keyword_search, query, flt, limit, context_weight)

    def known_subjects(self, flt: Filter) -> list[str]:
        return self._do(memories.known_subjects, flt)

    def hidden_counts(self, flt: Filter) -> dict[str, int]:
        return self._do(memories.hidden_counts, flt)

    def neighbours(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return self._do(self.dialect.neighbours, ids)

    def list_page(self, query: ListQuery) -> Page:
        return self._do(memories.list_page, query)

    def for_owner(self, owner: str, session_id: str | None = None) -> list[Memory]:
        return self._do(memories.for_owner, owner, session_id)

    def owner_rows(self, owner: str, *, after: int, batch: int) -> list[OwnerRow]:
        return self._do(memories.owner_rows, owner, after_seq=after, batch=batch)

    def older_than(self, owner: str, cutoff: datetime) -> list[Memory]:
        return self._do(memories.older_than, owner, cutoff)

    def decay_candidates(self, owner: str | None, limit: int) -> list[Memory]:
        return self._do(memories.decay_candidates, owner, limit)

    # -- memory writes ---------------------------------------------------------------------

    def upsert(self, new: NewMemory, key: str, now: datetime) -> Upserted:
        return self._do(memories.upsert, new, key, now)

    def reconcile(
        self, item: Reconcile, new: NewMemory | None, key: str, now: datetime
    ) -> Reconciled:
        return self._do(history.reconcile, item, new, key, now)

    def restore_history(self, rows: Sequence[tuple[str, datetime, str | None]]) -> None:
        self._do(history.restore_history, rows)

    def restore_usage(
        self, rows: Sequence[tuple[str, datetime | None, int, datetime | None]]
    ) -> None:
        self._do(history.restore_usage, rows)

    def update(self, memory_id: str, patch: MemoryPatch, now: datetime) -> Memory | None:
        return self._do(memories.update, memory_id, patch, now)

    def set_content(self, memory_id: str, content: str, now: datetime) -> None:
        self._do(memories.set_content, memory_id, content, now)

    def delete(self, memory_id: str) -> int | None:
        return self._do(memories.delete, memory_id)

    def delete_matching(self, clearing: Clearing) -> list[Deleted]:
        return self._do(memories.delete_matching, clearing)

    def delete_expired(self, now: datetime) -> list[Deleted]:
        return self._do(memories.delete_expired, now)

    def bump_access(self, ids: Iterable[str], now: datetime, times: int = 1) -> int:
        return self._do(memories.bump_access, ids, now, times)

    def lock_memories(self, ids: Iterable[str]) -> None:
        unique = sorted({i for i in ids if isinstance(i, str) and i})
        if unique:
            self._do(self.dialect.lock_rows, unique)

    def optimize_keyword_index(self) -> None:
        self._do(self.dialect.optimize_keyword_index)

    # -- settings and keys -----------------------------------------------------------------

    def setting(self, key: str, default: Any = None) -> Any:
        return self._do(kv.read_one, key, default)

    def settings(self, prefix: str = "") -> dict[str, Any]:
        return self._do(kv.read_all, prefix)

    def write_settings(self, values: Mapping[str, Any], now: datetime, prefix: str = "") -> None:
        self._do(kv.write_many, values, now, prefix)

    def delete_settings(self, keys: Iterable[str], prefix: str = "") -> None:
        self._do(kv.delete_many, list(keys), prefix)

    def setting_default(self, key: str, value: Any, now: datetime) -> Any:
        return self._do(kv.insert_default, key, value, now)

    def key(self, key_id: str) -> KeyRow | None:
        return self._do(keys.get, key_id)

    def key_by_hash(self, key_hash: str) -> KeyRow | None:
        return self._do(keys.get_by_hash, key_hash)

    def keys(self, *, include_revoked: bool = True) -> list[KeyRow]:
        return self._do(keys.list_all, include_revoked=include_revoked)

    def export_keys(self) -> list[NewKey]:
        return self._do(keys.export_all)

    def insert_key(self, key: NewKey) -> bool:
        return self._do(keys.insert, key)

    def revoke_key(self, key_id: str, revoked_at: str) -> bool:
        return self._do(keys.revoke, key_id, revoked_at)

    def set_key_memory_enabled(self, key_id: str, value: bool | None) -> bool:
        return self._do(keys.set_memory_enabled, key_id, value)

    # -- the extraction and reindex queues -------------------------------------------------

    def queued_extractions(self) -> list[QueuedJob]:
        return self._do(queue.queued_extractions)

    def queue_extraction(self, job: NewJob) -> int:
        return self._do(queue.queue_extraction, job)

    def unqueue_extraction(self, job_id: int) -> None:
        self._do(queue.unqueue_extraction, job_id)

    def drop_queued_extractions(self, owner: str, user_id: str | None) -> int:
        return self._do(queue.drop_queued, owner, user_id)

    def release_extractions(self, worker: str, keep: Sequence[int] = ()) -> int:
        return self._do(queue.release_extractions, worker, keep)

    # -- erasure receipts ----------------------------------------------------------------

    def record_erasure(self, erasure: Erasure) -> None:
        self._do(erasures.record, erasure)

    def erasures(self, owner: str | None, limit: int) -> list[Erasure]:
        return self._do(erasures.listed, owner, limit)

    def erased_since(self, owner: str, user_id: str, since: datetime) -> bool:
        return self._do(erasures.erased_since, owner, user_id, since)

    # -- messages held for review ----------------------------------------------------------

    def hold(self, item: NewHeld) -> int:
        return self._do(quarantine.hold, item)

    def held(self, owner: str | None, user_id: str | None, limit: int) -> list[Held]:
        return self._do(quarantine.listed, owner, user_id, limit)

    def held_one(self, held_id: int) -> Held | None:
        return self._do(quarantine.one, held_id)

    def unhold(self, held_id: int) -> Held | None:
        return self._do(quarantine.unhold, held_id)

    def drop_held(self, owner: str, user_id: str | None) -> int:
        return self._do(quarantine.drop, owner, user_id)

    def claim_extractions(
        self, worker: str, now: datetime, until: datetime, limit: int
    ) -> list[QueuedJob]:
        return self._do(queue.claim_extractions, worker, now, until, limit)

    def lease_of(self, job_id: int) -> Lease | None:
        return self._do(queue.lease_of, job_id)

    def reindex_pending(self) -> int:
        return self._do(flags.count_pending)

    def flagged(self, memory_ids: Sequence[str]) -> list[Flagged]:
        return self._do(flags.flagged, memory_ids)

    def oldest_flagged(self, limit: int) -> list[Flagged]:
        return self._do(flags.oldest_flagged, limit)

    def newest_flagged_of(self, owner: str, limit: int) -> list[Flagged]:
        return self._do(flags.newest_flagged_of, owner, limit)

    def mark_all_reindex(self) -> int:
        return self._do(flags.mark_all_reindex)

    def clear_flag_if_unchanged(self, memory_id: str, content: str) -> bool:
        return self._do(flags.clear_flag_if_unchanged, memory_id, content)

    # -- the external vector tier's outbox -------------------------------------------------

    def outbox_ready(self) -> bool:
        return self._do(self.dialect.outbox_ready)

    def outbox_exists(self) -> bool:
        return self._do(self.dialect.outbox_exists)

    def outbox_pending(self) -> int:
        return self._do(self.dialect.outbox_pending)

    def outbox_pushable(self) -> int:
        return self._do(self.dialect.outbox_pushable)

    def outbox_rows(self, after: int, limit: int) -> list[OutboxRow]:
        return self._do(self.dialect.outbox_rows, after, limit)

    def outbox_tombstones(self, limit: int) -> list[str]:
        return self._do(self.dialect.outbox_tombstones, limit)

    def create_outbox(self) -> None:
        self._do(self.dialect.create_outbox)

    def outbox_queue_all(self) -> int:
        return self._do(self.dialect.outbox_queue_all)

    def outbox_done(self, done: Sequence[tuple[int, int]]) -> None:
        self._do(self.dialect.outbox_done, done)

    def outbox_drop_tombstones(self, memory_ids: Sequence[str]) -> None:
        self._do(self.dialect.outbox_drop_tombstones, memory_ids)
