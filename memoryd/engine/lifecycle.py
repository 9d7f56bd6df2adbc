"""Lifecycle (docs/design/storage.md#lifecycle): expiry, summarization, typed decay,
clear, export/import.

Functions over an engine, kept out of ``engine.py`` so the facade stays small. Every
operation is scoped to one owner (summaries never merge owners), and every delete
goes through the engine so the index tiers and the read cache hear about it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.core.decay import SWEEP_SCAN_CAP, is_decayed
from memoryd.core.summary import summarize_text, summary_line
from memoryd.engine.import_records import (
    MAX_IMPORT_LINE_BYTES as MAX_IMPORT_LINE_BYTES,  # re-export
)
from memoryd.engine.import_records import records
from memoryd.engine.reports import (
    Candidate,
    DecayReport,
    HealthReport,
    ImportResult,
    OwnerSummary,
    SessionSummary,
    SummaryReport,
)
from memoryd.errors import MemorydError, ValidationError, field_error
from memoryd.models import Memory, MemoryType, NewMemory, parse_iso, to_iso, utcnow, written_via
from memoryd.storage.base import Clearing, Deleted, Store, Writer

if TYPE_CHECKING:
    from memoryd.cache import TTLCache
    from memoryd.config import EngineConfig


class LifecycleHost(Protocol):
    """What lifecycle needs of the engine (``MemoryEngine`` is one), typed structurally
    so this module never imports the engine that imports it."""

    store: Store
    config: EngineConfig
    cache: TTLCache[str, Memory | None]
    tokens: Callable[[str], int]

    def check_new(self, new: NewMemory) -> tuple[NewMemory, str]: ...
    def create_many(self, items: Iterable[NewMemory]) -> list[tuple[Memory, bool]]: ...
    def delete(self, memory_id: str, *, owner: str | None = None) -> bool: ...
    def delete_by(self, select: Callable[[Writer], list[Deleted]]) -> int: ...
    def notify_written(self, memories: list[Memory]) -> None: ...
    def notify_deleted(self, removed: list[Deleted]) -> None: ...


IMPORT_BATCH = 500
EXPORT_PAGE = 500


def summarize(
    engine: LifecycleHost, owner: str, session_id: str | None, max_tokens: int
) -> SessionSummary:
    """Keep the newest memories that fit ``max_tokens``; compact the rest in place."""
    rows = engine.store.read().for_owner(owner, session_id)
    total = summarized = saved = 0
    changes: list[tuple[str, str]] = []
    for memory in rows:
        tokens = engine.tokens(memory.content)
        total += tokens
        if total <= max_tokens:
            continue
        summarized += 1
        short = summarize_text(memory.content)
        if short != memory.content:
            saved += tokens - engine.tokens(short)
            changes.append((memory.id, short))
    if changes:
        now = utcnow()

        def apply(tx: Writer) -> None:
            for memory_id, content in changes:
                tx.set_content(memory_id, content, now)

        engine.store.write(apply)
        for memory_id, _ in changes:
            engine.cache.invalidate(memory_id)
    return SessionSummary(len(rows), summarized, saved)


def _candidate(engine: LifecycleHost, memory: Memory) -> Candidate:
    return Candidate(
        id=memory.id,
        type=memory.type.value,
        key=memory.key,
        content=memory.content,
        tokens=engine.tokens(memory.content),
        created_at=to_iso(memory.created_at),
        user_id=memory.user_id,
        api_key_id=memory.api_key_id,
    )


def _check_days(days: object) -> int:
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 365:
        raise field_error("olderThanDays", "must be an integer from 1 to 365")
    return days


def summarize_older_than(
    engine: LifecycleHost,
    owner: str,
    days: int,
    *,
    dry_run: bool = False,
    user_id: str | None = None,
) -> SummaryReport:
    """One ``semantic`` summary per end user (and one of the shared memories) of this
    owner's memories older than ``days``, replacing them; ``user_id``: that one only."""
    _check_days(days)
    now = utcnow()
    old = engine.store.read().older_than(owner, now - timedelta(days=days))
    old = [m for m in old if user_id is None or m.user_id == user_id]
    candidates = [_candidate(engine, m) for m in old]
    result = SummaryReport(candidates, sum(c.tokens for c in candidates), dry_run=dry_run)
    if old:
        result.owners = [OwnerSummary(owner, len(old), result.total_tokens, 0, [])]
    if dry_run or not old:
        return result
    groups: dict[str, list[Memory]] = {}
    for memory in old:  # one summary per end user: never merged into a shared memory
        groups.setdefault(memory.user_id, []).append(memory)
    summaries = [_summary(engine, owner, user, rows, days, now) for user, rows in groups.items()]
    ids = [m.id for m in old]

    def apply(tx: Writer) -> tuple[list[Memory], list[Deleted]]:
        stored = [tx.upsert(s, s.key or "", now).memory for s in summaries]
        removed = []
        for memory_id in ids:
            seq = tx.delete(memory_id)
            if seq is not None:
                removed.append(Deleted(memory_id, seq))
        return stored, removed

    stored, removed = engine.store.write(apply)
    engine.notify_written(stored)
    engine.notify_deleted(removed)
    result.deleted_count = len(removed)
    result.summary_id = stored[0].id
    result.summary_ids = [m.id for m in stored]
    result.owners[0].deleted_count = result.deleted_count
    result.owners[0].summary_ids = list(result.summary_ids)
    return result


