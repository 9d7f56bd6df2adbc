"""Gateway overhead: memoryd in front of a fake upstream vs the fake upstream alone.

Both run as real processes (``memoryd serve`` and ``python -m memoryd.testing``); the
same httpx client in this process alternates requests between them, so drift on a
noisy machine hits both sides. 1,000 memories are stored for the key; memory is on.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.corpus import facts, queries
from bench.retrieval import CACHE, percentile
from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.models import NewMemory

ADMIN = "bench-admin-token"
EMBEDDERS: dict[str, dict[str, Any]] = {
    "keyword-only": {"transformersEnabled": False, "staticEnabled": False},
    "static": {"embeddingSource": "static", "staticEnabled": True},
    "transformers": {"embeddingSource": "transformers", "transformersEnabled": True},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


@contextlib.contextmanager
def process(
    args: list[str], env: dict[str, str], ready_url: str, log_path: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``args`` until the block ends (SIGTERM, then SIGKILL after 30 s) and yield
    its ``Popen`` (the abuse run reads its RSS); its stderr goes to ``log_path`` when
    given (kept for the caller to read), else a temp file."""
    with open(log_path, "w+b") if log_path else tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            try:
                wait_ready(ready_url)
            except RuntimeError:
                log.seek(0)
                raise RuntimeError(f"{args[0]} did not start: {log.read()[-2000:]!r}") from None
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def prepare(
    data_dir: Path, settings: dict[str, Any], env: dict[str, str], count: int = 1000
) -> str:
    """A data dir with one key holding ``count`` memories; returns the key's secret."""
    engine = build_engine(EngineConfig.from_env(env, data_dir=data_dir), env)
    try:
        engine.settings.update(settings)
        record, secret = engine.keys.create("bench")
        engine.create_many(NewMemory(record.id, text) for text in facts(count))
        engine.reindex()
        engine.drain(timeout=600)
    finally:
        engine.close()
    return secret


def timed(send: Callable[[], None], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        send()
        out.append((time.perf_counter() - start) * 1000)
    return out


def throughput(send: Callable[[], None], seconds: float = 4.0, workers: int = 8) -> float:
    stop = time.monotonic() + seconds
    counts = [0] * workers

    def loop(i: int) -> None:
        while time.monotonic() < stop:
            send()
            counts[i] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / seconds


def measure(
    label: str,
    settings: dict[str, Any],
    n: int,
    progress: Callable[[str], None],
    database_url: str = "",
) -> list[dict[str, Any]]:
    """One embedder's rows (plain and streamed), on SQLite or the given PostgreSQL."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        up_port, md_port = free_port(), free_port()
        env = dict(os.environ) | {
            "MEMORYD_DATA_DIR": str(data),
            "MEMORYD_ADMIN_TOKEN": ADMIN,
            "MEMORY_STATIC_MODEL": str(CACHE / "static"),
            "MEMORYD_UPSTREAM_BASE_URL": f"http://127.0.0.1:{up_port}/v1",
            "MEMORYD_DATABASE_URL": database_url,
        }
        progress(f"gateway: preparing 1,000 memories ({label})")
        secret = prepare(data, settings, env)
        upstream = [sys.executable, "-m", "memoryd.testing", "--port", str(up_port)]
        memoryd = [str(Path(sys.executable).with_name("memoryd")), "serve", "--port", str(md_port)]
        with (
            process(upstream, env, f"http://127.0.0.1:{up_port}/v1/models"),
            process(memoryd, env, f"http://127.0.0.1:{md_port}/healthz"),
            httpx.Client(timeout=60) as client,
        ):
            for stream in (False, True):
                progress(f"gateway: {label}, stream={stream}")
                row = _compare(client, label, stream, up_port, md_port, secret, n)
                rows.append({"store": "postgresql" if database_url else "sqlite", **row})
    return rows


def _compare(
    client: httpx.Client, label: str, stream: bool, up_port: int, md_port: int, secret: str, n: int
) -> dict[str, Any]:
    qs = queries(n + 100)
    counter = iter(range(10**9))

    def body() -> dict[str, Any]:
        content = qs[next(counter) % len(qs)]
        return {
            "model": "fake",
            "stream": stream,
            "messages": [{"role": "user", "content": content}],
        }

    def direct() -> None:
        client.post(f"http://127.0.0.1:{up_port}/v1/chat/completions", json=body()).read()

    def gateway() -> None:
        client.post(
            f"http://127.0.0.1:{md_port}/v1/chat/completions",
            json=body(),
            headers={"Authorization": f"Bearer {secret}"},
        ).read()

    timed(direct, 30)
    timed(gateway, 30)  # warm-up: model load, caches, connections
    base: list[float] = []
    through: list[float] = []
    for _ in range(n):  # alternate, so machine noise hits both sides alike
        base += timed(direct, 1)
        through += timed(gateway, 1)
    return {
        "embedder": label,
        "stream": stream,
        "upstream_p50_ms": round(percentile(base, 50), 2),
        "added_p50_ms": round(percentile(through, 50) - percentile(base, 50), 2),
        "added_p95_ms": round(percentile(through, 95) - percentile(base, 95), 2),
        "added_p99_ms": round(percentile(through, 99) - percentile(base, 99), 2),
        "upstream_rps": round(throughput(direct), 1),
        "gateway_rps": round(throughput(gateway), 1),
    }


def gateway_overhead(
    embedders: list[str], n: int, progress: Callable[[str], None]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for label in embedders:
        if label == "static" and not (CACHE / "static" / "tokenizer.json").exists():
            continue
        rows += measure(label, EMBEDDERS[label], n, progress)
    return rows


def gateway_by_store(
    embedders: list[str], n: int, progress: Callable[[str], None]
) -> list[dict[str, Any]]:
    """The same overhead on SQLite and on PostgreSQL (a fresh database per embedder)."""
    from bench.stores import fresh_database, postgres_server

    rows: list[dict[str, Any]] = []
    with postgres_server() as server:
        for label in embedders:
            rows += measure(label, EMBEDDERS[label], n, progress)
            with fresh_database(server) as url:
                rows += measure(label, EMBEDDERS[label], n, progress, database_url=url)
    return rows
