"""Another program's SQLite file, read without changing it: OmniRoute's System Memory
database, as ``../shared/reference/omniroute-memory.md`` section 1 gives it.

The file is untrusted (a REST upload): only plain tables are read (a virtual table or
a view could run anything SQL can, an endless recursive query included), the schema is
not trusted, temporary data stays in memory, every value is capped in size and the
whole read in time and rows; any of these is a ``ValidationError``.

Its ``memories`` table (snake_case columns; ``memory_id``, ``needs_reindex``,
``access_count`` and ``last_accessed_at`` came with later migrations, so each is read
only when present), or the older ``memory`` table with camelCase columns when
``memories`` is absent; and the ``key_value`` rows of namespace ``settings`` (JSON
values). Opened read-only (``immutable`` without a ``-wal`` file, as doctor opens
ours), so a server still running on it is not disturbed and nothing is created.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw

from memoryd.errors import MemorydError, ValidationError
from memoryd.storage.sqlite.files import check_database_file

#: Bounds of one read: seconds, rows, and bytes per value.
READ_S = 120.0
MAX_ROWS = 2_000_000
MAX_VALUE_BYTES = 8 * 1024 * 1024

#: The ``memories`` columns read, in snake_case (the names rows are returned with).
COLUMNS = (
    "id",
    "api_key_id",
    "session_id",
    "type",
    "key",
    "content",
    "metadata",
    "created_at",
    "updated_at",
    "expires_at",
    "access_count",
    "last_accessed_at",
)
#: The legacy ``memory`` table's camelCase names for them.
LEGACY = {
    "id": "id",
    "api_key_id": "apiKeyId",
    "session_id": "sessionId",
    "type": "type",
    "key": "key",
    "content": "content",
    "metadata": "metadata",
    "created_at": "createdAt",
    "updated_at": "updatedAt",
    "expires_at": "expiresAt",
}


@dataclass(frozen=True, slots=True)
class OmniRouteFile:
    """What an OmniRoute database holds for memoryd: its memory rows (dicts keyed by
    ``COLUMNS``, a missing column as None), which table they came from, and its
    settings (namespace ``settings``, values decoded from JSON)."""

    rows: list[dict[str, Any]]
    table: str
    settings: dict[str, Any]


def read_omniroute(path: Path, label: str | None = None, *, live: bool = True) -> OmniRouteFile:
    """Read ``path`` (named ``label`` in messages); a ``ValidationError`` when it is not
    an OmniRoute database. ``live``: another program may be writing it (read through
    its journal); else the file is a still copy (an upload), read ``immutable``."""
    shown = label or str(path)
    try:
        check_database_file(path)
    except MemorydError:
        raise ValidationError(f"{shown} is not an SQLite database file") from None
    try:
        return _open_and_read(path, shown, live)
    except ValidationError as exc:
        raise ValidationError(exc.message.replace(str(path), shown)) from None


def _open_and_read(path: Path, shown: str, live: bool) -> OmniRouteFile:
    # A database with a journal beside it (a program is writing it, or one crashed) is
    # read through it (mode=ro); one without, or a still copy, immutable: a read-only
    # connection to a WAL database otherwise leaves -wal and -shm files beside it.
    journal = any(Path(f"{path}{x}").exists() for x in ("-wal", "-journal"))
    modes = ("mode=ro", "immutable=1") if live and journal else ("immutable=1",)
    for mode in modes:
        uri = f"file:{quote(str(path))}?{mode}"
        try:
            conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        except apsw.Error as exc:
            raise ValidationError(f"cannot open {shown}: {exc}") from None
        try:
            _distrust(conn)
            return _read(conn, path)
        except apsw.CantOpenError:
            continue
        except apsw.Error as exc:
            raise ValidationError(f"cannot read {shown} as an OmniRoute database: {exc}") from None
        finally:
            conn.close()
    raise ValidationError(f"cannot open {shown}")


def _distrust(conn: apsw.Connection) -> None:
    conn.set_busy_timeout(2000)
    conn.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, 1)
    conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
    conn.limit(apsw.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.execute("PRAGMA temp_store = MEMORY")
    deadline = time.monotonic() + READ_S
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)  # True aborts


def _read(conn: apsw.Connection, path: Path) -> OmniRouteFile:
    plain = "type = 'table' AND sql LIKE 'CREATE TABLE%'"
    tables = {n for (n,) in conn.execute(f"SELECT name FROM sqlite_master WHERE {plain}")}
    if "memories" in tables:
        table, names = "memories", {c: c for c in COLUMNS}
    elif "memory" in tables:
        table, names = "memory", LEGACY
    else:
        raise ValidationError(
            f"{path} has no memories table (nor OmniRoute's older memory table): "
            "not an OmniRoute database"
        )
    present = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
    wanted = [(ours, theirs) for ours, theirs in names.items() if theirs in present]
    if not any(ours == "content" for ours, _ in wanted):
        raise ValidationError(f"{path}: the {table} table has no content column")
    select = ", ".join(f'"{theirs}"' for _, theirs in wanted)
    rows: list[dict[str, Any]] = []
    for values in conn.execute(f'SELECT {select} FROM "{table}" LIMIT {MAX_ROWS + 1}'):
        if len(rows) == MAX_ROWS:
            raise ValidationError(f"{path}: more than {MAX_ROWS} rows in {table}")
        row: dict[str, Any] = dict.fromkeys(COLUMNS)
        row.update({ours: value for (ours, _), value in zip(wanted, values, strict=True)})
        rows.append(row)
    return OmniRouteFile(rows, table, _settings(conn, tables))


def _settings(conn: apsw.Connection, tables: set[str]) -> dict[str, Any]:
    if "key_value" not in tables:
        return {}
    present = {row[1] for row in conn.execute('PRAGMA table_info("key_value")')}
    if not {"namespace", "key", "value"} <= present:
        return {}
    found: dict[str, Any] = {}
    query = "SELECT key, value FROM key_value WHERE namespace = 'settings'"
    for key, raw in conn.execute(query):
        try:
            found[str(key)] = json.loads(raw) if isinstance(raw, str) else raw
        except (ValueError, RecursionError):
            found[str(key)] = raw  # a bare string stored without JSON quotes
    return found
