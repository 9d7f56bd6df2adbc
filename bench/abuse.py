"""Abuse: polite tenants' latency while one greedy tenant and slow sockets attack.

``python -m bench.abuse [--quick] [--seconds 60] [--streams 250] [--slow 200]``, or the
``abuse`` stage of ``python -m bench``. A real ``memoryd serve`` (default limits, a temp
data dir) sits in front of a fake provider process whose streams last ~17 minutes. Eight
polite clients, each with its own key holding 50 memories, send non-streamed chats
(memory on: retrieval, injection, extraction), each pausing ``--think`` s between
them. Phase *quiet*: they alone for ``--seconds``. Phase *abuse*: the same, while a
separate process (``bench/abusers.py``) holds 250 streaming chats on one greedy key
(retrying each 429 after its ``retry-after``) and 200 sockets trickling a request head
that never ends. What it shows: the per-key limit refuses all but 32 greedy streams at
once, the header deadline closes every slow socket, and the polite p99 stays within 2x
of the quiet run with no polite error; the server's RSS before, during and after.
Prints a table and writes ``bench/results/abuse.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.abusers import POLITE_MODEL
from bench.corpus import facts, queries
from bench.gateway import free_port, process
from bench.load import log_checks
from bench.machine import machine
from bench.retrieval import percentile

ADMIN = "abuse-admin-token-0123456789"
#: The acceptance target: polite p99 under abuse / quiet p99.
P99_RATIO_TARGET = 2.0


@dataclass(frozen=True)
class Settings:
    """One run's knobs; ``header_timeout_s`` None keeps memoryd's default (10 s)."""

    seconds: float = 60.0
    clients: int = 8
    streams: int = 250
    slow: int = 200
    think_s: float = 0.25
    memories_per_key: int = 50
    header_timeout_s: float | None = None
    retry_jitter: float = 0.0
    #: The attacker shares this machine's cores with memoryd; a real one runs elsewhere.
    #: At nice 19 it takes only the CPU memoryd and the polite clients leave.
    attacker_nice: int = 19
    settle_s: float = 5.0


#: A smoke-test run: well under a minute, a short header deadline so sockets do close.
QUICK = Settings(
    seconds=4.0, streams=48, slow=24, memories_per_key=10, header_timeout_s=1.5, settle_s=1.0
)


def proc_status(pid: int, field: str) -> float:
    """A ``/proc/<pid>/status`` size field (``VmRSS``, ``VmHWM``) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def connections_to(port: int) -> int:
    """Established IPv4 TCP connections to ``port`` on this host: with only memoryd
    calling the fake upstream, the upstream calls memoryd still holds."""
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    fields = (line.split() for line in lines)
    return sum(1 for f in fields if f[3] == "01" and int(f[2].split(":")[1], 16) == port)