def summarize_every_owner(engine: LifecycleHost, days: int, *, dry_run: bool) -> SummaryReport:
    """``summarize_older_than`` for each owner in turn (the reference's call without an
    owner), so summaries still never merge owners; ``owners`` says what was done for
    each owner that had memories older than ``days``."""
    _check_days(days)
    total = SummaryReport([], 0, dry_run=dry_run)
    for owner in engine.store.read().owners():
        if owner == HEALTH_OWNER:  # a probe in flight, not a memory
            continue
        one = summarize_older_than(engine, owner, days, dry_run=dry_run)
        total.candidates += one.candidates
        total.total_tokens += one.total_tokens
        total.deleted_count += one.deleted_count
        total.summary_ids += one.summary_ids
        total.owners += one.owners
    total.summary_id = total.summary_ids[0] if total.summary_ids else None
    return total


def _summary(
    engine: LifecycleHost, owner: str, user_id: str, old: list[Memory], days: int, now: datetime
) -> NewMemory:
    lines = [summary_line(m.type.value, m.key, m.content) for m in old]
    content = f"Summary of {len(old)} memories older than {days} days:\n" + "\n".join(lines)
    return NewMemory(
        api_key_id=owner,
        user_id=user_id,
        content=content[: engine.config.max_content_chars],
        key=f"summary:{to_iso(now)}",
        type=MemoryType.SEMANTIC,
        metadata={"summarizedCount": len(old), "olderThanDays": days, "generatedAt": to_iso(now)},
    )


def sweep_decay(
    engine: LifecycleHost, *, dry_run: bool, owner: str | None, now: datetime | None
) -> DecayReport:
    """Delete episodic memories past their typed TTL (opt-in; a dry run always reports)."""
    config = engine.config.decay
    if not config.enabled and not dry_run:
        return DecayReport(skipped_disabled=True)
    now = now or utcnow()
    rows = engine.store.read().decay_candidates(owner, SWEEP_SCAN_CAP + 1)
    capped = len(rows) > SWEEP_SCAN_CAP
    rows = rows[:SWEEP_SCAN_CAP]
    active = replace(config, enabled=True)
    decayed = [m.id for m in rows if is_decayed(m, active, now)]
    deleted = [] if dry_run else [i for i in decayed if engine.delete(i)]
    return DecayReport(len(rows), len(decayed), deleted, capped=capped)


def delete_expired(engine: LifecycleHost, now: datetime) -> int:
    count = engine.delete_by(lambda tx: tx.delete_expired(now))
    if count:
        engine.store.write(lambda tx: tx.optimize_keyword_index())
    return count


def clear(
    engine: LifecycleHost,
    owner: str,
    *,
    type: MemoryType | None = None,
    older_than: datetime | None = None,
    user_id: str | None = None,
) -> int:
    """Delete every match (not one page) within one owner (one end user of it)."""
    clearing = Clearing(owner, user_id=user_id, type=type, older_than=older_than)
    count = engine.delete_by(lambda tx: tx.delete_matching(clearing))
    if count:
        engine.store.write(lambda tx: tx.optimize_keyword_index())
    return count


def export(
    engine: LifecycleHost, owner: str, user_id: str | None = None
) -> Iterator[dict[str, Any]]:
    """Every memory of an owner (or of one end user of it), oldest first, streamed page
    by page; superseded ones included, as history."""
    after = 0
    while True:
        page = engine.store.read().owner_rows(owner, after=after, batch=EXPORT_PAGE)
        if not page:
            return
        for row in page:
            after = row.cursor
            if user_id is None or row.memory.user_id == user_id:
                yield row.memory.to_dict()


