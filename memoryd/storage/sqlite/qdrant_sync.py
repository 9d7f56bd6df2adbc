"""SQL for the Qdrant tier's durable to-do list in SQLite.

``qdrant_pending`` holds one row per memory whose payload or vector Qdrant lacks:
triggers on ``memories`` add it (and bump ``gen``) on every insert, every change of a
field Qdrant stores, and whenever the in-store index stores new vectors for it (its flag
cleared: a neighbour's edit changes its context view, not its row);
``qdrant_tombstones`` holds deleted ids until Qdrant has dropped them. The tables are
created when the tier first prepares a backend, not by a migration, so a database that
never enables Qdrant pays no trigger cost. A row is cleared only if its ``gen`` did not
move while it was being pushed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.storage.contract.outbox import OutboxRow
from memoryd.storage.sql.context import SEPARATOR, view_text_sql

_SCHEMA = """
CREATE TABLE IF NOT EXISTS qdrant_pending (
    seq INTEGER PRIMARY KEY, memory_id TEXT NOT NULL, gen INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS qdrant_tombstones (
    memory_id TEXT PRIMARY KEY, deleted_at TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS qdrant_memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO qdrant_pending (seq, memory_id, gen) VALUES (new.seq, new.id, 1)
    ON CONFLICT (seq) DO UPDATE SET gen = gen + 1;
END;
CREATE TRIGGER IF NOT EXISTS qdrant_memories_au
AFTER UPDATE OF api_key_id, session_id, type, key, content, created_at, expires_at ON memories
WHEN old.api_key_id IS NOT new.api_key_id OR old.session_id IS NOT new.session_id
  OR old.type IS NOT new.type OR old.key IS NOT new.key OR old.content IS NOT new.content
  OR old.created_at IS NOT new.created_at OR old.expires_at IS NOT new.expires_at
BEGIN
    INSERT INTO qdrant_pending (seq, memory_id, gen) VALUES (new.seq, new.id, 1)
    ON CONFLICT (seq) DO UPDATE SET gen = gen + 1;
END;
CREATE TRIGGER IF NOT EXISTS qdrant_memories_vectors AFTER UPDATE OF needs_reindex ON memories
WHEN old.needs_reindex = 1 AND new.needs_reindex = 0
BEGIN
    INSERT INTO qdrant_pending (seq, memory_id, gen) VALUES (new.seq, new.id, 1)
    ON CONFLICT (seq) DO UPDATE SET gen = gen + 1;
END;
CREATE TRIGGER IF NOT EXISTS qdrant_memories_ad AFTER DELETE ON memories BEGIN
    DELETE FROM qdrant_pending WHERE seq = old.seq;
    INSERT OR REPLACE INTO qdrant_tombstones (memory_id, deleted_at)
    VALUES (old.id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
"""
_SCHEMA_NAMES = (
    "qdrant_pending",
    "qdrant_tombstones",
    "qdrant_memories_ai",
    "qdrant_memories_au",
    "qdrant_memories_vectors",
    "qdrant_memories_ad",
)


# -- the schema --------------------------------------------------------------------------


def schema_complete(conn: Any) -> bool:
    """Both tables and every trigger exist (one may have been dropped by hand, or be
    newer than the database: ``create_schema`` then adds it)."""
    marks = ", ".join("?" for _ in _SCHEMA_NAMES)
    query = f"SELECT COUNT(*) FROM sqlite_master WHERE name IN ({marks})"
    (n,) = next(iter(conn.execute(query, _SCHEMA_NAMES)))
    return int(n) == len(_SCHEMA_NAMES)


def create_schema(conn: Any) -> None:
    """Create the tables and triggers if missing (idempotent)."""
    conn.execute(_SCHEMA)


def pending_table_exists(conn: Any) -> bool:
    rows = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'qdrant_pending'"
    )
    return bool(list(rows))


# -- the to-do list ----------------------------------------------------------------------


def queue_all(conn: Any) -> int:
    """Queue every memory again and forget tombstones (a new sync identity: the backend
    starts empty). Returns how many rows were queued or bumped."""
    conn.execute("DELETE FROM qdrant_tombstones")
    conn.execute(
        "INSERT INTO qdrant_pending (seq, memory_id, gen) SELECT seq, id, 1 FROM memories "
        "WHERE true ON CONFLICT (seq) DO UPDATE SET gen = gen + 1"
    )
    return int(conn.changes())


def count_pending(conn: Any) -> int:
    (n,) = next(iter(conn.execute("SELECT COUNT(*) FROM qdrant_pending")))
    return int(n)


def count_pushable(conn: Any) -> int:
    """Pending rows whose vector is ready (the memory is not waiting for embedding)."""
    (n,) = next(
        iter(
            conn.execute(
                "SELECT COUNT(*) FROM qdrant_pending p JOIN memories m ON m.seq = p.seq "
                "WHERE m.needs_reindex = 0"
            )
        )
    )
    return int(n)


def pending_rows(conn: Any, after: int, limit: int) -> list[OutboxRow]:
    """Up to ``limit`` pushable rows with ``seq > after``, in ``seq`` order: the
    sqlite-vec blobs of both views (or None) and the text of the context view (embedded
    again when its blob is int8). ``vec_context`` is made
    by the sqlite-vec store, not a migration: without it, no context blob."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", ("vec_context",)
    )
    has = bool(list(found))
    context = "c.emb" if has else "NULL"
    join = "LEFT JOIN vec_context c ON c.seq = p.seq " if has else ""
    rows = conn.execute(
        "SELECT p.seq, p.gen, m.id, m.api_key_id, m.session_id, m.type, m.key, m.content, "
        f"m.created_at, m.expires_at, v.emb, {context}, {view_text_sql('m')} "
        "FROM qdrant_pending p JOIN memories m ON m.seq = p.seq "
        f"LEFT JOIN vec_memories v ON v.seq = p.seq {join}"
        "WHERE m.needs_reindex = 0 AND p.seq > ? ORDER BY p.seq LIMIT ?",
        (SEPARATOR, after, limit),
    ).fetchall()
    return [OutboxRow(*row) for row in rows]


def drop_pending(conn: Any, done: Sequence[tuple[int, int]]) -> None:
    """Clear pushed ``(seq, gen)`` rows; a row whose ``gen`` moved stays queued."""
    conn.executemany("DELETE FROM qdrant_pending WHERE seq = ? AND gen = ?", done)


def tombstones(conn: Any, limit: int) -> list[str]:
    rows = conn.execute("SELECT memory_id FROM qdrant_tombstones LIMIT ?", (limit,))
    return [str(r[0]) for r in rows]


def drop_tombstones(conn: Any, memory_ids: Sequence[str]) -> None:
    conn.executemany(
        "DELETE FROM qdrant_tombstones WHERE memory_id = ?", [(i,) for i in memory_ids]
    )
