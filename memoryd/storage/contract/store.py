"""``Store``: what hands out sessions, and ``Reader``/``Writer``, the sessions, made of
every concern's protocols. A ``Reader`` is all the read halves, a ``Writer`` a
``Reader`` that may also write, inside one transaction."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from memoryd.storage.contract.context import ContextReads
from memoryd.storage.contract.erasures import ErasureReads, ErasureWrites
from memoryd.storage.contract.flags import FlagReads, FlagWrites
from memoryd.storage.contract.history import HistoryWrites
from memoryd.storage.contract.keys import KeyReads, KeyWrites
from memoryd.storage.contract.kv import SettingsReads, SettingsWrites
from memoryd.storage.contract.memories import MemoryReads, MemoryWrites
from memoryd.storage.contract.outbox import OutboxReads, OutboxWrites
from memoryd.storage.contract.quarantine import HeldReads, HeldWrites
from memoryd.storage.contract.queue import QueueReads, QueueWrites
from memoryd.storage.contract.usage import UsageReads
from memoryd.storage.faults import StorageFault

T = TypeVar("T")


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


class Reader(
    MemoryReads,
    ContextReads,
    UsageReads,
    SettingsReads,
    KeyReads,
    QueueReads,
    FlagReads,
    OutboxReads,
    ErasureReads,
    HeldReads,
    Protocol,
):
    """Everything a read may ask."""


class Writer(
    Reader,
    MemoryWrites,
    HistoryWrites,
    SettingsWrites,
    KeyWrites,
    QueueWrites,
    FlagWrites,
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
