"""SQL for the ``api_keys`` table. No business rules here (see ``memoryd.engine.keys``).

Rows come back as ``KeyRow``s; the service turns them into ``ApiKey`` records. Times
are bound as canonical ISO strings (``models.to_iso``), so ``ORDER BY created_at`` is
time order. Lookups by secret go through the UNIQUE index on ``key_hash``: one indexed
probe, whatever the number of keys.
"""

from __future__ import annotations

from typing import Any

from memoryd.storage.contract.keys import KeyRow, NewKey

#: ``KeyRow``'s fields in order (never the hash).
COLUMNS = "id, name, prefix, created_at, revoked_at, memory_enabled"


def _row(row: Any) -> KeyRow:
    key_id, name, prefix, created_at, revoked_at, flag = row
    return KeyRow(key_id, name, prefix, created_at, revoked_at, _bool_of_db(flag))


def _one(conn: Any, sql: str, params: tuple[Any, ...]) -> KeyRow | None:
    for row in conn.execute(sql, params):
        return _row(row)
    return None


def _bool_to_db(value: bool | None) -> int | None:
    return None if value is None else int(bool(value))


def _bool_of_db(value: Any) -> bool | None:
    return None if value is None else bool(value)


def insert(conn: Any, key: NewKey) -> bool:
    """Insert one key; False (and nothing written) when the id is already taken."""
    if list(conn.execute("SELECT 1 FROM api_keys WHERE id = ?", (key.key_id,))):
        return False
    conn.execute(
        "INSERT INTO api_keys (id, name, key_hash, prefix, created_at, revoked_at, "
        "memory_enabled) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            key.key_id,
            key.name,
            key.key_hash,
            key.prefix,
            key.created_at,
            key.revoked_at,
            _bool_to_db(key.memory_enabled),
        ),
    )
    return True


def get(conn: Any, key_id: str) -> KeyRow | None:
    return _one(conn, f"SELECT {COLUMNS} FROM api_keys WHERE id = ?", (key_id,))


def get_by_hash(conn: Any, key_hash: str) -> KeyRow | None:
    """The key whose secret hashes to ``key_hash`` (revoked or not)."""
    return _one(conn, f"SELECT {COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,))


def list_all(conn: Any, *, include_revoked: bool = True) -> list[KeyRow]:
    """Newest first; insertion order breaks ties between keys made in the same ms."""
    where = "" if include_revoked else "WHERE revoked_at IS NULL "
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM api_keys {where}ORDER BY created_at DESC, rowid DESC"
    )
    return [_row(row) for row in rows]


def revoke(conn: Any, key_id: str, revoked_at: str) -> bool:
    """Mark a live key revoked; False for an unknown or already revoked id."""
    conn.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
        (revoked_at, key_id),
    )
    return bool(conn.changes())


def set_memory_enabled(conn: Any, key_id: str, value: bool | None) -> bool:
    """Set the per-key memory override (NULL = follow the global setting)."""
    conn.execute(
        "UPDATE api_keys SET memory_enabled = ? WHERE id = ?", (_bool_to_db(value), key_id)
    )
    return bool(conn.changes())


def export_all(conn: Any) -> list[NewKey]:
    rows = conn.execute(
        "SELECT id, name, key_hash, prefix, created_at, revoked_at, memory_enabled "
        "FROM api_keys ORDER BY created_at, rowid"
    )
    return [NewKey(r[0], r[1], r[2], r[3], r[4], _bool_of_db(r[6]), r[5]) for r in rows]
