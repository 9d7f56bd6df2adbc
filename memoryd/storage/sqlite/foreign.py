"""Another program's SQLite file, read without changing it: OmniRoute's System Memory
database (issue 41), as ``../shared/reference/omniroute-memory.md`` section 1 gives it.

Its ``memories`` table (snake_case columns; ``memory_id``, ``needs_reindex``,
``access_count`` and ``last_accessed_at`` came with later migrations, so each is read
only when present), or the older ``memory`` table with camelCase columns when
``memories`` is absent; and the ``key_value`` rows of namespace ``settings`` (JSON
values). Opened read-only (``immutable`` without a ``-wal`` file, as doctor opens
ours), so a server still running on it is not disturbed and nothing is created.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw

from memoryd.errors import MemorydError, ValidationError
from memoryd.storage.sqlite.files import check_database_file

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


def read_omniroute(path: Path, label: str | None = None) -> OmniRouteFile:
    """Read ``path`` (named ``label`` in messages); a ``ValidationError`` when it is not
    an OmniRoute database."""
    shown = label or str(path)
    try:
        check_database_file(path)
    except MemorydError:
        raise ValidationError(f"{shown} is not an SQLite database file") from None
    try:
        return _open_and_read(path, shown)
    except ValidationError as exc:
        raise ValidationError(exc.message.replace(str(path), shown)) from None


def _open_and_read(path: Path, shown: str) -> OmniRouteFile:
    wal = Path(f"{path}-wal").exists()
    uri = f"file:{quote(str(path))}?{'mode=ro' if wal else 'immutable=1'}"
    try:
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except apsw.Error as exc:
        raise ValidationError(f"cannot open {shown}: {exc}") from None
    try:
        conn.set_busy_timeout(2000)
        return _read(conn, path)
    except apsw.Error as exc:
        raise ValidationError(f"cannot read {shown} as an OmniRoute database: {exc}") from None
    finally:
        conn.close()


def _read(conn: apsw.Connection, path: Path) -> OmniRouteFile:
    tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
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
    rows = []
    for values in conn.execute(f'SELECT {select} FROM "{table}" ORDER BY rowid'):
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
        except ValueError:
            found[str(key)] = raw  # a bare string stored without JSON quotes
    return found
