"""Load: N concurrent clients for T seconds against a real ``memoryd serve``.

``python -m bench.load [--clients 50] [--seconds 60]``; ``--scaleout`` runs it on
SQLite, then on PostgreSQL with one server, two (the clients alternating) and one with
two workers, into one table (``bench/results/load_scaleout.json``). A fake upstream runs as its
own process. Each client loops over a mix: chat completions (half streaming) whose
user message states a unique preference (so extraction writes), REST memory writes,
reads (list/get) and retrieve-previews. Afterwards every acknowledged write is
checked: each REST-created memory exists exactly once with its content, and each
acknowledged chat's fact was extracted exactly once. Meanwhile the servers' resident set
size (each server process with its workers) is sampled every ``--rss-every`` seconds:
the RSS after a warm-up (``--rss-warmup``, 60 s), the peak, the last, the growth since
the warm-up and a least-squares slope in MB/min (``bench/rss.py``). Prints a table and
writes ``bench/results/load.json`` (the samples under its ``"rss"`` key).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from bench.gateway import free_port, process
from bench.output import write
from bench.retrieval import percentile
from bench.rss import WARMUP_S, RssSampler, rss_line
from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig

ADMIN = "load-admin-token-0123456789"


class Recorder:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, list[str]] = defaultdict(list)
        self.rest_writes: dict[str, str] = {}  # key -> content, acknowledged
        self.chat_facts: set[str] = set()  # unique tokens of acknowledged chats

    def ok(self, op: str, started: float) -> None:
        self.latency[op].append((time.perf_counter() - started) * 1000)

    def fail(self, op: str, detail: str) -> None:
        self.errors[op].append(detail[:300])


async def client_loop(
    n: int,
    bases: list[str],
    secrets: list[str],
    deadline: float,
    rec: Recorder,
    cycle: int | None = None,
) -> None:
    """One client; with several servers, its requests alternate between them. With
    ``cycle`` its tokens repeat every ``cycle`` requests, so its writes and stated facts
    update the same memories instead of adding new ones (a fixed-size data set)."""
    rng = random.Random(n)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=60))
            for base in bases
        ]
        i = 0
        while time.monotonic() < deadline:
            i += 1
            http = clients[(n + i) % len(clients)]
            op = rng.choice(["chat", "chat_stream", "write", "write", "read", "preview"])
            token = f"c{n}x{i % cycle if cycle else i}"
            # steady: a token always goes to the same key, so the set stays fixed
            key_index = (n + i % cycle) % len(secrets) if cycle else rng.randrange(len(secrets))
            owner = f"load{key_index}"
            started = time.perf_counter()
            try:
                if op in ("chat", "chat_stream"):
                    body = {
                        "model": "fake",
                        "stream": op == "chat_stream",
                        "messages": [{"role": "user", "content": f"I prefer flavour{token}."}],
                    }
                    headers = {"Authorization": f"Bearer {secrets[key_index]}"}
                    if op == "chat":
                        r = await http.post("/v1/chat/completions", json=body, headers=headers)
                        ok = r.status_code == 200 and r.json()["choices"]
                    else:
                        async with http.stream(
                            "POST", "/v1/chat/completions", json=body, headers=headers
                        ) as r:
                            data = b"".join([c async for c in r.aiter_raw()])
                        ok = r.status_code == 200 and data.rstrip().endswith(b"[DONE]")
                    if ok:
                        rec.chat_facts.add(f"{owner}:flavour{token}")
                elif op == "write":
                    content = f"load memory {token} for {owner}"
                    r = await http.post(
                        "/api/memory",
                        json={"apiKeyId": owner, "content": content, "key": f"load:{token}"},
                        headers=admin,
                    )
                    ok = r.status_code == 201 or (cycle is not None and r.status_code == 200)
                    if ok:
                        rec.rest_writes[f"{owner}:load:{token}"] = content
                elif op == "read":
                    r = await http.get(
                        "/api/memory", params={"apiKeyId": owner, "limit": 20}, headers=admin
                    )
                    ok = r.status_code == 200
                else:
                    r = await http.post(
                        "/api/memory/retrieve-preview",
                        json={"query": f"which flavour does {owner} prefer", "apiKeyId": owner},
                        headers=admin,
                    )
                    ok = r.status_code == 200
                if ok:
                    rec.ok(op, started)
                else:
                    rec.fail(
                        op, f"HTTP {r.status_code}: {r.text if not r.is_stream_consumed else ''}"
                    )
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                rec.fail(op, f"{type(exc).__name__}: {exc}")


def stored_rows(data_dir: Path, env: dict[str, str]) -> tuple[list[Any], str]:
    """Every memory's ``(owner, key, content)``, read from the database itself, and
    SQLite's ``integrity_check`` (PostgreSQL has none to run: "n/a")."""
    url = env.get("MEMORYD_DATABASE_URL", "")
    if url:
        import psycopg

        with psycopg.connect(url) as pg:
            return pg.execute("SELECT api_key_id, key, content FROM memories").fetchall(), "n/a"
    engine = build_engine(EngineConfig.from_env(env, data_dir=data_dir), env, start_indexing=False)
    try:
        store: Any = engine.store
        conn: Any = store.db.read()  # the SQLite file itself: integrity_check too
        rows = conn.execute("SELECT api_key_id, key, content FROM memories").fetchall()
        (integrity,) = conn.execute("PRAGMA integrity_check").fetchone()
        return list(rows), str(integrity)
    finally:
        engine.close()


