"""Embedding throughput per source and retrieval latency per strategy and corpus size."""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.corpus import facts, queries
from bench.machine import peak_rss_mb, reset_peak_rss, rss_mb
from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.config.settings import MemorySettings
from memoryd.embedding import EmbeddingResolution, local_model_files
from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory

CACHE = Path(__file__).resolve().parent / ".cache"
BATCH = 1000  # memories per create_many transaction
SCALE_MIN = 10_000  # smallest corpus whose RSS delta is scaled to "per 100k"


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def static_model_dir(progress: Callable[[str], None]) -> Path | None:
    """The benchmark's static model, distilled once from the local MiniLM and cached."""
    target = CACHE / "static"
    if (target / "tokenizer.json").exists():
        return target
    if local_model_files() is None:
        return None
    from memoryd.embedding import build_static

    progress("distilling the static model once (cached in bench/.cache/static)")
    return build_static(target)


def resolvers(progress: Callable[[str], None]) -> dict[str, Any]:
    """Embedding sources available here, as fixed resolvers (settings bypassed)."""
    out: dict[str, Any] = {}
    if local_model_files() is not None:
        out["transformers"] = EmbeddingResolution("transformers", "all-MiniLM-L6-v2", 384, "bench")
    static = static_model_dir(progress)
    if static is not None:
        from memoryd.embedding.locate import static_model_info

        info = static_model_info(static)
        if info is not None:
            out["static"] = EmbeddingResolution("static", str(static), info.dimensions, "bench")
    return out


def open_engine(
    tmp: Path, resolution: EmbeddingResolution | None, extra: dict[str, str] | None = None
) -> MemoryEngine:
    def resolve(settings: MemorySettings, ctx: Any) -> EmbeddingResolution:
        return resolution or EmbeddingResolution(None, None, None, "bench: keyword only")

    env = {"MEMORYD_DATA_DIR": str(tmp), "MEMORY_STATIC_MODEL": str(CACHE / "static")}
    env |= extra or {}
    return build_engine(EngineConfig.from_env(env, data_dir=tmp), env, embedding_resolver=resolve)


def embedding_throughput(sources: dict[str, Any], n: int = 2000) -> list[dict[str, Any]]:
    texts = facts(n, seed=3)
    rows = []
    for name, resolution in sources.items():
        with tempfile.TemporaryDirectory() as tmp:
            engine = open_engine(Path(tmp), resolution)
            try:
                assert engine.embeddings is not None
                _, embedder = engine.embeddings.current()
                assert embedder is not None
                inner = getattr(embedder, "inner", embedder)
                inner.embed_batch(texts[:64])  # load the model outside the timing
                start = time.perf_counter()
                for i in range(0, n, 64):
                    inner.embed_batch(texts[i : i + 64])
                batch_s = time.perf_counter() - start
                singles = [time.perf_counter()]
                for text in texts[:200]:
                    inner.embed_batch([text])
                    singles.append(time.perf_counter())
                one = [(b - a) * 1000 for a, b in itertools.pairwise(singles)]
            finally:
                engine.close()
        rows.append(
            {
                "source": name,
                "model": resolution.model,
                "dimensions": resolution.dimensions,
                "texts_per_s_batched": round(n / batch_s, 1),
                "single_text_ms_p50": round(statistics.median(one), 3),
            }
        )
    return rows


def _db_mb(directory: Path) -> float:
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()) / 2**20


