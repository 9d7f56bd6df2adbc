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

import json
from collections.abc import Sequence
from typing import Any

from memoryd.models import to_iso, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sql.memories import filter_sql

#: The table of each view of a memory.
TABLES = {"memory": "vec_memories", "context": "vec_context"}

_LOG = "INSERT INTO vec_changes (seq) VALUES"
#: ``vec_changes`` logs the seq of every vector written or dropped, and of every memory
#: that changes owner, whichever process does it: the resident copies of large owners
#: (``vectors.resident``) catch up from it.
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vec_changes "
    "(id INTEGER PRIMARY KEY AUTOINCREMENT, seq INTEGER NOT NULL);"
    "CREATE TRIGGER IF NOT EXISTS vec_changes_owner AFTER UPDATE OF api_key_id ON memories "
    f"BEGIN {_LOG} (new.seq); END;"
    + "".join(
        f"CREATE TABLE IF NOT EXISTS {t} (seq INTEGER PRIMARY KEY, emb BLOB NOT NULL);"
        f"CREATE TRIGGER IF NOT EXISTS {t}_ad AFTER DELETE ON memories BEGIN "
        f"DELETE FROM {t} WHERE seq = old.seq; END;"
        f"CREATE TRIGGER IF NOT EXISTS {t}_log_ai AFTER INSERT ON {t} BEGIN {_LOG} (new.seq); END;"
        f"CREATE TRIGGER IF NOT EXISTS {t}_log_au AFTER UPDATE ON {t} BEGIN {_LOG} (new.seq); END;"
        f"CREATE TRIGGER IF NOT EXISTS {t}_log_ad AFTER DELETE ON {t} BEGIN {_LOG} (old.seq); END;"
        for t in TABLES.values()
    )
)
_NAMES = [
    "vec_changes",
    "vec_changes_owner",
    *(n for t in TABLES.values() for n in (t, f"{t}_ad", *(f"{t}_log_a{x}" for x in "iud"))),
]
#: Changes kept in ``vec_changes``; a resident copy further behind is rebuilt.
KEEP_CHANGES = 100_000

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


# -- the change log and the resident copies (``vectors.resident``) -----------------------


def last_change(conn: Any) -> int:
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM vec_changes").fetchone()[0])


def first_change(conn: Any) -> int | None:
    row = conn.execute("SELECT min(id) FROM vec_changes").fetchone()
    return None if row[0] is None else int(row[0])


def prune_changes(conn: Any) -> None:
    conn.execute(
        "DELETE FROM vec_changes WHERE id <= (SELECT max(id) FROM vec_changes) - ?",
        [KEEP_CHANGES],
    )


def changes_since(conn: Any, after: int, view: str) -> list[tuple[int, int, str | None, Any]]:
    """``(change id, seq, owner or None, blob or None)`` per change after ``after``: the
    seq's owner and vector of ``view`` as they are now."""
    return [
        (int(r[0]), int(r[1]), r[2], r[3])
        for r in conn.execute(
            f"SELECT c.id, c.seq, m.api_key_id, v.emb FROM vec_changes c "
            f"LEFT JOIN memories m ON m.seq = c.seq LEFT JOIN {TABLES[view]} v ON v.seq = c.seq "
            "WHERE c.id > ? ORDER BY c.id",
            [after],
        )
    ]


def owner_vectors(conn: Any, owner: str, view: str, blob_len: int) -> list[tuple[int, Any]]:
    """Every ``(seq, blob)`` of one owner's ``view`` of the active dimension."""
    return [
        (int(r[0]), r[1])
        for r in conn.execute(
            f"SELECT v.seq, v.emb FROM memories m JOIN {TABLES[view]} v ON v.seq = m.seq "
            "WHERE m.api_key_id = ? AND length(v.emb) = ?",
            [owner, blob_len],
        )
    ]


#: Candidates checked beyond ``limit`` before the rest (the resident copies' filter).
FIRST_EXTRA = 8


def first_checked(limit: int) -> int:
    """How many of a resident copy's ranked candidates the SQL filter checks first: a
    half more than wanted (at least ``FIRST_EXTRA``); the rest only when too few pass.
    Each check is a rowid lookup, so checking every overfetched candidate cost as much
    as the SQL search at a few hundred memories."""
    return limit + max(limit // 2, FIRST_EXTRA)


def owner_rows(conn: Any, owner: str) -> int:
    """The owner's memories, from the owner index (cheap at any size)."""
    return int(
        conn.execute("SELECT count(*) FROM memories WHERE api_key_id = ?", [owner]).fetchone()[0]
    )


def passing(conn: Any, seqs: Sequence[int], flt: Filter) -> dict[int, str]:
    """``seq -> id`` of the given rows the filter lets through."""
    if not seqs:
        return {}
    where, params = filter_sql(flt)
    rows = conn.execute(
        # CROSS JOIN: the candidates drive (a rowid lookup each); SQLite would otherwise
        # walk the owner index, the owner's whole share of the file.
        "SELECT m.seq, m.id FROM json_each(?) c CROSS JOIN memories m ON m.seq = c.value "
        f"WHERE {where}",
        [json.dumps(list(seqs)), *params],
    )
    return {int(r[0]): r[1] for r in rows}