def resume(data_dir: Path, env: dict[str, str]) -> int:
    """What the next start does with the extraction jobs a stop left queued (a server
    stops within ``MEMORYD_SHUTDOWN_S`` and gives them back): run them, so the check
    counts the facts as the person finds them after a restart. How many there were."""
    engine = build_engine(EngineConfig.from_env(env, data_dir=data_dir), env, start_indexing=False)
    try:
        resumed = engine.recover_extractions()
        engine.drain(120.0, include_index=False)
        return resumed
    finally:
        engine.close()


def verify(data_dir: Path, env: dict[str, str], rec: Recorder) -> dict[str, Any]:
    rows, integrity = stored_rows(data_dir, env)
    by_key: dict[str, list[str]] = defaultdict(list)
    for owner, key, content in rows:
        by_key[f"{owner}:{key}"].append(content)
    lost = [k for k in rec.rest_writes if k not in by_key]
    wrong = [k for k, c in rec.rest_writes.items() if k in by_key and by_key[k] != [c]]
    facts = {
        f"{owner}:{key.split(':', 1)[1]}" for owner, key, _ in rows if key.startswith("preference:")
    }
    lost_facts = [f for f in rec.chat_facts if f not in facts]
    return {
        "acknowledged_writes": len(rec.rest_writes),
        "lost_writes": len(lost),
        "duplicated_or_wrong": len(wrong),
        "acknowledged_chats": len(rec.chat_facts),
        "lost_extractions": len(lost_facts),
        "integrity_check": integrity,
        "stored_memories": len(rows),
    }


async def run_load(
    clients: int, seconds: float, bases: list[str], secrets: list[str], cycle: int | None = None
) -> Recorder:
    rec = Recorder()
    deadline = time.monotonic() + seconds
    await asyncio.gather(
        *(client_loop(i, bases, secrets, deadline, rec, cycle) for i in range(clients))
    )
    return rec


