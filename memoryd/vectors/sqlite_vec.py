"""Tier 1: vectors in the same SQLite file, searched with sqlite-vec's cosine distance.

Layout: ``vec_memories(seq, emb)`` joined to ``memories`` (see migration 0003). The
search applies the retrieval filter to ``memories`` through its indexes first and
computes distances only for the owner's candidate rows, so an owner with five
memories among a million gets its five, fast. float32 blobs by default; with
``int8`` quantization blobs go through ``vec_quantize_int8(?, 'unit')`` (4x smaller;
vectors are unit length) and are compared the same way at query time.

The active signature (``source:model:dim`` plus ``:int8``) is kept in
``memory_vec_meta``. A different signature clears every vector and marks every
memory ``needs_reindex`` in one transaction; the index worker then refills.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from memoryd.models import to_iso, utcnow
from memoryd.storage.database import Database
from memoryd.storage.memories import Filter, mark_all_reindex
from memoryd.vectors.base import ReadyState, VectorItem

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vec_memories (seq INTEGER PRIMARY KEY, emb BLOB NOT NULL);"
    "CREATE TRIGGER IF NOT EXISTS vec_memories_ad AFTER DELETE ON memories BEGIN "
    "DELETE FROM vec_memories WHERE seq = old.seq; END;"
)


def _table_exists(conn: Any) -> bool:
    rows = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vec_memories'"
    ).fetchall()
    return bool(rows)


def _schema_present(conn: Any) -> bool:
    rows = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('vec_memories', 'vec_memories_ad')"
    ).fetchall()
    return int(rows[0][0]) == 2


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


def _write_meta(conn: Any, dim: int | None, signature: str | None, reset: bool) -> None:
    conn.execute(
        "INSERT INTO memory_vec_meta (id, active_dim, embedding_signature, last_reset_at, "
        "vec_ready) VALUES (1, ?, ?, ?, 1) ON CONFLICT (id) DO UPDATE SET "
        "active_dim = excluded.active_dim, embedding_signature = excluded.embedding_signature,"
        " last_reset_at = COALESCE(excluded.last_reset_at, last_reset_at), vec_ready = 1",
        (dim, signature, to_iso(utcnow()) if reset else None),
    )


class SqliteVecStore:
    name = "sqlite-vec"

    def __init__(self, db: Database, *, quantization: str = "none") -> None:
        if not db.capabilities.vec:
            raise RuntimeError(db.capabilities.vec_reason)
        self.db = db
        self.quantization = "int8" if quantization == "int8" else "none"
        self._dim: int | None = None
        self._signature: str | None = None

    def effective_signature(self, signature: str) -> str:
        return signature + (":int8" if self.quantization == "int8" else "")

    # -- lifecycle ---------------------------------------------------------------------

    def ensure_ready(self, signature: str, dimensions: int | None) -> ReadyState:
        if not dimensions:
            return ReadyState(False, "no dimensions available yet (learned from the first vector)")
        wanted = self.effective_signature(signature)
        if (
            self._signature == wanted
            and self._dim == dimensions
            and _schema_present(self.db.read())  # else self-heal, even in a long-lived store
        ):
            return ReadyState(True, "sqlite-vec ready")

        def apply(conn: Any) -> ReadyState:
            meta = read_meta(conn)
            healed = not _table_exists(conn)
            conn.execute(_SCHEMA)
            if (
                meta["signature"] is None
                and not conn.execute("SELECT 1 FROM vec_memories LIMIT 1").fetchall()
            ):
                # First embedder on this database: nothing to discard, nothing to reset.
                _write_meta(conn, dimensions, wanted, reset=False)
                return ReadyState(True, f"vec_memories ready for {wanted}")
            if meta["signature"] != wanted or meta["activeDim"] != dimensions:
                conn.execute("DELETE FROM vec_memories")
                marked = mark_all_reindex(conn)
                _write_meta(conn, dimensions, wanted, reset=True)
                return ReadyState(
                    True,
                    f"vec_memories recreated for {wanted} (was {meta['signature']}); "
                    f"{marked} memories queued for reindex",
                    recreated=True,
                )
            if healed:
                mark_all_reindex(conn)
                return ReadyState(True, "vec_memories was missing: recreated", recreated=True)
            return ReadyState(True, "sqlite-vec ready")

        state = self.db.write(apply)
        self._signature, self._dim = wanted, dimensions
        return state

    def _blob_sql(self) -> str:
        return "vec_quantize_int8(?, 'unit')" if self.quantization == "int8" else "?"

    def _blob_len(self) -> int:
        assert self._dim is not None
        return self._dim if self.quantization == "int8" else self._dim * 4

    # -- writes ------------------------------------------------------------------------

    def upsert_in(self, conn: Any, items: Sequence[VectorItem]) -> int:
        """Write vectors inside the caller's transaction; returns how many rows existed."""
        written = 0
        sql = (
            f"INSERT OR REPLACE INTO vec_memories (seq, emb) "
            f"SELECT seq, {self._blob_sql()} FROM memories WHERE id = ?"
        )
        for item in items:
            vector = np.asarray(item.vector, dtype=np.float32)
            if self._dim is not None and vector.shape[0] != self._dim:
                raise ValueError(f"vector has {vector.shape[0]} dims, store expects {self._dim}")
            conn.execute(sql, (vector.tobytes(), item.memory_id))
            written += conn.changes()
        return written

    def upsert(self, items: Sequence[VectorItem]) -> None:
        if items:
            self.db.write(lambda conn: self.upsert_in(conn, items))

    def delete(self, memory_ids: Sequence[str]) -> None:
        ids = list(memory_ids)
        if not ids:
            return
        marks = ", ".join("?" for _ in ids)
        self.db.write(
            lambda conn: conn.execute(
                "DELETE FROM vec_memories WHERE seq IN "
                f"(SELECT seq FROM memories WHERE id IN ({marks}))",
                ids,
            )
        )

    # -- reads -------------------------------------------------------------------------

    def search(
        self, vector: np.ndarray, k: int, flt: Filter, conn: Any | None = None
    ) -> list[tuple[str, float]]:
        if self._dim is None or k <= 0:
            return []  # (a negative LIMIT would mean "no limit" to SQLite)
        where, params = flt.sql()
        query = np.asarray(vector, dtype=np.float32).tobytes()
        if self.quantization == "int8":
            dist = "vec_distance_cosine(vec_int8(v.emb), vec_quantize_int8(?, 'unit'))"
        else:
            dist = "vec_distance_cosine(v.emb, ?)"
        rows = (conn or self.db.read()).execute(
            f"SELECT m.id, {dist} AS d FROM memories m JOIN vec_memories v ON v.seq = m.seq "
            f"WHERE {where} AND length(v.emb) = ? ORDER BY d LIMIT ?",
            [query, *params, self._blob_len(), k],
        )
        # float32 rounding can put an exact match a hair past 1: keep scores in [-1, 1].
        return [(r[0], max(-1.0, min(1.0, 1.0 - float(r[1])))) for r in rows]

    def stats(self) -> dict[str, Any]:
        conn: Any = self.db.read()
        meta = read_meta(conn)
        count = (
            conn.execute("SELECT COUNT(*) FROM vec_memories").fetchall()
            if _table_exists(conn)
            else [(0,)]
        )
        pending = conn.execute("SELECT COUNT(*) FROM memories WHERE needs_reindex = 1").fetchall()
        return {
            "rowCount": int(count[0][0]),
            "needsReindex": int(pending[0][0]),
            "activeDim": meta["activeDim"],
            "signature": meta["signature"],
            "quantization": self.quantization,
        }

    def health(self) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            self.db.read().execute("SELECT vec_version()").fetchone()
        except Exception as exc:
            return {"ok": False, "latencyMs": 0.0, "error": str(exc)}
        return {"ok": True, "latencyMs": round((time.perf_counter() - start) * 1000, 3)}