def measure_config(
    size: int,
    label: str,
    resolution: EmbeddingResolution | None,
    n_queries: int,
    env: dict[str, str] | None = None,
    strategies: tuple[str, ...] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One corpus size under one embedder, in a fresh process (``retrieval_latency`` runs
    it in a spawned child): ingest, then per-strategy latency. The RSS figures are this
    process's own: measured after the engine is open and its model loaded, and again
    after the corpus is stored and indexed."""
    corpus = facts(size)  # allocated before the baseline: only the engine's cost counts
    qs = queries(n_queries)
    with tempfile.TemporaryDirectory() as tmp:
        engine = open_engine(Path(tmp), resolution, env)
        try:
            if engine.embeddings is not None:
                _, embedder = engine.embeddings.current()
                if embedder is not None:
                    # a full indexer batch (64): the runtime's buffers reach their size
                    getattr(embedder, "inner", embedder).embed_batch(facts(64, seed=99))
            gc.collect()
            rss_before = rss_mb()
            peak_reset = reset_peak_rss()
            start = time.perf_counter()
            for i in range(0, size, BATCH):
                engine.create_many(NewMemory("bench", text) for text in corpus[i : i + BATCH])
            ingest_s = time.perf_counter() - start
            engine.drain(timeout=7200)
            embed_s = time.perf_counter() - start
            gc.collect()
            rss_after, peak = rss_mb(), peak_rss_mb()
            disk = _db_mb(Path(tmp))
            chosen = strategies or (
                ("exact", "hybrid") if resolution is None else ("exact", "semantic", "hybrid")
            )
            rows = []
            keyword_build_s: float | None = None
            for strategy in chosen:
                # `recent` (no query) is what the gateway runs when there is nothing to search
                ask = (lambda q: None) if strategy == "exact" else (lambda q: q)
                for q in qs[:10]:  # warm-up (model, caches, page cache)
                    engine.preview("bench", ask(q), strategy=strategy)
                # The steady state: a large owner's keyword postings are built by a
                # background thread after its first search (storage/sqlite/keywords.py).
                keyword_build_s = _wait_for_keyword_builds(engine) or keyword_build_s
                times = []
                for q in qs:
                    if engine.embeddings is not None:
                        engine.embeddings.cache.clear()  # measure query embedding too
                    t0 = time.perf_counter()
                    engine.preview("bench", ask(q), strategy=strategy)
                    times.append((time.perf_counter() - t0) * 1000)
                rows.append(
                    {
                        "memories": size,
                        "embedder": label,
                        "strategy": "recent" if strategy == "exact" else strategy,
                        "queries": len(times),
                        "p50_ms": round(percentile(times, 50), 3),
                        "p95_ms": round(percentile(times, 95), 3),
                        "p99_ms": round(percentile(times, 99), 3),
                        "mean_ms": round(statistics.fmean(times), 3),
                    }
                )
            # Large owners' vectors held in memory after the searches (vectors.resident).
            vector_store = engine.status().get("vectorStore") or {}
            resident_mb = (vector_store.get("resident") or {}).get("mb")
            keyword_mb = ((engine.status().get("keyword") or {}).get("resident") or {}).get("mb")
            rss_searched = rss_mb()
        finally:
            engine.close()
    delta = rss_after - rss_before
    ingest = {
        "memories": size,
        "embedder": label,
        "ingest_per_s": round(size / ingest_s, 1),
        "ingest_with_embedding_per_s": round(size / embed_s, 1) if resolution else None,
        "rss_before_mb": round(rss_before, 1),
        "rss_after_mb": round(rss_after, 1),
        "rss_peak_mb": round(peak, 1) if peak_reset else None,
        "rss_delta_mb": round(delta, 1),
        # scaled only from 10k up: below that, allocator noise dominates the delta
        "rss_mb_per_100k": round(delta * 100_000 / size, 1) if size >= SCALE_MIN else None,
        "peak_delta_mb_per_100k": (
            round((peak - rss_before) * 100_000 / size, 1)
            if peak_reset and size >= SCALE_MIN
            else None
        ),
        "disk_mb": round(disk, 1),
        "resident_mb": resident_mb,
        "keyword_resident_mb": keyword_mb,
        "keyword_build_s": round(keyword_build_s, 2) if keyword_build_s else None,
        "rss_after_searches_mb": round(rss_searched, 1),
    }
    return rows, ingest


def _wait_for_keyword_builds(engine: Any) -> float | None:
    """Wait for the keyword postings' background builds; the last one's seconds."""
    keywords = getattr(engine.store, "keywords", None)
    if keywords is None:
        return None
    keywords.wait_for_builds(3600)
    seconds: float | None = keywords.stats()["lastBackgroundBuildS"]
    return seconds


def retrieval_latency(
    sources: dict[str, Any],
    sizes: tuple[int, ...],
    progress: Callable[[str], None],
    *,
    n_queries: int = 200,
    transformers_max: int | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Latency rows (per size, embedder and strategy) and ingest/RSS rows (per size and
    embedder). Each configuration runs in its own spawned process, so its RSS is clean
    and one run's caches and allocator state do not carry into the next."""
    latency: list[dict[str, Any]] = []
    ingest: list[dict[str, Any]] = []
    configs: list[tuple[str, Any]] = [("keyword-only", None), *sources.items()]
    spawn = multiprocessing.get_context("spawn")
    for size in sizes:
        for label, resolution in configs:
            if label == "transformers" and transformers_max is not None and size > transformers_max:
                progress(f"retrieval: {size} memories, transformers skipped (--transformers-max)")
                continue
            progress(f"retrieval: {size} memories, embedder {label}")
            started = time.perf_counter()
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                rows, one = pool.submit(measure_config, size, label, resolution, n_queries).result()
            progress(f"retrieval: {size} memories, {label}: {time.perf_counter() - started:.0f} s")
            latency += rows
            ingest.append(one)
    return latency, ingest
