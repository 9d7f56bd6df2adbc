"""Embedding throughput per source and retrieval latency per strategy and corpus size."""

from __future__ import annotations

import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.corpus import facts, queries
from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.embedding import EmbeddingResolution, local_model_files
from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory
from memoryd.settings import MemorySettings

CACHE = Path(__file__).resolve().parent / ".cache"


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


def open_engine(tmp: Path, resolution: EmbeddingResolution | None) -> MemoryEngine:
    def resolve(settings: MemorySettings, ctx: Any) -> EmbeddingResolution:
        return resolution or EmbeddingResolution(None, None, None, "bench: keyword only")

    env = {"MEMORYD_DATA_DIR": str(tmp), "MEMORY_STATIC_MODEL": str(CACHE / "static")}
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


def retrieval_latency(
    sources: dict[str, Any], sizes: tuple[int, ...], progress: Callable[[str], None]
) -> list[dict[str, Any]]:
    rows = []
    qs = queries(200)
    configs: list[tuple[str, Any]] = [("keyword-only", None), *sources.items()]
    for size in sizes:
        corpus = facts(size)
        for label, resolution in configs:
            progress(f"retrieval: {size} memories, embedder {label}")
            with tempfile.TemporaryDirectory() as tmp:
                engine = open_engine(Path(tmp), resolution)
                try:
                    start = time.perf_counter()
                    for i in range(0, size, 1000):
                        engine.create_many(
                            NewMemory("bench", text) for text in corpus[i : i + 1000]
                        )
                    ingest_s = time.perf_counter() - start
                    engine.drain(timeout=3600)
                    embed_s = time.perf_counter() - start
                    strategies = (
                        ["exact", "hybrid"]
                        if resolution is None
                        else ["exact", "semantic", "hybrid"]
                    )
                    for strategy in strategies:
                        # `recent` is what the gateway runs without a query
                        ask = (lambda q: None) if strategy == "exact" else (lambda q: q)
                        for q in qs[:10]:  # warm-up (model, caches, page cache)
                            engine.preview("bench", ask(q), strategy=strategy)
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
                                "p50_ms": round(percentile(times, 50), 3),
                                "p95_ms": round(percentile(times, 95), 3),
                                "p99_ms": round(percentile(times, 99), 3),
                                "ingest_per_s": round(size / ingest_s, 1),
                                "ingest_with_embedding_per_s": (
                                    round(size / embed_s, 1) if resolution else None
                                ),
                            }
                        )
                finally:
                    engine.close()
    return rows
