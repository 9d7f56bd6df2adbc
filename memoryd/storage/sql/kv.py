"""SQL for the ``settings`` key/value table (values are JSON)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from memoryd.models import to_iso


def read_all(conn: Any, prefix: str = "") -> dict[str, Any]:
    """Every setting whose key starts with ``prefix``; unreadable JSON is skipped."""
    out: dict[str, Any] = {}
    # The table holds a few dozen rows: filtering here keeps the SQL the same everywhere.
    for key, value in conn.execute("SELECT key, value FROM settings"):
        if not key.startswith(prefix):
            continue
        try:
            out[key[len(prefix) :]] = json.loads(value)
        except (TypeError, ValueError):
            continue
    return out


def write_many(conn: Any, values: Mapping[str, Any], now: datetime, prefix: str = "") -> None:
    for key, value in values.items():
        conn.execute(
            "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET "
            "value = excluded.value, updated_at = excluded.updated_at",
            (prefix + key, json.dumps(value, ensure_ascii=False), to_iso(now)),
        )


def delete_many(conn: Any, keys: Iterable[str], prefix: str = "") -> None:
    """Forget stored values, so the env or the default applies again."""
    for key in keys:
        conn.execute("DELETE FROM settings WHERE key = ?", (prefix + key,))


def insert_default(conn: Any, key: str, value: Any, now: datetime) -> Any:
    """Insert unless present (a concurrent inserter's row wins: the INSERT waits for it
    and does nothing), then read back whatever is stored."""
    conn.execute(
        "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (key) DO NOTHING",
        (key, json.dumps(value, ensure_ascii=False), to_iso(now)),
    )
    return read_one(conn, key)


def read_one(conn: Any, key: str, default: Any = None) -> Any:
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    if row is None:
        return default
    try:
        return json.loads(row[0])
    except (TypeError, ValueError):
        return default
