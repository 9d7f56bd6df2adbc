"""Storage faults: disk full and I/O errors under the database, made visible.

SQLite reports a full disk as ``SQLITE_FULL`` and a failing disk as ``SQLITE_IOERR``
(and friends). They are not bugs in memoryd, so they must not look like one (a 500
``internal error``): ``storage_error`` turns them into ``StorageFullError`` (507
``storage_full``) or ``StorageUnavailableError`` (503 ``storage_unavailable``), and the
database remembers the fault (``StorageFault``) until the next successful write, so
``/healthz``, engine status and the dashboard can show it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import apsw

from memoryd.errors import StorageFullError, StorageUnavailableError, UnavailableError
from memoryd.storage.base import StorageFault, register_driver

#: Errors that mean the storage under the database failed, not the statement.
UNAVAILABLE = (
    apsw.IOError,
    apsw.CantOpenError,
    apsw.ReadOnlyError,
    apsw.CorruptError,
    apsw.NotADBError,
)

PROBE_KEY = "memoryd.storage_probe"


def storage_error(exc: BaseException) -> UnavailableError | None:
    """The memoryd error for a storage failure; None for any other exception."""
    if isinstance(exc, StorageFullError | StorageUnavailableError):
        return exc
    err: UnavailableError
    if isinstance(exc, apsw.FullError):
        err = StorageFullError(
            "the disk holding the database is full; the write was not stored "
            "(writes resume by themselves once space is freed)"
        )
    elif isinstance(exc, UNAVAILABLE):
        err = StorageUnavailableError(f"the database storage failed: {exc}")
    else:
        return None
    err.__cause__ = exc
    return err


def fault_of(err: UnavailableError) -> StorageFault:
    return StorageFault(err.code, err.message, datetime.now(UTC).isoformat(timespec="seconds"))


def probe_write(conn: Any) -> None:
    """A cheap write that still needs a fresh page (a one-page value, deleted in the
    same transaction): it succeeds only when the database can grow again."""
    (page_size,) = next(conn.execute("PRAGMA page_size"))
    conn.execute(
        "INSERT OR REPLACE INTO settings (key, value, updated_at) VALUES (?, ?, '')",
        (PROBE_KEY, "0" * int(page_size)),
    )
    conn.execute("DELETE FROM settings WHERE key = ?", (PROBE_KEY,))


register_driver(apsw.Error, storage_error)
