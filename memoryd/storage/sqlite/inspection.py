"""Read-only looks at SQLite for ``memoryd doctor``: the driver, FTS5, sqlite-vec, and
a database file read without writing anything.

The probes are the ones ``Database`` runs at start, on an in-memory connection, so
doctor reports what ``serve`` will find. A file is opened read-only, and ``immutable``
when it has no ``-wal`` file: a read-only connection to a WAL database otherwise
creates ``-wal`` and ``-shm`` beside it and, unable to checkpoint, leaves them there
(files a restore is told to delete). With a ``-wal`` file present (a server is
running, or one crashed) the connection reads through it, creating nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw

from memoryd.storage.sql import kv

# The same probes ``Database`` runs when it opens (private there: one definition).
from memoryd.storage.sqlite.database import load_vec_extension, probe_fts5
from memoryd.storage.sqlite.files import check_database_file


@dataclass(frozen=True, slots=True)
class Runtime:
    """What this SQLite build offers memoryd."""

    sqlite_version: str
    driver_version: str
    fts5: bool
    fts5_reason: str
    vec: bool
    vec_reason: str


def runtime() -> Runtime:
    """Probe FTS5 and sqlite-vec on a private in-memory database."""
    conn = apsw.Connection(":memory:")
    try:
        fts5, fts5_reason = probe_fts5(conn)
        vec, vec_reason = load_vec_extension(conn)
    finally:
        conn.close()
    return Runtime(
        apsw.sqlite_lib_version(), apsw.apsw_version(), fts5, fts5_reason, vec, vec_reason
    )


@dataclass(frozen=True, slots=True)
class FileState:
    """A database file as it is: its recorded migrations (empty when none) and its
    stored settings (every key, JSON-decoded)."""

    applied: tuple[int, ...]
    settings: dict[str, Any] = field(default_factory=dict)


def _tables(conn: apsw.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def read_file(path: Path) -> FileState:
    """Read ``path`` without changing anything. Raises ``UnavailableError`` (empty, not
    SQLite) or ``apsw.Error`` (damaged, locked, unreadable)."""
    check_database_file(path)
    wal = Path(f"{path}-wal").exists()
    uri = f"file:{quote(str(path))}?{'mode=ro' if wal else 'immutable=1'}"
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        conn.set_busy_timeout(2000)
        tables = _tables(conn)
        applied: tuple[int, ...] = ()
        if "schema_migrations" in tables:
            rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version")
            applied = tuple(int(v) for (v,) in rows)
        settings = kv.read_all(conn) if "settings" in tables else {}
    finally:
        conn.close()
    return FileState(applied, settings)