def greedy_probe(base: str, secret: str) -> int:
    """One greedy streaming chat after the attack: 200 when its slots were freed as
    its clients went away, 429 when the server still holds them."""
    body = {"model": "greedy", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx.stream(
        "POST", f"{base}/v1/chat/completions", json=body, headers=headers, timeout=30
    ) as r:
        return r.status_code


class Polite:
    """The polite clients' latencies (ms) and failures in one phase."""

    def __init__(self) -> None:
        self.latency: list[float] = []
        self.errors: list[str] = []
        self.peak_rss_mb = 0.0
        self.peak_fds = 0
        self.cpu_pct: dict[str, float] = {}  # per process, of one core, over the phase


async def polite_client(
    n: int, http: httpx.AsyncClient, secret: str, deadline: float, think: float, rec: Polite
) -> None:
    rng = random.Random(n)
    asks = queries(200, seed=n)
    headers = {"Authorization": f"Bearer {secret}"}
    i = 0
    while time.monotonic() < deadline:
        body = {
            "model": POLITE_MODEL,
            "messages": [{"role": "user", "content": asks[i % len(asks)]}],
        }
        i += 1
        started = time.perf_counter()
        try:
            r = await http.post("/v1/chat/completions", json=body, headers=headers)
            if r.status_code == 200 and r.json()["choices"][0]["message"]["content"]:
                rec.latency.append((time.perf_counter() - started) * 1000)
            else:
                rec.errors.append(f"HTTP {r.status_code}: {r.text[:200]}")
        except (httpx.HTTPError, ValueError, KeyError, IndexError) as exc:
            rec.errors.append(f"{type(exc).__name__}: {exc}"[:300])
        await asyncio.sleep(think * rng.uniform(0.5, 1.5))


async def sample(pid: int, deadline: float, rec: Polite) -> None:
    """The server's peak RSS and open descriptors while the phase runs."""
    while time.monotonic() < deadline:
        rec.peak_rss_mb = max(rec.peak_rss_mb, proc_status(pid, "VmRSS"))
        rec.peak_fds = max(rec.peak_fds, open_fds(pid))
        await asyncio.sleep(0.25)


async def polite_phase(
    base: str, secrets: list[str], seconds: float, think: float, pids: dict[str, int]
) -> Polite:
    """Every polite client chats for ``seconds``, each on its own connection; the CPU
    each process (``pids``, and these clients) used meanwhile says where time went."""
    rec = Polite()
    pid = pids["server"]
    started, deadline = time.monotonic(), time.monotonic() + seconds
    cpu = {name: cpu_s(p) for name, p in pids.items()} | {"polite_clients": time.process_time()}
    clients = [httpx.AsyncClient(base_url=base, timeout=30) for _ in secrets]
    try:
        await asyncio.gather(
            sample(pid, deadline, rec),
            *(
                polite_client(n, http, s, deadline, think, rec)
                for n, (http, s) in enumerate(zip(clients, secrets, strict=True))
            ),
        )
    finally:
        for http in clients:
            await http.aclose()
    wall = time.monotonic() - started
    now = {name: cpu_s(p) for name, p in pids.items()} | {"polite_clients": time.process_time()}
    rec.cpu_pct = {name: round((now[name] - cpu[name]) / wall * 100) for name in cpu}
    return rec


async def prepare(base: str, clients: int, per_key: int) -> tuple[list[str], str]:
    """Through the admin REST API: a key per polite client holding ``per_key``
    memories (indexed before the run starts), and the greedy key."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    async with httpx.AsyncClient(base_url=base, headers=admin, timeout=60) as http:

        async def key(key_id: str) -> str:
            r = await http.post("/api/keys", json={"name": key_id, "id": key_id})
            r.raise_for_status()
            return str(r.json()["key"])

        polite = [await key(f"polite{n}") for n in range(clients)]
        greedy = await key("greedy")

        async def seed(n: int) -> None:
            for text in facts(per_key, seed=n):
                r = await http.post("/api/memory", json={"apiKeyId": f"polite{n}", "content": text})
                r.raise_for_status()

        await asyncio.gather(*(seed(n) for n in range(clients)))
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and metric(await metrics_text(http), "reindex_pending"):
            await asyncio.sleep(0.5)
    return polite, greedy


async def metrics_text(http: httpx.AsyncClient) -> str:
    return (await http.get("/metrics")).text


def metric(text: str, name: str, labels: str = "") -> float:
    """One sample of ``memoryd_<name>{labels}`` from the /metrics text (0 if absent)."""
    pattern = rf"^memoryd_{re.escape(name)}{re.escape(labels)} (\S+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def phase_row(name: str, rec: Polite, seconds: float, rss_end: float) -> dict[str, Any]:
    lat = rec.latency or [float("nan")]
    return {
        "phase": name,
        "polite_requests": len(rec.latency),
        "per_s": round(len(rec.latency) / seconds, 1),
        "p50_ms": round(percentile(lat, 50), 1),
        "p95_ms": round(percentile(lat, 95), 1),
        "p99_ms": round(percentile(lat, 99), 1),
        "max_ms": round(max(lat), 1),
        "polite_errors": len(rec.errors),
        "server_rss_mb": rss_end,
        "server_peak_rss_mb": rec.peak_rss_mb,
        "server_peak_fds": rec.peak_fds,
        "server_cpu_pct": rec.cpu_pct["server"],
    }


def start_attack(base: str, secret: str, s: Settings, env: dict[str, str]) -> subprocess.Popen[str]:
    """The greedy tenant's process, returned once it says every stream and socket is up."""
    args = ["nice", "-n", str(s.attacker_nice), sys.executable, "-m", "bench.abusers", "attack"]
    args += ["--base", base]
    args += ["--streams", str(s.streams), "--slow", str(s.slow)]
    args += ["--retry-jitter", str(s.retry_jitter)]
    attacker = subprocess.Popen(
        args, env=env | {"ABUSE_SECRET": secret}, stdout=subprocess.PIPE, text=True
    )
    assert attacker.stdout is not None
    line = attacker.stdout.readline()  # it gives up on its own after 60 s
    if line.strip() != "ready":
        attacker.kill()
        raise RuntimeError(f"the attack did not start: {line!r}")
    return attacker


def stop_attack(attacker: subprocess.Popen[str]) -> dict[str, Any]:
    attacker.send_signal(signal.SIGTERM)
    out, _ = attacker.communicate(timeout=60)
    lines = [line for line in out.splitlines() if line.strip()]
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run(s: Settings, progress: Any = print) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Quiet phase, then abuse phase, on one fresh server: the rows and the details."""
    with tempfile.TemporaryDirectory() as tmp:
        data, server_log = Path(tmp) / "data", Path(tmp) / "server.log"
        up_port, md_port = free_port(), free_port()
        env = dict(os.environ) | {
            "MEMORYD_DATA_DIR": str(data),
            "MEMORYD_ADMIN_TOKEN": ADMIN,
            "MEMORYD_UPSTREAM_BASE_URL": f"http://127.0.0.1:{up_port}/v1",
            "MEMORYD_LOG_FORMAT": "json",
        }
        if s.header_timeout_s is not None:
            env["MEMORYD_HEADER_TIMEOUT_S"] = str(s.header_timeout_s)
        upstream = [sys.executable, "-m", "bench.abusers", "upstream", "--port", str(up_port)]
        server = [str(Path(sys.executable).with_name("memoryd")), "serve", "--port", str(md_port)]
        base = f"http://127.0.0.1:{md_port}"
        rss: dict[str, float] = {}
        with (
            process(upstream, env, f"http://127.0.0.1:{up_port}/v1/models") as fake,
            process(server, env, f"{base}/healthz", log_path=server_log) as proc,
        ):
            pid = proc.pid
            pids = {"server": pid, "upstream": fake.pid}
            rss["started"] = proc_status(pid, "VmRSS")
            progress(f"abuse: {s.clients} keys, {s.memories_per_key} memories each")
            polite, greedy = asyncio.run(prepare(base, s.clients, s.memories_per_key))
            asyncio.run(polite_phase(base, polite, min(3.0, s.seconds), s.think_s, pids))  # warm
            rss["before"] = proc_status(pid, "VmRSS")
            progress(f"abuse: quiet phase, {s.clients} polite clients for {s.seconds:g} s")
            quiet = asyncio.run(polite_phase(base, polite, s.seconds, s.think_s, pids))
            rss["after_quiet"] = proc_status(pid, "VmRSS")
            progress(f"abuse: starting {s.streams} greedy streams and {s.slow} slow sockets")
            ramp = time.monotonic()
            attacker = start_attack(base, greedy, s, env)
            ramp_s = round(time.monotonic() - ramp, 1)
            try:
                progress(f"abuse: abuse phase, {s.seconds:g} s")
                pids["attacker"] = attacker.pid
                abused = asyncio.run(polite_phase(base, polite, s.seconds, s.think_s, pids))
                rss["abuse_end"] = proc_status(pid, "VmRSS")
            finally:
                greedy_seen = stop_attack(attacker)
            progress("abuse: attackers gone; letting the server settle")
            time.sleep(s.settle_s)
            rss["after"] = proc_status(pid, "VmRSS")
            rss["peak_during_abuse"] = max(abused.peak_rss_mb, rss["abuse_end"])
            rss["high_water"] = proc_status(pid, "VmHWM")
            fds_after = open_fds(pid)
            upstream_after = connections_to(up_port)
            probe = greedy_probe(base, greedy)
            text = httpx.get(f"{base}/metrics", timeout=10).text
            # Relays still open would hold the server's graceful stop for 30 s: the
            # fake provider goes first, so they end as broken streams.
            fake.kill()
            progress("abuse: stopping the server")
        log = log_checks(server_log.read_text(errors="replace"))
    rows = [
        phase_row("quiet", quiet, s.seconds, rss["after_quiet"]),
        phase_row("abuse", abused, s.seconds, rss["abuse_end"]),
    ]
    ratio = rows[1]["p99_ms"] / rows[0]["p99_ms"] if rows[0]["p99_ms"] else float("nan")
    errors = rows[0]["polite_errors"] + rows[1]["polite_errors"]
    event = 'event="{}"'
    detail = {
        "settings": asdict(s) | {"key_max_concurrent": "default (32)", "attack_ramp_s": ramp_s},
        "p99_ratio": round(ratio, 2),
        "polite_errors": errors,
        "target": {
            "p99_ratio_max": P99_RATIO_TARGET,
            "polite_errors": 0,
            "met": bool(ratio <= P99_RATIO_TARGET and errors == 0),
        },
        "greedy": greedy_seen,
        "gateway_events": {
            e: int(metric(text, "gateway_events_total", "{" + event.format(e) + "}"))
            for e in ("concurrency_limited", "pool_exhausted", "stream_broken")
        },
        "after_attack": {
            "upstream_calls_still_open": upstream_after,
            "greedy_probe_status": probe,
        },
        "rss_mb": rss,
        "cpu_pct": {"quiet": quiet.cpu_pct, "abuse": abused.cpu_pct},
        "server_fds": {"peak_abuse": abused.peak_fds, "after": fds_after},
        "server_log": log,
        "sample_errors": (quiet.errors + abused.errors)[:5],
    }
    return rows, detail


def summary(rows: list[dict[str, Any]], d: dict[str, Any]) -> str:
    g, rss, after = d["greedy"], d["rss_mb"], d["after_attack"]
    slow_closed = sum(v for k, v in g.items() if k.startswith("slow_closed_"))
    return (
        f"polite p99 quiet {rows[0]['p99_ms']} ms, abuse {rows[1]['p99_ms']} ms "
        f"(x{d['p99_ratio']}, target <= x{P99_RATIO_TARGET}); polite errors "
        f"{d['polite_errors']}; greedy streams accepted {g.get('streams_accepted', 0)} "
        f"(peak open {g['peak_open_streams']}), refused 429 {g.get('streams_refused_429', 0)}; "
        f"slow sockets opened {g.get('slow_opened', 0)}, closed by the server {slow_closed} "
        f"(lifetime max {g['slow_lifetime_s_max']} s); RSS MB before {rss['before']}, "
        f"peak {rss['peak_during_abuse']}, after {rss['after']}; after the attack: a greedy "
        f"chat got {after['greedy_probe_status']}, {after['upstream_calls_still_open']} "
        f"upstream connections open; target {'met' if d['target']['met'] else 'NOT met'}"
    )


def main(argv: list[str] | None = None) -> int:
    from bench import output

    parser = argparse.ArgumentParser(prog="python -m bench.abuse", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run (~30 s)")
    parser.add_argument("--seconds", type=float, help="each phase (default 60)")
    parser.add_argument("--clients", type=int, help="polite clients (default 8)")
    parser.add_argument("--streams", type=int, help="greedy streams (default 250)")
    parser.add_argument("--slow", type=int, help="slow-header sockets (default 200)")
    parser.add_argument("--attacker-nice", type=int, help="the attack's niceness (19)")
    parser.add_argument(
        "--retry-jitter", type=float, help="greedy waits retry-after x (1 + U(0, this)) (0)"
    )
    parser.add_argument("--think", type=float, help="polite pause between chats, s (0.25)")
    parser.add_argument("--results", type=Path, default=output.RESULTS, help="JSON directory")
    args = parser.parse_args(argv)
    s = QUICK if args.quick else Settings()
    given = {
        "seconds": args.seconds,
        "clients": args.clients,
        "streams": args.streams,
        "slow": args.slow,
        "think_s": args.think,
        "retry_jitter": args.retry_jitter,
        "attacker_nice": args.attacker_nice,
    }
    s = Settings(**asdict(s) | {k: v for k, v in given.items() if v is not None})
    output.RESULTS = args.results.resolve()
    machine()  # the load average as the run starts, not as it is written
    rows, detail = run(s, lambda m: print(f"... {m}", file=sys.stderr, flush=True))
    output.write("abuse", rows, {"abuse": detail})
    print(summary(rows, detail), flush=True)
    return 0 if detail["polite_errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