def run(
    clients: int,
    seconds: float,
    keys: int,
    *,
    database_url: str = "",
    servers: int = 1,
    workers: int = 1,
    rss_every: float = 10.0,
    rss_warmup: float = WARMUP_S,
    cycle: int | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One load run on a fresh data dir (or the given empty PostgreSQL database, with
    ``servers`` processes on it, each with ``workers``; ``cycle``: each client's tokens
    repeat, a fixed-size data set): per-operation rows and the
    after-run checks (what was acknowledged is stored exactly once; the logs are clean),
    with the servers' RSS, sampled every ``rss_every`` seconds, under ``checks["rss"]``."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        up_port = free_port()
        env = dict(os.environ) | {
            "MEMORYD_DATA_DIR": str(data),
            "MEMORYD_ADMIN_TOKEN": ADMIN,
            "MEMORYD_UPSTREAM_BASE_URL": f"http://127.0.0.1:{up_port}/v1",
            "MEMORYD_LOG_FORMAT": "json",
            "MEMORYD_DATABASE_URL": database_url,
        }
        engine = build_engine(EngineConfig.from_env(env, data_dir=data), env)
        secrets = [engine.keys.create(f"load{i}", key_id=f"load{i}")[1] for i in range(keys)]
        engine.close()
        upstream = [sys.executable, "-m", "memoryd.testing", "--port", str(up_port)]
        memoryd = str(Path(sys.executable).with_name("memoryd"))
        ports = [free_port() for _ in range(servers)]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        logs = [Path(tmp) / f"server{i}.log" for i in range(servers)]
        with contextlib.ExitStack() as stack:
            stack.enter_context(process(upstream, env, f"http://127.0.0.1:{up_port}/v1/models"))
            pids = []
            for i, port in enumerate(ports):
                own = env | {"MEMORYD_DATA_DIR": str(data / f"s{i}") if servers > 1 else str(data)}
                args = [memoryd, "serve", "--port", str(port), "--workers", str(workers)]
                proc = process(args, own, f"{bases[i]}/healthz", log_path=logs[i])
                pids.append(stack.enter_context(proc).pid)
            what = f"{servers} server(s) x {workers} worker(s)"
            print(f"... {clients} clients for {seconds:.0f} s, {what}", file=sys.stderr)
            sampler = RssSampler(pids, rss_every)
            started = time.monotonic()
            sampler.start()
            try:
                rec = asyncio.run(run_load(clients, seconds, bases, secrets, cycle))
            finally:
                sampler.stop()  # the last sample: after the load, before the servers stop
            elapsed = time.monotonic() - started
        # the servers stopped on SIGTERM; what they left queued runs as at the next start,
        # then what they acknowledged is checked
        log_text = "\n".join(log.read_text(errors="replace") for log in logs)
        resumed = resume(data, env)
        checks = verify(data, env, rec) | log_checks(log_text) | {"resumed_extractions": resumed}
    rows: list[dict[str, Any]] = [
        {
            "op": op,
            "count": len(times),
            "per_s": round(len(times) / elapsed, 1),
            "p50_ms": round(percentile(times, 50), 1),
            "p95_ms": round(percentile(times, 95), 1),
            "p99_ms": round(percentile(times, 99), 1),
            "errors": len(rec.errors.get(op, [])),
        }
        for op, times in sorted(rec.latency.items())
    ]
    checks |= {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests_per_s": round(sum(r["count"] for r in rows) / elapsed, 1),
        "errors": sum(len(v) for v in rec.errors.values()),
        "sample_errors": {op: msgs[:3] for op, msgs in rec.errors.items()},
        "rss": sampler.result(rss_warmup),
    }
    return rows, checks


def log_checks(log: str) -> dict[str, int]:
    """What the server's own log (JSON lines) says went wrong during the run."""
    records = []
    for line in log.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            records.append({"level": "raw", "message": line})
    return {
        "database_locked": sum("database is locked" in json.dumps(r) for r in records),
        "server_error_lines": sum(r.get("level") in ("error", "critical") for r in records),
        "http_5xx": sum(isinstance(r.get("status"), int) and r["status"] >= 500 for r in records),
    }


def failed(checks: dict[str, Any]) -> bool:
    return bool(
        checks["errors"]
        or checks["lost_writes"]
        or checks["lost_extractions"]
        or checks["duplicated_or_wrong"]
        or checks["integrity_check"] not in ("ok", "n/a")
        or checks["database_locked"]
        or checks["http_5xx"]
    )


def scaleout(
    clients: int, seconds: float, keys: int, rss_every: float = 10.0, rss_warmup: float = WARMUP_S
) -> int:
    """The same load on SQLite, then on PostgreSQL with one server, two servers (the
    clients alternating between them) and one server with two workers: one table,
    ``bench/results/load_scaleout.json``."""
    from bench.stores import fresh_database, postgres_server

    configs = [("sqlite", 1, 1), ("postgresql", 1, 1), ("postgresql", 2, 1), ("postgresql", 1, 2)]
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    with postgres_server() as server:
        for store, servers, workers in configs:
            with contextlib.ExitStack() as stack:
                url = stack.enter_context(fresh_database(server)) if store != "sqlite" else ""
                ops, checks = run(
                    clients,
                    seconds,
                    keys,
                    database_url=url,
                    servers=servers,
                    workers=workers,
                    rss_every=rss_every,
                    rss_warmup=rss_warmup,
                )
            runs.append(
                {"store": store, "servers": servers, "workers": workers, "ops": ops, **checks}
            )
            rows.append(
                {
                    "store": store,
                    "servers": servers,
                    "workers": workers,
                    "requests_per_s": checks["requests_per_s"],
                    "chat_p50_ms": next((r["p50_ms"] for r in ops if r["op"] == "chat"), None),
                    "chat_p99_ms": next((r["p99_ms"] for r in ops if r["op"] == "chat"), None),
                    "errors": checks["errors"],
                    "lost_writes": checks["lost_writes"],
                    "lost_extractions": checks["lost_extractions"],
                    "http_5xx": checks["http_5xx"],
                    "rss_peak_mb": checks["rss"]["rss_peak_mb"],
                    "rss_growth_mb": checks["rss"]["rss_growth_mb"],
                    "ok": not failed(checks),
                }
            )
            if failed(checks):
                print(json.dumps(checks, indent=2), file=sys.stderr)
    write("load_scaleout", rows, {"clients": clients, "seconds": seconds, "runs": runs})
    return 0 if all(r["ok"] for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument(
        "--rss-every", type=float, default=10.0, help="seconds between server RSS samples"
    )
    parser.add_argument(
        "--rss-warmup",
        type=float,
        default=WARMUP_S,
        help="seconds of load before the RSS baseline (growth and slope start there)",
    )
    parser.add_argument(
        "--steady",
        type=int,
        default=0,
        metavar="N",
        help="each client's tokens repeat every N requests: writes and stated facts "
        "update a fixed set of memories (RSS growth then is not data growth)",
    )
    parser.add_argument(
        "--scaleout",
        action="store_true",
        help="SQLite, then PostgreSQL with 1 server, 2 servers and 2 workers (one table)",
    )
    args = parser.parse_args(argv)
    if args.scaleout:
        return scaleout(args.clients, args.seconds, args.keys, args.rss_every, args.rss_warmup)
    rows, checks = run(
        args.clients,
        args.seconds,
        args.keys,
        rss_every=args.rss_every,
        rss_warmup=args.rss_warmup,
        cycle=args.steady or None,
    )
    rss = checks.pop("rss")
    name = "load_steady" if args.steady else "load"
    write(name, rows, {"checks": checks, "rss": rss, "steady_cycle": args.steady or None})
    print(json.dumps(checks, indent=2), file=sys.stderr)
    print(rss_line(rss), file=sys.stderr)
    return 1 if failed(checks) else 0


if __name__ == "__main__":
    raise SystemExit(main())