def _time(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise field_error(name, "must be an ISO-8601 string or null")
    try:
        return parse_iso(value)
    except ValueError:
        raise field_error(name, f"not an ISO-8601 date: {value!r}") from None


def parse_line(data: object, owner: str | None) -> NewMemory:
    """A memory JSON object (the export format) as a NewMemory; ``owner`` wins."""
    if not isinstance(data, dict):
        raise ValidationError("not a JSON object")
    raw_type = data.get("type", "factual")
    try:
        memory_type = MemoryType(raw_type)
    except ValueError:
        raise field_error("type", f"unknown type {raw_type!r}") from None
    api_key_id = owner if owner is not None else data.get("apiKeyId")
    memory_id = data.get("id")
    user = data.get("userId")
    if user is not None and not isinstance(user, str):  # was taken as shared: all saw it
        raise field_error("userId", "must be a string or null")
    created_at = _time(data.get("createdAt"), "createdAt")
    metadata = data.get("metadata")
    # A line with an id is a memoryd export: restored as it was exported. Others came
    # from elsewhere and say so (a non-object is refused by the engine).
    if not (isinstance(memory_id, str) and memory_id) and (
        metadata is None or isinstance(metadata, dict)
    ):
        metadata = written_via(metadata, "import", created_at)
    return NewMemory(
        api_key_id=api_key_id,  # type: ignore[arg-type]  # validated by the engine
        user_id=user or "",
        content=data.get("content"),  # type: ignore[arg-type]
        key=data.get("key"),
        type=memory_type,
        session_id=data.get("sessionId") or "",
        metadata=metadata,
        expires_at=_time(data.get("expiresAt"), "expiresAt"),
        created_at=created_at,
        id=memory_id if isinstance(memory_id, str) and memory_id else None,
    )


def _unchanged(existing: Memory | None, new: NewMemory) -> bool:
    return (
        existing is not None
        and existing.content == new.content
        and existing.type == new.type
        and existing.session_id == new.session_id
        and existing.expires_at == new.expires_at
        and {**existing.metadata, **(new.metadata or {})} == existing.metadata
    )


def _own_link(
    engine: LifecycleHost, memory: Memory, at: datetime, by: str | None
) -> tuple[datetime, str | None]:
    """``supersededBy`` only when it names a memory of the same owner (or none yet): an
    export imported under another owner beside the original gets new ids, and its history
    pointed at the original owner's memories."""
    if by is not None:
        other = engine.store.read().get(by)
        if other is not None and other.api_key_id != memory.api_key_id:
            return at, None
    return at, by


def import_jsonl(
    engine: LifecycleHost,
    lines: Iterable[str | bytes],
    *,
    owner: str | None,
    user_id: str | None = None,
) -> ImportResult:
    """Upsert JSON Lines (or one JSON array of the same objects) by ``(owner, key)``; a
    bad line is reported with its number (an array's item with its number and the line
    it starts on) and the others are still imported."""
    result = ImportResult()
    batch: list[NewMemory] = []
    retire: dict[str, tuple[datetime, str | None]] = {}  # key -> supersededAt/By

    def flush() -> None:
        if not batch:
            return
        stored = engine.create_many(batch)
        for _, created in stored:
            if created:
                result.imported += 1
            else:
                result.updated += 1
        retired = [
            (m.id, *_own_link(engine, m, *retire[m.key])) for m, _ in stored if m.key in retire
        ]
        if retired:  # history round-trips: a superseded memory is imported as history
            engine.store.write(lambda tx: tx.restore_history(retired))
            for memory_id, _, _ in retired:
                engine.cache.invalidate(memory_id)
        batch.clear()
        retire.clear()

    for line, item, data in records(lines):
        try:
            if isinstance(data, MemorydError):
                raise data
            parsed = parse_line(data, owner)
            if user_id is not None:
                parsed = replace(parsed, user_id=user_id)
            new, key = engine.check_new(parsed)
            new = replace(new, key=key)
            at = _time(data.get("supersededAt"), "supersededAt")
            by = data.get("supersededBy")
            existing = engine.store.read().get_by_key(new.api_key_id, key, new.user_id)
            if _unchanged(existing, new) and (existing and existing.superseded_at) == at:
                result.skipped += 1
                continue
            if at is not None:
                retire[key] = (at, by if isinstance(by, str) and by else None)
        except MemorydError as exc:
            where = {"line": line} if item is None else {"line": line, "item": item}
            result.errors.append({**where, "message": exc.message})
            continue
        batch.append(new)
        if len(batch) >= IMPORT_BATCH:
            flush()
    flush()
    return result


HEALTH_OWNER = "__memoryd_health__"


def health_check(engine: LifecycleHost) -> HealthReport:
    """A real write -> read -> delete round trip, in one transaction that leaves no
    trace (and no vector work: the index tiers are never told)."""
    import time
    import uuid

    start = time.perf_counter()
    probe = NewMemory(HEALTH_OWNER, "memoryd health probe", key=f"health:{uuid.uuid4()}")

    def roundtrip(tx: Writer) -> bool:
        stored = tx.upsert(probe, probe.key or "", utcnow()).memory
        read_back = tx.get(stored.id)
        removed = tx.delete(stored.id)
        return read_back is not None and read_back.content == probe.content and removed is not None

    try:
        working = bool(engine.store.write(roundtrip))
        error = None if working else "read back a different row"
    except Exception as exc:
        working, error = False, str(exc)
    result = HealthReport(working, round((time.perf_counter() - start) * 1000, 3), error)
    fault = engine.store.fault  # set by this very round trip when the disk is full
    if fault is not None:
        result.storage_fault = fault.code
        result.reason = fault.reason
    return result
