"""Tier 1 on PostgreSQL: vectors in the same database with pgvector.

The counterpart of ``sqlite_vec.SqliteVecStore``: the indexer clears a memory's flag
and stores its vector in one transaction (``upsert_in``), a signature change drops
the table and queues every memory again, and a search runs under the retrieval filter
inside the caller's snapshot. ``quantization="half"`` stores ``halfvec`` (half the
size, the same cosine ranking to three decimals).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from memoryd.storage.base import Filter, Writer
from memoryd.storage.postgres import vectors as pgv
from memoryd.storage.postgres.database import PgConn, PgDatabase
from memoryd.storage.sql.flags import count_pending, mark_all_reindex
from memoryd.storage.sql.session import SqlSession
from memoryd.vectors.base import ReadyState, VectorItem


class PgVectorStore:
    name = "pgvector"

    def __init__(self, db: PgDatabase, *, quantization: str = "none") -> None:
        self.db = db
        self.quantization = "half" if quantization in ("half", "halfvec", "int8") else "none"
        self._dim: int | None = None
        self._signature: str | None = None

    def effective_signature(self, signature: str) -> str:
        return signature + (":half" if self.quantization == "half" else "")

    def ensure_ready(self, signature: str, dimensions: int | None) -> ReadyState:
        if not dimensions:
            return ReadyState(False, "no dimensions available yet (learned from the first vector)")
        wanted = self.effective_signature(signature)
        if self._signature == wanted and self._dim == dimensions:
            return ReadyState(True, "pgvector ready")

        def apply(raw: Any) -> ReadyState:
            conn = PgConn(raw)
            pgv.lock_schema(conn)  # one server at a time; the next finds it ready
            meta = pgv.read_meta(conn)
            if meta["signature"] == wanted and meta["activeDim"] == dimensions:
                if pgv.table_exists(conn):
                    return ReadyState(True, "pgvector ready")
                pgv.create(conn, dimensions, self.quantization)
                mark_all_reindex(conn)
                return ReadyState(True, "vec_memories was missing: recreated", recreated=True)
            had = pgv.has_vectors(conn)
            pgv.create(conn, dimensions, self.quantization)
            pgv.write_meta(conn, dimensions, wanted, reset=had)
            if meta["signature"] is None and not had:
                return ReadyState(True, f"vec_memories ready for {wanted}")
            marked = mark_all_reindex(conn)
            return ReadyState(
                True,
                f"vec_memories recreated for {wanted} (was {meta['signature']}); "
                f"{marked} memories queued for reindex",
                recreated=True,
            )

        state = self.db.write(apply)
        self._signature, self._dim = wanted, dimensions
        return state

    def upsert_in(self, tx: Writer, items: Sequence[VectorItem]) -> int:
        if not isinstance(tx, SqlSession) or not isinstance(tx.conn, PgConn):
            raise TypeError("pgvector writes inside a PostgreSQL store's transaction only")
        return self._write(tx.conn, items)

    def _write(self, conn: Any, items: Sequence[VectorItem]) -> int:
        written = 0
        for item in items:
            vector = np.asarray(item.vector, dtype=np.float32)
            if self._dim is not None and vector.shape[0] != self._dim:
                raise ValueError(f"vector has {vector.shape[0]} dims, store expects {self._dim}")
            written += pgv.upsert(
                conn, item.memory_id, vector.tolist(), self.quantization, item.view
            )
        return written

    def upsert(self, items: Sequence[VectorItem]) -> None:
        if items:
            self.db.write(lambda raw: self._write(PgConn(raw), items))

    def delete(self, memory_ids: Sequence[str]) -> None:
        ids = list(memory_ids)
        if ids:
            self.db.write(lambda raw: pgv.delete(PgConn(raw), ids))

    def search(
        self, vector: np.ndarray, k: int, flt: Filter, view: str = "memory"
    ) -> list[tuple[str, float]]:
        if self._dim is None or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).tolist()
        rows = self.db.run(lambda raw: pgv.knn(PgConn(raw), query, k, flt, self.quantization, view))
        return [(mid, max(-1.0, min(1.0, 1.0 - dist))) for mid, dist in rows]

    def stats(self) -> dict[str, Any]:
        def read(raw: Any) -> dict[str, Any]:
            conn = PgConn(raw)
            meta = pgv.read_meta(conn)
            return {
                "rowCount": pgv.count(conn),
                "contextRowCount": pgv.count(conn, "context"),
                "needsReindex": count_pending(conn),
                "activeDim": meta["activeDim"],
                "signature": meta["signature"],
                "quantization": self.quantization,
            }

        return self.db.run(read)

    def health(self) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            self.db.run(lambda raw: pgv.version(PgConn(raw)))
        except Exception as exc:
            return {"ok": False, "latencyMs": 0.0, "error": str(exc)}
        return {"ok": True, "latencyMs": round((time.perf_counter() - start) * 1000, 3)}
