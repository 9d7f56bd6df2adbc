"""The Store contract: everything the engine, indexer, vector tiers and API ask of the
primary store, and nothing about how it keeps it. Import it from here.

A store hands out *sessions*: ``read()`` gives a ``Reader`` (each call may see the
newest committed state), ``snapshot()`` one consistent ``Reader`` for several queries,
and ``write(fn)`` runs ``fn(writer)`` as one transaction, all or nothing, returning what
``fn`` returned once it is durable. So a multi-step change (upsert, then supersede the
slot) is one unit of work on any backend: the SQLite store commits it on its writer
thread, a server database in one transaction.

The protocols live by concern in ``storage/contract/`` (one module per module of
``storage/sql/``); every row they return is a frozen dataclass. ``Filter`` and
``Clearing`` are the only query language callers speak. ``tests/storage/contract/``
runs this against every backend.
"""

from __future__ import annotations

from memoryd.storage.contract.context import ContextReads
from memoryd.storage.contract.erasures import ErasureReads, ErasureWrites
from memoryd.storage.contract.flags import Flagged, FlagReads, FlagWrites
from memoryd.storage.contract.history import HistoryWrites
from memoryd.storage.contract.keys import KeyReads, KeyRow, KeyWrites, NewKey
from memoryd.storage.contract.kv import SettingsReads, SettingsWrites
from memoryd.storage.contract.memories import (
    Clearing,
    Deleted,
    Filter,
    KeywordHit,
    ListQuery,
    MemoryReads,
    MemoryWrites,
    OwnerRow,
    Page,
    Upserted,
)
from memoryd.storage.contract.outbox import OutboxReads, OutboxRow, OutboxWrites
from memoryd.storage.contract.quarantine import HeldReads, HeldWrites, NewHeld
from memoryd.storage.contract.queue import Lease, NewJob, QueuedJob, QueueReads, QueueWrites
from memoryd.storage.contract.store import ANY, Capabilities, Change, Reader, Store, Writer
from memoryd.storage.contract.usage import Usage, UsageReads
from memoryd.storage.drivers import driver_errors, register_driver, storage_error
from memoryd.storage.faults import StorageFault, fault_status

__all__ = [
    "ANY",
    "Capabilities",
    "Change",
    "Clearing",
    "ContextReads",
    "Deleted",
    "ErasureReads",
    "ErasureWrites",
    "Filter",
    "FlagReads",
    "FlagWrites",
    "Flagged",
    "HeldReads",
    "HeldWrites",
    "HistoryWrites",
    "KeyReads",
    "KeyRow",
    "KeyWrites",
    "KeywordHit",
    "Lease",
    "ListQuery",
    "MemoryReads",
    "MemoryWrites",
    "NewHeld",
    "NewJob",
    "NewKey",
    "OutboxReads",
    "OutboxRow",
    "OutboxWrites",
    "OwnerRow",
    "Page",
    "QueueReads",
    "QueueWrites",
    "QueuedJob",
    "Reader",
    "SettingsReads",
    "SettingsWrites",
    "StorageFault",
    "Store",
    "Upserted",
    "Usage",
    "UsageReads",
    "Writer",
    "driver_errors",
    "fault_status",
    "register_driver",
    "storage_error",
]
