"""Qdrant Edge: Qdrant's own engine in process (``qdrant-edge-py``), ``vectorStore =
"qdrant-edge"``.

One ``EdgeShard`` under ``<data_dir>/qdrant-edge/<collection>``, Cosine, the quantization
of the Qdrant settings, HNSW (m 16, ef_construct 100), and payload indexes on
``apiKeyId`` (a tenant index), ``kind``, ``sessionId``, ``type`` and the two times, so
an owner-filtered search stays exact for small owners (payload-index scan) and uses the
graph for large ones. Same contract, payload, filters and named vectors (``memory``,
``context``: ``views``) as ``vectors.qdrant``; the shard's layout is kept in its meta
file (a shard without it is an older one, with a single unnamed vector).

This store is an index over SQLite that memoryd owns, so unlike an external
collection a signature change (model, dimension) simply rebuilds it: ``ensure_ready``
returns ``recreated=True`` and the caller re-pushes every memory.

Index builds: new points land in a plain (brute-force) segment; ``optimize()`` builds
the HNSW graph. ``EdgeShard.optimize`` holds the GIL for the whole build (tens of
seconds at 100k points), which would freeze every thread of the server, so
``optimize_in_subprocess`` closes the shard, optimizes it in a child process and
reopens it; meanwhile the store reports itself unavailable and callers fall back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.storage.base import Filter
from memoryd.vectors.base import ReadyState, VectorItem
from memoryd.vectors.qdrant import views
from memoryd.vectors.qdrant.client import (
    KIND,
    UPSERT_BATCH,
    QdrantUnavailable,
    Terms,
    _brief,
    clamp_score,
    cleanup_cutoffs,
    item_payload,
    ms_since,
    point_id,
)
from memoryd.vectors.qdrant.views import CONTEXT, LEGACY, MEMORY, NAMED, Layout

META = "memoryd-edge.json"
HNSW_M = 16
HNSW_EF_CONSTRUCT = 100
#: Candidates explored per graph search (Qdrant's default is ef_construct).
HNSW_EF = 128
#: Below this many KB of vectors per segment Qdrant searches without a graph.
FULL_SCAN_THRESHOLD_KB = 10_000
#: Rebuild the graph once this many points (and 20 % of the shard) are not indexed.
OPTIMIZE_MIN_UNINDEXED = 5_000

_OPTIMIZE = (
    "import sys\n"
    "from qdrant_edge import EdgeShard\n"
    "shard = EdgeShard.load(sys.argv[1])\n"
    "shard.optimize()\n"
    "shard.flush()\n"
    "shard.close()\n"
)


def qdrant_edge_installed() -> bool:
    try:
        import qdrant_edge  # noqa: F401
    except ImportError:
        return False
    return True


class QdrantEdgeStore:
    name = "qdrant-edge"

    def __init__(
        self,
        directory: str | Path,
        collection: str,
        quantization: str = "none",
        *,
        full_scan_threshold_kb: int = FULL_SCAN_THRESHOLD_KB,
        indexing_threshold_kb: int | None = None,
    ) -> None:
        """The two thresholds are Qdrant's (KB of vectors per segment): below
        ``full_scan_threshold_kb`` a search scans, below ``indexing_threshold_kb`` (None:
        Qdrant's default) the optimizer builds no graph. Tests lower both."""
        if not qdrant_edge_installed():
            raise QdrantUnavailable(
                "qdrant-edge-py is not installed: pip install 'memoryd[qdrant]'"
            )
        self.directory = Path(directory)
        self.collection = collection
        self.quantization = quantization if quantization in ("int8", "binary") else "none"
        self.path = self.directory / collection
        self.full_scan_threshold_kb = full_scan_threshold_kb
        self.indexing_threshold_kb = indexing_threshold_kb
        self._lock = threading.RLock()
        self._shard: Any = None
        self._dim: int | None = None
        self._signature: str | None = None
        self._layout: Layout = NAMED
        self.optimizing = False
        self.last_optimize: dict[str, Any] | None = None
        self.guard: str | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def _meta_path(self) -> Path:
        return self.directory / f"{self.collection}.{META}"

    def _read_meta(self) -> dict[str, Any]:
        try:
            data = json.loads(self._meta_path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _config(self, dimensions: int) -> Any:
        import qdrant_edge as qe

        quant: Any = None
        if self.quantization == "int8":
            quant = qe.ScalarQuantizationConfig(
                type=qe.ScalarType.Int8, quantile=0.99, always_ram=True
            )
        elif self.quantization == "binary":
            quant = qe.BinaryQuantizationConfig(always_ram=True)
        params = qe.EdgeVectorParams(size=dimensions, distance=qe.Distance.Cosine)
        return qe.EdgeConfig(
            vectors={MEMORY: params, CONTEXT: params},
            hnsw_config=qe.HnswIndexConfig(
                m=HNSW_M,
                ef_construct=HNSW_EF_CONSTRUCT,
                full_scan_threshold=self.full_scan_threshold_kb,
            ),
            quantization_config=quant,
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=self.indexing_threshold_kb),
        )

    def _create(self, dimensions: int) -> Any:
        import qdrant_edge as qe

        shard = qe.EdgeShard.create(str(self.path), self._config(dimensions))
        tenant = qe.KeywordIndexParams(is_tenant=True)
        shard.update(qe.UpdateOperation.create_field_index("apiKeyId", tenant))
        for field in ("kind", "sessionId", "type"):
            shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
        for field in ("createdAtUnix", "expiresAtUnix"):
            shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Float))
        return shard

    def ensure_ready(self, signature: str, dimensions: int | None) -> ReadyState:
        if not dimensions:
            return ReadyState(False, "no dimensions available yet (learned from the first vector)")
        with self._lock:
            if self.optimizing:
                return ReadyState(False, "Qdrant Edge is building its HNSW index")
            if self._shard is not None and (self._signature, self._dim) == (signature, dimensions):
                return ReadyState(True, "Qdrant Edge ready")
            try:
                return self._open(signature, dimensions)
            except Exception as exc:
                return ReadyState(False, f"Qdrant Edge unavailable: {_brief(exc)}")

    def _open(self, signature: str, dimensions: int) -> ReadyState:
        import qdrant_edge as qe

        self.directory.mkdir(parents=True, exist_ok=True)
        meta = self._read_meta()
        same = meta.get("signature") == signature and meta.get("dimensions") == dimensions
        recreated = False
        if self._shard is not None:
            self._shard.close()
            self._shard = None
        if self.path.exists() and same:
            self._shard = qe.EdgeShard.load(str(self.path))
            names = meta.get("vectors")
            self._layout = Layout(*names) if isinstance(names, list) else LEGACY
        else:
            recreated = self.path.exists() or bool(meta)
            shutil.rmtree(self.path, ignore_errors=True)
            self._shard = self._create(dimensions)
            self._layout = NAMED
            self._write_meta(signature, dimensions)
        self._signature, self._dim = signature, dimensions
        if recreated:
            return ReadyState(
                True,
                f"Qdrant Edge shard rebuilt for {signature} (was {meta.get('signature')})",
                recreated=True,
            )
        return ReadyState(True, f"Qdrant Edge shard ready at {self.path}")

    def _write_meta(self, signature: str, dimensions: int) -> None:
        layout = [self._layout.memory, self._layout.context]
        meta = {"signature": signature, "dimensions": dimensions, "vectors": layout}
        self._meta_path().write_text(json.dumps(meta), encoding="utf-8")

    @property
    def context_unavailable(self) -> str | None:
        return views.unavailable(self.collection, self._layout) if self._dim else None

    def add_context_vector(self) -> None:
        """An older shard gains its context vector in place (``create_dense_vector``)."""
        import qdrant_edge as qe

        with self._lock:
            if self._layout.context is not None or self._signature is None or not self._dim:
                return
            shard = self._ready_shard()
            shard.update(
                qe.UpdateOperation.create_dense_vector(CONTEXT, self._dim, qe.Distance.Cosine)
            )
            self._layout = Layout(self._layout.memory, CONTEXT)
            self._write_meta(self._signature, self._dim)

    def close(self) -> None:
        with self._lock:
            shard, self._shard = self._shard, None
            self._dim = None
        if shard is not None:
            shard.flush()
            shard.close()

    @property
    def dimensions(self) -> int | None:
        return self._dim

    def _ready_shard(self) -> Any:
        if self.optimizing:
            raise QdrantUnavailable("Qdrant Edge is building its HNSW index")
        if self._shard is None:
            raise QdrantUnavailable("Qdrant Edge shard not open (ensure_ready first)")
        return self._shard

    # -- writes ------------------------------------------------------------------------

    def upsert(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        import qdrant_edge as qe

        with self._lock:
            shard = self._ready_shard()
            points = [
                qe.Point(point_id(item.memory_id), v, item_payload(item))
                for item, v in views.points(items, self._layout, self._dim)
            ]
            for start in range(0, len(points), UPSERT_BATCH):
                shard.update(qe.UpdateOperation.upsert_points(points[start : start + UPSERT_BATCH]))

    def delete(self, memory_ids: Sequence[str]) -> None:
        ids: list[Any] = [point_id(m) for m in memory_ids]
        if not ids:
            return
        import qdrant_edge as qe

        with self._lock:
            shard = self._ready_shard()
            for start in range(0, len(ids), 1000):
                shard.update(qe.UpdateOperation.delete_points(ids[start : start + 1000]))

    def flush(self) -> None:
        with self._lock:
            if self._shard is not None and not self.optimizing:
                self._shard.flush()

    # -- reads -------------------------------------------------------------------------

    def _filter(self, terms: Terms) -> Any:
        import qdrant_edge as qe

        must: list[Any] = [qe.FieldCondition(key="kind", match=qe.MatchValue(KIND))]
        if terms.owners is not None:
            must.append(qe.FieldCondition(key="apiKeyId", match=qe.MatchAny(list(terms.owners))))
        if terms.session_id is not None:
            must.append(qe.FieldCondition(key="sessionId", match=qe.MatchValue(terms.session_id)))
        if terms.type is not None:
            must.append(qe.FieldCondition(key="type", match=qe.MatchValue(terms.type)))
        if terms.created_after is not None:
            must.append(
                qe.FieldCondition(key="createdAtUnix", range=qe.RangeFloat(gte=terms.created_after))
            )
        must.append(
            qe.Filter(
                should=[
                    qe.IsNullCondition("expiresAtUnix"),
                    qe.IsEmptyCondition("expiresAtUnix"),
                    qe.FieldCondition(key="expiresAtUnix", range=qe.RangeFloat(gt=terms.now)),
                ]
            )
        )
        return qe.Filter(must=must)

    def search(
        self, vector: np.ndarray, k: int, flt: Filter, view: str = MEMORY
    ) -> list[tuple[str, float]]:
        hits = self.search_payloads(vector, k, flt, (), view)
        return [(mid, score) for mid, score, _ in hits]

    def search_payloads(
        self,
        vector: np.ndarray,
        k: int,
        flt: Filter,
        fields: Sequence[str] | bool = (),
        view: str = MEMORY,
    ) -> list[tuple[str, float, dict[str, Any]]]:
        if self._dim is None or k <= 0 or (flt.owners is not None and not flt.owners):
            return []
        if self._layout.name_of(view) is None:
            return []
        import qdrant_edge as qe

        quant = None
        if self.quantization != "none":
            # Binary codes are coarse: rescore a few times more candidates than asked.
            oversampling = 3.0 if self.quantization == "binary" else None
            quant = qe.QuantizationSearchParams(rescore=True, oversampling=oversampling)
        params = qe.SearchParams(hnsw_ef=max(HNSW_EF, k), quantization=quant)
        wanted: Any = True if fields is True else ["memoryId", *list(fields or ())]
        request = qe.QueryRequest(
            limit=k,
            query=qe.Query.Nearest(
                np.asarray(vector, dtype=np.float32).tolist(), using=self._layout.using(view)
            ),
            filter=self._filter(Terms.of(flt)),
            with_payload=wanted,
            params=params,
        )
        with self._lock:
            points = self._ready_shard().query(request)
        out = []
        for point in points:
            data = dict(point.payload or {})
            out.append((str(data.get("memoryId", point.id)), clamp_score(point.score), data))
        return out

    def _kind(self) -> Any:
        import qdrant_edge as qe

        return qe.Filter(must=[qe.FieldCondition(key="kind", match=qe.MatchValue(KIND))])

    def count(self) -> int:
        import qdrant_edge as qe

        with self._lock:
            return int(self._ready_shard().count(qe.CountRequest(exact=True, filter=self._kind())))

    def cleanup(self, retention_days: int, now: datetime | None = None) -> int:
        import qdrant_edge as qe

        moment, created_before = cleanup_cutoffs(retention_days, now)
        flt = qe.Filter(
            must=[qe.FieldCondition(key="kind", match=qe.MatchValue(KIND))],
            should=[
                qe.FieldCondition(key="expiresAtUnix", range=qe.RangeFloat(lt=moment)),
                qe.FieldCondition(key="createdAtUnix", range=qe.RangeFloat(lt=created_before)),
            ],
        )
        with self._lock:
            shard = self._ready_shard()
            found = int(shard.count(qe.CountRequest(exact=True, filter=flt)))
            if found:
                shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
        return found

    def memory_ids(self, batch: int = 1000) -> Iterator[list[str]]:
        import qdrant_edge as qe

        offset: Any = None
        while True:
            with self._lock:
                records, offset = self._ready_shard().scroll(
                    qe.ScrollRequest(offset=offset, limit=batch, with_payload=["memoryId"])
                )
            ids = [str((r.payload or {}).get("memoryId", r.id)) for r in records]
            if ids:
                yield ids
            if offset is None:
                return

    def info(self) -> dict[str, int]:
        """Points, and ``vectors``: what a full graph indexes (``indexed`` counts every
        named vector, so a point with its context vector counts twice)."""
        import qdrant_edge as qe

        with self._lock:
            shard = self._ready_shard()
            info = shard.info()
            contexts = 0
            if self._layout.context is not None:
                has = qe.Filter(must=[qe.HasVectorCondition(self._layout.context)])
                contexts = int(shard.count(qe.CountRequest(exact=True, filter=has)))
        return {
            "points": int(info.points_count),
            "vectors": int(info.points_count) + contexts,
            "indexed": int(info.indexed_vectors_count),
            "segments": int(info.segments_count),
        }

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "backend": self.name,
            "mode": "edge",
            "collection": self.collection,
            "path": str(self.path),
            "vectorSize": self._dim,
            "vectors": self._layout.names,
            "contextView": self.context_unavailable or "available",
            "quantization": self.quantization,
            "optimizing": self.optimizing,
            "lastOptimize": self.last_optimize,
        }
        if not self.optimizing and self._shard is not None:
            info = self.info()
            out.update(pointCount=info["points"], indexedVectors=info["indexed"])
        else:
            out["pointCount"] = None
        return out

    def health(self) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            self.info()
        except Exception as exc:
            return {"ok": False, "latencyMs": ms_since(start), "error": _brief(exc)}
        return {"ok": True, "latencyMs": ms_since(start)}

    # -- index builds ------------------------------------------------------------------

    def needs_optimize(self) -> bool:
        if self.optimizing or self._shard is None:
            return False
        info = self.info()
        unindexed = info["vectors"] - info["indexed"]
        return unindexed >= max(OPTIMIZE_MIN_UNINDEXED, info["vectors"] // 5)

    def optimize_in_subprocess(self, timeout_s: float = 3600.0) -> dict[str, Any]:
        """Build the HNSW graph in a child process (``EdgeShard.optimize`` holds the
        GIL); the store is unavailable meanwhile and reopens afterwards."""
        with self._lock:
            if self._shard is None or self.optimizing:
                return {"ok": False, "error": "shard not open"}
            self._shard.flush()
            self._shard.close()
            self._shard = None
            self.optimizing = True
        start = time.perf_counter()
        error = None
        try:
            done = subprocess.run(
                [sys.executable, "-c", _OPTIMIZE, str(self.path)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
            if done.returncode != 0:
                error = (done.stderr.strip().splitlines() or ["optimize failed"])[-1][:300]
        except (OSError, subprocess.SubprocessError) as exc:
            error = _brief(exc)
        finally:
            import qdrant_edge as qe

            with self._lock:
                self._shard = qe.EdgeShard.load(str(self.path))
                self.optimizing = False
        result: dict[str, Any] = {
            "ok": error is None,
            "seconds": round(time.perf_counter() - start, 2),
        }
        if error:
            result["error"] = error
        self.last_optimize = result
        return result
