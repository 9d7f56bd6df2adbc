"""SQL for pgvector: ``vec_memories(seq, emb vector(dim) | halfvec(dim))`` beside
``memories``, an HNSW index with cosine distance, and its signature row. Functions
take a ``PgConn`` (the portable ``?`` placeholders).

The table is made when the first embedder is known (its dimension fixes the column
type), dropped and made again when the signature changes. A row is deleted with its
memory (``ON DELETE CASCADE`` on ``seq``). ``vec_context`` holds each memory's second
view (with its earlier neighbours, ``sql.context``) the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.models import to_iso, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sql.memories import filter_sql


def literal(vector: Sequence[float]) -> str:
    """pgvector's text form, bound as a parameter and cast in SQL."""
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


def column_type(quantization: str) -> str:
    return "halfvec" if quantization == "half" else "vector"


#: Held for the transaction that checks or rebuilds the table: servers starting together
#: would otherwise both create it.
SCHEMA_LOCK = 0x766563746F72  # "vector"


def lock_schema(conn: Any) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(?)", [SCHEMA_LOCK])


#: The table of each view of a memory.
TABLES = {"memory": "vec_memories", "context": "vec_context"}


def table_exists(conn: Any, view: str | None = None) -> bool:
    """The table of ``view`` exists (of every view when None)."""
    tables = [TABLES[view]] if view else list(TABLES.values())
    return all(conn.execute("SELECT to_regclass(?) IS NOT NULL", [t]).fetchone()[0] for t in tables)


def read_meta(conn: Any) -> dict[str, Any]:
    row = conn.execute(
        "SELECT active_dim, embedding_signature, last_reset_at FROM memory_vec_meta WHERE id = 1"
    ).fetchone()
    return {"activeDim": row[0], "signature": row[1], "lastResetAt": row[2]}


def write_meta(conn: Any, dim: int, signature: str, *, reset: bool) -> None:
    conn.execute(
        "UPDATE memory_vec_meta SET active_dim = ?, embedding_signature = ?, "
        "last_reset_at = CASE WHEN ? THEN ? ELSE last_reset_at END WHERE id = 1",
        (dim, signature, reset, to_iso(utcnow())),
    )


def create(conn: Any, dim: int, quantization: str) -> None:
    kind = column_type(quantization)
    ops = "halfvec_cosine_ops" if kind == "halfvec" else "vector_cosine_ops"
    for table in TABLES.values():
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(
            f"CREATE TABLE {table} (seq BIGINT PRIMARY KEY REFERENCES memories (seq) "
            f"ON DELETE CASCADE, emb {kind}({int(dim)}) NOT NULL)"
        )
        conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (emb {ops})")


def has_vectors(conn: Any) -> bool:
    if not table_exists(conn, "memory"):
        return False
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM vec_memories)").fetchone()[0])


def upsert(
    conn: Any, memory_id: str, vector: Sequence[float], quantization: str, view: str = "memory"
) -> int:
    kind = column_type(quantization)
    cur = conn.execute(
        f"INSERT INTO {TABLES[view]} (seq, emb) SELECT seq, ?::{kind} FROM memories "
        "WHERE id = ? ON CONFLICT (seq) DO UPDATE SET emb = excluded.emb",
        (literal(vector), memory_id),
    )
    return int(cur.rowcount)


def delete(conn: Any, memory_ids: Sequence[str]) -> None:
    for table in TABLES.values() if memory_ids else ():
        conn.execute(
            f"DELETE FROM {table} v USING memories m WHERE v.seq = m.seq "
            f"AND m.id IN ({', '.join('?' for _ in memory_ids)})",
            list(memory_ids),
        )


def count(conn: Any, view: str = "memory") -> int:
    if not table_exists(conn, view):
        return 0
    return int(conn.execute(f"SELECT COUNT(*) FROM {TABLES[view]}").fetchone()[0])


def version(conn: Any) -> str:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return str(row[0]) if row else ""


def knn(
    conn: Any,
    vector: Sequence[float],
    k: int,
    flt: Filter,
    quantization: str,
    view: str = "memory",
) -> list[tuple[str, float]]:
    """The ``k`` nearest under the retrieval filter as ``(id, cosine distance)``. The
    planner scans one owner's rows exactly when the filter is selective, and otherwise
    walks the HNSW graph with iterative scans until ``k`` rows pass."""
    kind = column_type(quantization)
    where, params = filter_sql(flt)
    rows = conn.execute(
        f"SELECT m.id, v.emb <=> ?::{kind} AS d FROM {TABLES[view]} v "
        f"JOIN memories m ON m.seq = v.seq WHERE {where} ORDER BY d LIMIT ?",
        [literal(vector), *params, k],
    ).fetchall()
    return [(r[0], float(r[1])) for r in rows]
