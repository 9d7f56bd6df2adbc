"""SQL for the sqlite-vec tier and the ``needs_reindex`` work queue of the indexer.

``vec_memories(seq, emb)`` is keyed on ``memories.seq`` (never reused, see migration
0003) and created on demand by ``vectors.sqlite_vec`` once the embedder's dimensions
are known; a trigger drops a memory's vector with the memory. ``vec_context`` holds the
second view of each memory (with its earlier neighbours, ``sql.context``) the same
way. ``memory_vec_meta`` (one
row) records the active signature. Blobs are float32, or int8 when ``quantized`` (the
value then goes through ``vec_quantize_int8(?, 'unit')``), so every statement that
writes or compares a blob takes that flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.models import to_iso, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sql.memories import filter_sql

#: The table of each view of a memory.
TABLES = {"memory": "vec_memories", "context": "vec_context"}

_SCHEMA = "".join(
    f"CREATE TABLE IF NOT EXISTS {t} (seq INTEGER PRIMARY KEY, emb BLOB NOT NULL);"
    f"CREATE TRIGGER IF NOT EXISTS {t}_ad AFTER DELETE ON memories BEGIN "
    f"DELETE FROM {t} WHERE seq = old.seq; END;"
    for t in TABLES.values()
)
_NAMES = [n for t in TABLES.values() for n in (t, f"{t}_ad")]

#: A memory row as the indexer embeds it: ``(id, owner, content)``.
Row = tuple[str, str, str]


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def _blob(quantized: bool) -> str:
    return "vec_quantize_int8(?, 'unit')" if quantized else "?"


# -- the table and its meta row ----------------------------------------------------------


def table_exists(conn: Any) -> bool:
    rows = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
        list(TABLES.values()),
    ).fetchall()
    return int(rows[0][0]) == len(TABLES)


def schema_present(conn: Any) -> bool:
    """Tables and triggers all exist (any may have been dropped by hand)."""
    marks = ", ".join("?" for _ in _NAMES)
    rows = conn.execute(
        f"SELECT COUNT(*) FROM sqlite_master WHERE name IN ({marks})", _NAMES
    ).fetchall()
    return int(rows[0][0]) == len(_NAMES)


def create_schema(conn: Any) -> None:
    """Create the table and its delete trigger if missing (idempotent)."""
    conn.execute(_SCHEMA)


def read_meta(conn: Any) -> dict[str, Any]:
    row = conn.execute(
        "SELECT active_dim, embedding_signature, last_reset_at, vec_ready "
        "FROM memory_vec_meta WHERE id = 1"
    ).fetchone()
    if row is None:
        return {"activeDim": None, "signature": None, "lastResetAt": None, "vecReady": False}
    return {
        "activeDim": row[0],
        "signature": row[1],
        "lastResetAt": row[2],
        "vecReady": bool(row[3]),
    }


def write_meta(conn: Any, dim: int | None, signature: str | None, reset: bool) -> None:
    """Record the active signature; ``reset`` stamps ``last_reset_at`` with now."""
    conn.execute(
        "INSERT INTO memory_vec_meta (id, active_dim, embedding_signature, last_reset_at, "
        "vec_ready) VALUES (1, ?, ?, ?, 1) ON CONFLICT (id) DO UPDATE SET "
        "active_dim = excluded.active_dim, embedding_signature = excluded.embedding_signature,"
        " last_reset_at = COALESCE(excluded.last_reset_at, last_reset_at), vec_ready = 1",
        (dim, signature, to_iso(utcnow()) if reset else None),
    )


def has_vectors(conn: Any) -> bool:
    return bool(conn.execute("SELECT 1 FROM vec_memories LIMIT 1").fetchall())


def clear(conn: Any) -> None:
    for table in TABLES.values():
        conn.execute(f"DELETE FROM {table}")


def table_named(conn: Any, table: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [table])
    return bool(found.fetchall())


def count(conn: Any, view: str = "memory") -> int:
    """Stored vectors of one view; 0 when its table does not exist yet."""
    if not table_named(conn, TABLES[view]):
        return 0
    return int(conn.execute(f"SELECT COUNT(*) FROM {TABLES[view]}").fetchall()[0][0])


def version(conn: Any) -> str:
    """sqlite-vec's version: raises when the extension is not loaded."""
    return str(conn.execute("SELECT vec_version()").fetchone()[0])


# -- vectors ---------------------------------------------------------------------------


def upsert(conn: Any, memory_id: str, blob: bytes, *, quantized: bool, view: str = "memory") -> int:
    """Store one view of a memory's vector; returns 1, or 0 when the memory does not
    exist."""
    conn.execute(
        f"INSERT OR REPLACE INTO {TABLES[view]} (seq, emb) "
        f"SELECT seq, {_blob(quantized)} FROM memories WHERE id = ?",
        (blob, memory_id),
    )
    return int(conn.changes())


def delete(conn: Any, memory_ids: Sequence[str]) -> None:
    for table in TABLES.values():
        conn.execute(
            f"DELETE FROM {table} WHERE seq IN "
            f"(SELECT seq FROM memories WHERE id IN ({_marks(memory_ids)}))",
            list(memory_ids),
        )


def knn(
    conn: Any,
    query: bytes,
    k: int,
    flt: Filter,
    *,
    blob_len: int,
    quantized: bool,
    view: str = "memory",
) -> list[tuple[str, float]]:
    """The ``k`` nearest ``(id, cosine distance)`` among the rows ``flt`` lets through.

    The filter narrows ``memories`` through its indexes first, so distances are computed
    only for the owner's rows; ``blob_len`` skips vectors of another dimension."""
    where, params = filter_sql(flt)
    if quantized:
        dist = "vec_distance_cosine(vec_int8(v.emb), vec_quantize_int8(?, 'unit'))"
    else:
        dist = "vec_distance_cosine(v.emb, ?)"
    rows = conn.execute(
        f"SELECT m.id, {dist} AS d FROM memories m JOIN {TABLES[view]} v ON v.seq = m.seq "
        f"WHERE {where} AND length(v.emb) = ? ORDER BY d LIMIT ?",
        [query, *params, blob_len, k],
    )
    return [(r[0], float(r[1])) for r in rows]
