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
from dataclasses import replace
from typing import Any

import numpy as np

from memoryd.storage.base import Filter, Writer
from memoryd.storage.sql.flags import count_pending, mark_all_reindex
from memoryd.storage.sql.session import SqlSession
from memoryd.storage.sqlite import vectors as vec_sql
from memoryd.storage.sqlite.database import Connection, Database
from memoryd.vectors.base import ReadyState, VectorItem
from memoryd.vectors.resident import ResidentVectors

#: Vector writes between two prunings of the change log.
PRUNE_EVERY = 1000


class SqliteVecStore:
    name = "sqlite-vec"

    def __init__(
        self,
        db: Database,
        *,
        quantization: str = "none",
        resident: ResidentVectors | None = None,
    ) -> None:
        if not db.capabilities.vec:
            raise RuntimeError(db.capabilities.vec_reason)
        self.db = db
        self.quantization = "int8" if quantization == "int8" else "none"
        # Large owners' float32 vectors searched in memory (int8 blobs stay in SQL).
        self.resident = resident if self.quantization == "none" else None
        self._written = 0
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
            and vec_sql.schema_present(self.db.read())  # else self-heal, even in a long-lived store
        ):
            return ReadyState(True, "sqlite-vec ready")

        def apply(conn: Any) -> ReadyState:
            meta = vec_sql.read_meta(conn)
            healed = not vec_sql.table_exists(conn)
            vec_sql.create_schema(conn)
            if meta["signature"] is None and not vec_sql.has_vectors(conn):
                # First embedder on this database: nothing to discard, nothing to reset.
                vec_sql.write_meta(conn, dimensions, wanted, reset=False)
                return ReadyState(True, f"vec_memories ready for {wanted}")
            if meta["signature"] != wanted or meta["activeDim"] != dimensions:
                vec_sql.clear(conn)
                marked = mark_all_reindex(conn)
                vec_sql.write_meta(conn, dimensions, wanted, reset=True)
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
        if self.resident is not None:
            self.resident.forget()
        return state

    def _blob_len(self) -> int:
        assert self._dim is not None
        return self._dim if self.quantization == "int8" else self._dim * 4

    # -- writes ------------------------------------------------------------------------

    def upsert_in(self, tx: Writer, items: Sequence[VectorItem]) -> int:
        """Write vectors inside the caller's transaction (the indexer clears the memory's
        flag in the same one); returns how many rows existed."""
        if not isinstance(tx, SqlSession) or not isinstance(tx.conn, Connection):
            raise TypeError("sqlite-vec writes inside a SQLite store's transaction only")
        return self._write(tx.conn, items)

    def _write(self, conn: Any, items: Sequence[VectorItem]) -> int:
        written = 0
        quantized = self.quantization == "int8"
        for item in items:
            vector = np.asarray(item.vector, dtype=np.float32)
            if self._dim is not None and vector.shape[0] != self._dim:
                raise ValueError(f"vector has {vector.shape[0]} dims, store expects {self._dim}")
            written += vec_sql.upsert(
                conn, item.memory_id, vector.tobytes(), quantized=quantized, view=item.view
            )
        self._written += len(items)
        if self._written >= PRUNE_EVERY:
            self._written = 0
            vec_sql.prune_changes(conn)
        return written

    def upsert(self, items: Sequence[VectorItem]) -> None:
        if items:
            self.db.write(lambda conn: self._write(conn, items))

    def delete(self, memory_ids: Sequence[str]) -> None:
        ids = list(memory_ids)
        if not ids:
            return
        self.db.write(lambda conn: vec_sql.delete(conn, ids))

    # -- reads -------------------------------------------------------------------------

    def search(
        self, vector: np.ndarray, k: int, flt: Filter, view: str = "memory"
    ) -> list[tuple[str, float]]:
        """Inside a store snapshot on this thread, the search reads that snapshot."""
        if self._dim is None or k <= 0:
            return []  # (a negative LIMIT would mean "no limit" to SQLite)
        conn = self.db.read()
        owners = flt.owners or ()
        if self.resident is not None and len(owners) > 1:
            # Several owners (the global scope): each answers on its own, resident or
            # in SQL, and the union of their k nearest holds the k nearest of all.
            rows = sorted(
                (
                    row
                    for o in dict.fromkeys(owners)
                    for row in self._one(conn, vector, k, replace(flt, owners=(o,)), view)
                ),
                key=lambda row: row[1],
            )[:k]
        else:
            rows = self._one(conn, vector, k, flt, view)
        # float32 rounding can put an exact match a hair past 1: keep scores in [-1, 1].
        return [(mid, max(-1.0, min(1.0, 1.0 - dist))) for mid, dist in rows]

    def _one(
        self, conn: Any, vector: np.ndarray, k: int, flt: Filter, view: str
    ) -> list[tuple[str, float]]:
        assert self._dim is not None
        rows = None
        if self.resident is not None:
            rows = self.resident.search(conn, view, flt, vector, k, self._dim)
        return self._knn(conn, vector, k, flt, view) if rows is None else rows

    def _knn(
        self, conn: Any, vector: np.ndarray, k: int, flt: Filter, view: str
    ) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32).tobytes()
        return vec_sql.knn(
            conn,
            query,
            k,
            flt,
            blob_len=self._blob_len(),
            quantized=self.quantization == "int8",
            view=view,
        )

    def stats(self) -> dict[str, Any]:
        conn: Any = self.db.read()
        meta = vec_sql.read_meta(conn)
        return {
            "rowCount": vec_sql.count(conn),
            "contextRowCount": vec_sql.count(conn, "context"),
            "needsReindex": count_pending(conn),
            "activeDim": meta["activeDim"],
            "signature": meta["signature"],
            "quantization": self.quantization,
            "resident": self.resident.stats() if self.resident is not None else None,
        }

    def health(self) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            vec_sql.version(self.db.read())
        except Exception as exc:
            return {"ok": False, "latencyMs": 0.0, "error": str(exc)}
        return {"ok": True, "latencyMs": round((time.perf_counter() - start) * 1000, 3)}
