"""Vector-store latency and recall: sqlite-vec vs Qdrant Edge vs qdrant-client local mode.

384-d unit vectors drawn around 200 cluster centres (random but clustered, like
sentence embeddings), one owner, owner-filtered top-10 queries near stored points (the
retrieval path's query shape). Latency p50/p95 per query; recall@10 against exact
numpy KNN. Qdrant Edge is measured after its HNSW graph is built (in a child process,
as the engine does) for quantization none and int8. qdrant-client's local mode is a
brute-force Python implementation meant for tests: it is measured at 10k only
(NOTES.md: ~1 s per filtered query at 100k).
"""

from __future__ import annotations

import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.config import EngineConfig
from memoryd.config.settings import SettingsService
from memoryd.engine import MemoryEngine
from memoryd.models import Memory, NewMemory, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sqlite.database import Database
from memoryd.storage.sqlite.store import SqliteStore
from memoryd.vectors.base import VectorItem
from memoryd.vectors.qdrant.client import memory_payload

DIM = 384
QUERIES = 100
K = 10
LOCAL_MAX = 10_000
OWNER = "bench"


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def clustered(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, DIM)).astype(np.float32)
    raw = centres[rng.integers(0, 200, n)] + 0.9 * rng.standard_normal((n, DIM)).astype(np.float32)
    return (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)


def queries_near(data: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = data[rng.integers(0, len(data), QUERIES)] + 0.5 * rng.standard_normal(
        (QUERIES, DIM)
    ).astype(np.float32)
    return (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)


def exact_top(data: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    return [set(np.argpartition(-(data @ q), K)[:K].tolist()) for q in queries]


def measure(
    search: Callable[[np.ndarray], list[tuple[str, float]]],
    queries: np.ndarray,
    index: dict[str, int],
    truth: list[set[int]],
) -> dict[str, Any]:
    for q in queries[:5]:  # warm caches
        search(q)
    times, recalls = [], []
    for q, expected in zip(queries, truth, strict=True):
        start = time.perf_counter()
        hits = search(q)
        times.append((time.perf_counter() - start) * 1000)
        recalls.append(len({index[mid] for mid, _ in hits} & expected) / K)
    return {
        "p50Ms": round(statistics.median(times), 3),
        "p95Ms": round(percentile(times, 95), 3),
        "recallAt10": round(statistics.mean(recalls), 4),
    }


def _memories(engine: MemoryEngine, n: int) -> list[Memory]:
    out: list[Memory] = []
    for start in range(0, n, 5000):
        batch = engine.create_many(
            NewMemory(api_key_id=OWNER, content=f"bench memory {i}", key=f"b{i}")
            for i in range(start, min(n, start + 5000))
        )
        out += [m for m, _ in batch]
    return out


COLUMNS = ("store", "vectors", "quantization", "buildS", "indexed", "plainP50Ms", "p50Ms",
           "p95Ms", "recallAt10", "note")  # fmt: skip


def vector_latency(sizes: tuple[int, ...], progress: Callable[[str], None]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in sizes:
        rows += _one_size(n, progress)
    return [{c: r.get(c) for c in COLUMNS} for r in rows]


def _one_size(n: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    from memoryd.vectors.sqlite_vec import SqliteVecStore

    rows: list[dict[str, Any]] = []
    data = clustered(n, 1)
    queries = queries_near(data, 2)
    truth = exact_top(data, queries)
    with tempfile.TemporaryDirectory() as tmp:
        config = EngineConfig.from_env({}, data_dir=Path(tmp) / "data")
        config.data_dir.mkdir(parents=True)
        db = Database(config.db_path)
        store = SqliteStore(db)
        engine = MemoryEngine(store, config, SettingsService(store))
        try:
            progress(f"{n}: writing memories")
            memories = _memories(engine, n)
            index = {m.id: i for i, m in enumerate(memories)}
            items = [
                VectorItem(m.id, OWNER, data[i], memory_payload(m)) for i, m in enumerate(memories)
            ]
            flt = Filter(owners=(OWNER,), now=utcnow())
            sqlite = SqliteVecStore(db)
            sqlite.ensure_ready("bench:384", DIM)
            start = time.perf_counter()
            sqlite.upsert(items)
            extra: dict[str, Any] = {"quantization": "none"}
            extra["buildS"] = round(time.perf_counter() - start, 1)
            result = measure(lambda q: sqlite.search(q, K, flt), queries, index, truth)
            rows.append({"store": "sqlite-vec", "vectors": n, **extra, **result})
            for quant in ("none", "int8"):
                extra, result = _edge(Path(tmp), quant, items, flt, queries, index, truth, progress)
                rows.append({"store": "qdrant-edge", "vectors": n, **extra, **result})
            if n <= LOCAL_MAX:
                extra, result = _local(items, flt, queries, index, truth)
                rows.append({"store": "qdrant-client local", "vectors": n, **extra, **result})
            else:
                note = f"skipped above {LOCAL_MAX}: brute force in Python (~1 s/query)"
                rows.append({"store": "qdrant-client local", "vectors": n, "note": note})
            for r in rows:
                progress(str(r))
        finally:
            engine.close()
    return rows


def _edge(
    tmp: Path,
    quant: str,
    items: list[VectorItem],
    flt: Filter,
    queries: np.ndarray,
    index: dict[str, int],
    truth: list[set[int]],
    progress: Callable[[str], None],
) -> tuple[dict[str, Any], dict[str, Any]]:
    from memoryd.vectors.qdrant.edge import QdrantEdgeStore

    store = QdrantEdgeStore(tmp / f"edge-{quant}", "bench", quant)
    store.ensure_ready("bench:384", DIM)
    start = time.perf_counter()
    store.upsert(items)
    upsert = time.perf_counter() - start
    plain = measure(lambda q: store.search(q, K, flt), queries, index, truth)
    progress(f"edge {quant}: plain segments {plain}; building HNSW")
    optimized = store.optimize_in_subprocess()
    store.ensure_ready("bench:384", DIM)
    result = measure(lambda q: store.search(q, K, flt), queries, index, truth)
    info = store.info()
    store.close()
    extra = {
        "quantization": quant,
        "buildS": round(upsert + float(optimized.get("seconds", 0)), 1),
        "indexed": info["indexed"],
        "plainP50Ms": plain["p50Ms"],
    }
    return extra, result


def _local(
    items: list[VectorItem],
    flt: Filter,
    queries: np.ndarray,
    index: dict[str, int],
    truth: list[set[int]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    from memoryd.config.qdrant import QdrantConfig
    from memoryd.vectors.qdrant.client import QdrantStore

    with warnings.catch_warnings():  # local mode warns about its own size limits
        warnings.simplefilter("ignore")
        store = QdrantStore(QdrantConfig(enabled=True, path=":memory:", collection="bench"))
        store.ensure_ready("bench:384", DIM)
        start = time.perf_counter()
        store.upsert(items)
        build = round(time.perf_counter() - start, 1)
        result = measure(lambda q: store.search(q, K, flt), queries, index, truth)
        store.close()
    return {"quantization": "none", "buildS": build}, result
