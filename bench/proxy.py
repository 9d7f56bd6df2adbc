"""What a proxy costs to pass through, side by side in one run.

``python -m bench --only proxy [--requests N]``. Processes: the fake OpenAI upstream
(``python -m memoryd.testing``), five ``memoryd serve`` (keyword-only retrieval twice,
the second with ``MEMORYD_INLINE_RETRIEVAL_MS=0``; MiniLM with 1,000 memories for its
key twice, the second embedding every question with the model; MiniLM with 10,000)
and a LiteLLM proxy (no callbacks, no database) in its own venv under
``bench/.cache/litellm/venv``. Configurations:

- direct: the fake upstream alone (the baseline);
- pure: memoryd with a key whose memory is off (``memoryEnabled: false``);
- keyword: memoryd, keyword retrieval, a different query each request;
- keyword_thread: the same with the memory work always on a worker thread;
- minilm_repeated / minilm_different: memoryd with MiniLM, the same user message every
  request / a new one each time (the fast query encoder embeds it);
- minilm_model: a new question each time, embedded by the model (``MEMORY_QUERY_ENCODER
  =model``: the query path before the encoder);
- minilm10k_repeated / minilm10k_different: as the first two with 10,000 memories;
- litellm: the LiteLLM proxy.

Each of ``REPS`` rounds measures every configuration in turn, so drift hits them all,
and before each one every memoryd drains the extraction jobs and embeddings the chats
before it queued (``idle``; a server still busy after two minutes is named in the
results):
``n`` plain requests alternated one by one with the direct upstream (added p50/p99 =
through minus direct), ``n`` streamed pairs the same way (TTFB: time to the first body
byte), then ``CLIENTS`` keep-alive clients for ``SECONDS`` (a raw asyncio HTTP/1.1
client on uvloop, so the generator costs little; the direct row's req/s is its ceiling)
with the server process's CPU time (user + sys from ``/proc``, its children included)
over that phase divided by the requests served (``client_cpu_ms_per_request``: the
generator's own). Rows are medians over the rounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvloop

from bench.corpus import queries
from bench.gateway import ADMIN, EMBEDDERS, free_port, prepare, process
from bench.retrieval import percentile

BENCH = Path(__file__).resolve().parent
LITELLM_HOME = BENCH / ".cache" / "litellm"
CLIENTS, SECONDS, REPS, WARMUP = 16, 3.0, 3, 30
REPEATED = "what should I cook for dinner tonight, given what you know about me?"
LITELLM_KEY = "sk-bench-" + "0123456789abcdef" * 2
LITELLM_REQUIREMENTS = BENCH / "litellm-requirements.txt"
# Everything LiteLLM could fetch on its own stays local; the network is closed anyway.
LITELLM_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_OFFLINE_MODE": "true",
    "LITELLM_LOG": "WARNING",
    "LITELLM_TELEMETRY": "False",
    "LITELLM_DONT_SHOW_FEEDBACK_BOX": "True",
    "DISABLE_ADMIN_UI": "True",
    "NO_DOCS": "True",
    "HF_HUB_OFFLINE": "1",
}
LABELS = {
    "direct": "direct upstream (the fake, no proxy)",
    "pure": "memoryd, memory off for the key (pure proxy)",
    "keyword": "memoryd, keyword retrieval, 1k memories",
    "keyword_thread": "memoryd, keyword, 1k, memory work on worker threads (inline off)",
    "minilm_repeated": "memoryd, MiniLM (the default embedder), 1k memories, repeated question",
    "minilm_different": "memoryd, MiniLM, 1k, a new question each time (fast query encoder)",
    "minilm_model": "memoryd, MiniLM, 1k, a new question each time, the model embeds it",
    "minilm10k_repeated": "memoryd, MiniLM, 10k memories, repeated question",
    "minilm10k_different": "memoryd, MiniLM, 10k, a new question each time (fast query encoder)",
    "litellm": "LiteLLM proxy, no callbacks",
}
#: Each configuration's server (a ``ports`` key) and key (a ``secrets`` key), in order.
PLAN = {"direct": ("up", "up"), "pure": ("kw", "pure"), "keyword": ("kw", "kw")}
PLAN |= {"keyword_thread": ("kwt", "kwt")}
PLAN |= {f"minilm_{q}": ("mini", "mini") for q in ("repeated", "different")}
PLAN |= {"minilm_model": ("minim", "minim")}
PLAN |= {f"minilm10k_{q}": ("mini10k", "mini10k") for q in ("repeated", "different")}
PLAN |= {"litellm": ("litellm", "litellm")}
#: The memoryd servers: embedder, extra environment and memories for the key. ``kwt``
#: is ``kw`` with the memory work always on a worker thread (``gateway.inline`` off),
#: ``minim`` is ``mini`` with every new question embedded by the model (the query path
#: before the fast query encoder), for the A/Bs.
SERVERS: dict[str, tuple[str, dict[str, str], int]] = {
    "kw": ("keyword-only", {}, 1000),
    "kwt": ("keyword-only", {"MEMORYD_INLINE_RETRIEVAL_MS": "0"}, 1000),
    "mini": ("transformers", {}, 1000),
    "minim": ("transformers", {"MEMORY_QUERY_ENCODER": "model"}, 1000),
    "mini10k": ("transformers", {}, 10000),
}
#: Configurations whose question repeats (the rest ask a new one every request).
REPEATS = ("minilm_repeated", "minilm10k_repeated")
#: (config, metric, comparison, target, words) of the issues.
GOALS = (
    ("pure", "added_p50_ms", "<", 1.0, "pure proxy added p50 < 1 ms"),
    ("pure", "added_p99_ms", "<", 3.0, "pure proxy added p99 < 3 ms"),
    ("pure", "rps", ">=", 1000.0, "pure proxy >= 1000 req/s @16 clients"),
    ("keyword", "added_p50_ms", "<", 2.5, "keyword 1k added p50 < 2.5 ms"),
    ("keyword", "rps", ">=", 400.0, "keyword 1k >= 400 req/s @16 clients"),
    ("minilm_different", "added_p50_ms", "<", 2.5, "new question, 1k: added p50 < 2.5 ms"),
    ("minilm_different", "added_p99_ms", "<", 6.0, "new question, 1k: added p99 < 6 ms"),
    ("minilm10k_different", "added_p50_ms", "<", 2.5, "new question, 10k: added p50 < 2.5 ms"),
    ("minilm10k_different", "added_p99_ms", "<", 6.0, "new question, 10k: added p99 < 6 ms"),
)
METRICS = ("added_p50_ms", "added_p99_ms", "added_ttfb_ms", "rps", "cpu_ms_per_request")
ABSOLUTE = ("p50_ms", "p99_ms", "ttfb_ms")
CLIENT = "client_cpu_ms_per_request"  # the load generator's own CPU: is it the limit?

Progress = Callable[[str], None]
#: What the last ``run`` used (settings, the LiteLLM version and its install): the
#: results file's ``extra``.
LAST_INFO: dict[str, Any] = {}


# -- pure helpers ----------------------------------------------------------------------


def stat_fields(line: str) -> tuple[int, int]:
    """``(ppid, utime + stime in clock ticks)`` from a ``/proc/<pid>/stat`` line (the
    command name in parentheses may hold spaces and parentheses)."""
    rest = line[line.rindex(")") + 2 :].split()  # rest[0] is field 3, the state
    return int(rest[1]), int(rest[11]) + int(rest[12])


def tree_ticks(stats: dict[int, tuple[int, int]], root: int) -> int:
    """CPU ticks of ``root`` and every live descendant, from ``{pid: (ppid, ticks)}``."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        total += stats[pid][1]
        todo += children.get(pid, [])
    return total


def cpu_ms_per_request(before: int, after: int, requests: int, hz: int) -> float | None:
    return None if requests <= 0 else (after - before) * 1000 / hz / requests


def parse_head(head: bytes) -> tuple[int, int | None, bool]:
    """``(status, content-length or None, chunked)`` of an HTTP/1.1 response head."""
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length, chunked = None, False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    return status, length, chunked


def different(pool: list[str]) -> Callable[[int], str]:
    """Request ``i``'s user message, never the same twice: the distinct queries in turn,
    then again with a round number."""

    def text(i: int) -> str:
        base = pool[i % len(pool)]
        return base if i < len(pool) else f"{base} (round {i // len(pool) + 1})"

    return text


def summarise(config: str, reps: list[dict[str, float | None]], note: str = "") -> dict[str, Any]:
    """The row of one configuration: the median of each measure over the rounds."""
    row: dict[str, Any] = {"id": config, "config": LABELS[config]}
    for key in (*METRICS, *ABSOLUTE, CLIENT):
        values = [v for r in reps if (v := r.get(key)) is not None]
        row[key] = round(statistics.median(values), 2) if values else None
    row |= {"errors": int(sum(r.get("errors") or 0 for r in reps)), "rounds": len(reps)}
    row["note"] = note
    return row


def goals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's goals next to the measured values, each with ``met``."""
    by_id = {r["id"]: r for r in rows}
    out = []
    for config, metric, op, target, words in GOALS:
        value = by_id.get(config, {}).get(metric)
        met = value is not None and (value < target if op == "<" else value >= target)
        out.append(
            {"goal": words, "config": config, "metric": metric, "target": f"{op} {target:g}"}
            | {"measured": value, "met": met}
        )
    return out


def _cell(value: Any, digits: int = 2) -> str:
    return "\u2013" if value is None else f"{value:.{digits}f}"


def markdown(rows: list[dict[str, Any]], goal_rows: list[dict[str, Any]]) -> str:
    """The issue's table (the direct row shows its absolute figures) and the goals."""
    head = "| config | added p50 | added p99 | added stream TTFB | req/s @16 clients | "
    lines = [head + "CPU ms/request | note |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        direct = r["id"] == "direct"
        cells = [f"0 (baseline: {_cell(r.get(k))} ms)" for k in ABSOLUTE] if direct else []
        cells = cells or [_cell(r.get(k)) + " ms" * (r.get(k) is not None) for k in METRICS[:3]]
        cells += [_cell(r.get("rps"), 0), _cell(r.get("cpu_ms_per_request"))]
        lines.append(f"| {r['config']} | " + " | ".join(cells) + f" | {r.get('note', '')} |")
    lines += ["", "| goal | measured | met |", "|---|---|---|"]
    for g in goal_rows:
        lines.append(f"| {g['goal']} | {_cell(g['measured'])} | {'yes' if g['met'] else 'NO'} |")
    return "\n".join(lines)


def section(p: dict[str, Any]) -> str:
    """The docs/benchmarks.md section (``bench.tables``)."""
    s = p.get("settings", {})
    return "\n".join(
        [
            "### Proxy cost side by side (`proxy.json`, `python -m bench --only proxy`)",
            "",
            f"One run, {s.get('rounds')} rounds, medians. Added latency: {s.get('requests')} "
            "requests alternated one by one with the direct fake upstream; TTFB: the "
            f"first body byte of a streamed request; req/s: {s.get('clients')} keep-alive "
            f"clients for {s.get('seconds')} s; CPU: the proxy process's user+sys time per "
            f"request in that phase. LiteLLM {p.get('litellm', {}).get('version') or '?'}.",
            "",
            markdown(p.get("rows", []), p.get("goals", [])),
        ]
    )


# -- the load generator ----------------------------------------------------------------


async def _response(reader: asyncio.StreamReader) -> int:
    status, length, chunked = parse_head(await reader.readuntil(b"\r\n\r\n"))
    if chunked:
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        while await reader.readuntil(b"\r\n") != b"\r\n":
            pass
    elif length:
        await reader.readexactly(length)
    return status


async def _load(port: int, make: Callable[[], bytes], seconds: float, clients: int) -> list[int]:
    deadline = time.monotonic() + seconds
    done = [0, 0]  # answered 200, failed

    async def client() -> None:
        while time.monotonic() < deadline:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                while time.monotonic() < deadline:
                    writer.write(make())
                    done[0 if await _response(reader) == 200 else 1] += 1
            except (OSError, asyncio.IncompleteReadError, ValueError):
                done[1] += 1
            finally:
                writer.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return done


def load(port: int, make: Callable[[], bytes], pid: int) -> dict[str, float | None]:
    """``CLIENTS`` clients for ``SECONDS``: req/s, errors and ``pid``'s CPU per request."""
    hz, mine = os.sysconf("SC_CLK_TCK"), time.process_time()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:  # a memoryd dependency
        before, start = tree_ticks(proc_stats(), pid), time.perf_counter()
        ok, failed = runner.run(_load(port, make, SECONDS, CLIENTS))
        elapsed, after = time.perf_counter() - start, tree_ticks(proc_stats(), pid)
    mine = time.process_time() - mine
    return {
        "rps": ok / elapsed,
        "cpu_ms_per_request": cpu_ms_per_request(before, after, ok, hz),
        "client_cpu_ms_per_request": mine * 1000 / ok if ok else None,
        "errors": failed,
    }


def proc_stats() -> dict[int, tuple[int, int]]:
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                out[int(entry.name)] = stat_fields(Path(entry.path, "stat").read_text())
    return out


# -- the configurations ----------------------------------------------------------------


@dataclass
class Target:
    config: str
    port: int
    pid: int
    secret: str
    text: Callable[[int], str]
    counter: Iterator[int] = field(default_factory=itertools.count)
    note: str = ""
    reps: list[dict[str, float | None]] = field(default_factory=list)

    def body(self, stream: bool = False) -> bytes:
        text = self.text(next(self.counter))
        message = {
            "model": "fake",
            "stream": stream,
            "messages": [{"role": "user", "content": text}],
        }
        return json.dumps(message).encode()

    def request(self) -> bytes:
        """A whole HTTP/1.1 request, for the load generator."""
        body = self.body()
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
        head += f"Authorization: Bearer {self.secret}\r\nContent-Type: application/json\r\n"
        return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def _send(client: httpx.Client, t: Target, stream: bool) -> float:
    """One request; milliseconds to the full answer, or (streamed) to the first body
    byte. The answer is always read to its end."""
    body = t.body(stream)
    headers = {"authorization": f"Bearer {t.secret}", "content-type": "application/json"}
    url = f"http://127.0.0.1:{t.port}/v1/chat/completions"
    start = time.perf_counter()
    first = None
    with client.stream("POST", url, content=body, headers=headers) as response:
        for chunk in response.iter_raw():
            if first is None and chunk:
                first = time.perf_counter()
        end = time.perf_counter()
    if response.status_code != 200:
        raise RuntimeError(f"{t.config}: HTTP {response.status_code}")
    return ((first or end) if stream else end) * 1000 - start * 1000


def _round(
    client: httpx.Client, direct: Target, t: Target, n: int
) -> tuple[dict[str, float | None], list[float], list[float]]:
    """``n`` plain then ``n`` streamed requests, alternated with the direct upstream: the
    target's figures, and the direct upstream's samples (plain, TTFB)."""
    base: list[float] = []
    through: list[float] = []
    base_ttfb: list[float] = []
    ttfb: list[float] = []
    for _ in range(n):  # alternate, so machine noise hits both sides alike
        base.append(_send(client, direct, False))
        through.append(_send(client, t, False))
    for _ in range(n):
        base_ttfb.append(_send(client, direct, True))
        ttfb.append(_send(client, t, True))
    row: dict[str, float | None] = {f"p{q}_ms": percentile(through, q) for q in (50, 99)}
    row |= {f"added_p{q}_ms": percentile(through, q) - percentile(base, q) for q in (50, 99)}
    row |= {"ttfb_ms": percentile(ttfb, 50)}
    row["added_ttfb_ms"] = percentile(ttfb, 50) - percentile(base_ttfb, 50)
    return row, base, base_ttfb


def idle(port: int, timeout: float = 120.0) -> bool:
    """Wait until the memoryd on ``port`` has no extraction job or embedding queued
    (the chats of the configuration measured before it leave a backlog that would
    share the cores with the next one); False when it was still busy at ``timeout``."""
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {ADMIN}"}
    url = f"http://127.0.0.1:{port}/api/memory/engine-status"
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            status = httpx.get(url, headers=headers, timeout=30).json()
            pending = status["extraction"]["pending"]
            if status["vectorStore"].get("available"):  # keyword-only never embeds
                pending += status["reindex"].get("pending", 0)
            if pending == 0:
                return True
        time.sleep(0.25)
    return False


def measure(
    targets: list[Target], n: int, progress: Progress, settle: Callable[[], None] | None = None
) -> None:
    """``REPS`` rounds over every target, each round in the same order; ``settle`` runs
    before each target is measured (every memoryd's backlog drained)."""
    direct, proxies = targets[0], targets[1:]
    with httpx.Client(timeout=60, trust_env=False) as client:
        for t in targets:  # warm-up: model load, caches, connections
            with contextlib.suppress(httpx.HTTPError, RuntimeError):
                for stream in (False, True) * WARMUP:
                    _send(client, t, stream)
        for rep in range(REPS):
            base: list[float] = []
            base_ttfb: list[float] = []
            for t in proxies:
                if t.note:
                    continue
                progress(f"proxy: round {rep + 1}/{REPS}, {t.config}")
                if settle is not None:
                    settle()
                try:
                    got, plain, streamed = _round(client, direct, t, n)
                    base, base_ttfb = base + plain, base_ttfb + streamed
                    t.reps.append(got | load(t.port, t.request, t.pid))
                except (httpx.HTTPError, RuntimeError, OSError) as exc:
                    t.note = f"failed in round {rep + 1}: {exc}"[:300]
            progress(f"proxy: round {rep + 1}/{REPS}, direct")
            row: dict[str, float | None] = {"added_p50_ms": 0.0, "added_p99_ms": 0.0}
            row |= {"p50_ms": percentile(base, 50), "p99_ms": percentile(base, 99)} if base else {}
            row |= {"ttfb_ms": percentile(base_ttfb, 50)} if base_ttfb else {}
            row["added_ttfb_ms"] = 0.0
            direct.reps.append(row | load(direct.port, direct.request, direct.pid))


# -- LiteLLM -----------------------------------------------------------------------------


def ensure_litellm(progress: Progress) -> Path:
    """The LiteLLM venv's python, created and pip-installed from
    ``bench/litellm-requirements.txt`` when absent or when that file changed (as
    ``bench.peers.ensure_venv``)."""
    venv = LITELLM_HOME / "venv"
    python, stamp = venv / "bin" / "python", venv / "bench-requirements.txt"
    wanted = LITELLM_REQUIREMENTS.read_text()
    if not python.exists() or not stamp.exists() or stamp.read_text() != wanted:
        if venv.exists():
            shutil.rmtree(venv)
        LITELLM_HOME.mkdir(parents=True, exist_ok=True)
        progress(f"proxy: creating the LiteLLM venv in {venv} (about a minute)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        done = subprocess.run(
            [*pip, "-r", str(LITELLM_REQUIREMENTS)], capture_output=True, text=True
        )
        if done.returncode != 0:
            errors = [x for x in done.stderr.splitlines() if "is ignored" not in x]
            raise RuntimeError("pip install failed: " + " ".join(errors)[-600:])
        stamp.write_text(wanted)
    return python


def start_litellm(
    stack: contextlib.ExitStack,
    tmp: Path,
    ports: dict[str, int],
    env: dict[str, str],
    progress: Progress,
) -> tuple[int, dict[str, Any]]:
    """LiteLLM's pid (0 when it could not run) and what ran, or why not."""
    info: dict[str, Any] = {"version": None, "note": "", "env": LITELLM_ENV}
    try:
        python = ensure_litellm(progress)
        probe = "import importlib.metadata as m; print(m.version('litellm'))"
        info["version"] = subprocess.run(
            [str(python), "-c", probe], capture_output=True, text=True, check=True
        ).stdout.strip()
        info["requirements"] = [
            x for x in LITELLM_REQUIREMENTS.read_text().splitlines() if x and x[0] != "#"
        ]
        progress(f"proxy: starting LiteLLM {info['version']}")
        port, cfg = ports["litellm"], litellm_config(tmp / "litellm.yaml", ports["up"])
        args = [str(python.with_name("litellm")), "--config", str(cfg), "--host", "127.0.0.1"]
        args += ["--port", str(port), "--num_workers", "1"]
        ready = f"http://127.0.0.1:{port}/health/liveliness"
        return stack.enter_context(process(args, env | LITELLM_ENV, ready)).pid, info
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        info["note"] = f"LiteLLM not run: {exc}"[:400]
        progress(f"proxy: {info['note']}")
        return 0, info


def litellm_config(path: Path, up_port: int) -> Path:
    """One model routed to the fake upstream as an OpenAI-compatible endpoint; no
    callbacks, no database, a master key (1.110 refuses to start without one)."""
    path.write_text(
        "model_list:\n  - model_name: fake\n    litellm_params:\n      model: openai/fake\n"
        f"      api_base: http://127.0.0.1:{up_port}/v1\n      api_key: x\n"
        "litellm_settings:\n  telemetry: false\n  drop_params: true\n"
        f"general_settings:\n  master_key: {LITELLM_KEY}\n  disable_spend_logs: true\n"
    )
    return path


# -- the stage -------------------------------------------------------------------------


def _pure_key(md_port: int) -> str:
    """A second key on the keyword memoryd, created with memory off (REST)."""
    reply = httpx.post(
        f"http://127.0.0.1:{md_port}/api/keys",
        json={"name": "pure-proxy", "memoryEnabled": False},
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=30,
    )
    reply.raise_for_status()
    return str(reply.json()["key"])


def run(n: int, progress: Progress) -> list[dict[str, Any]]:
    global LAST_INFO
    pool = list(dict.fromkeys(queries(20000)))
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        ports = {k: free_port() for k in ("up", *SERVERS, "litellm")}
        base_env = dict(os.environ) | {
            "MEMORYD_ADMIN_TOKEN": ADMIN,
            "MEMORYD_UPSTREAM_BASE_URL": f"http://127.0.0.1:{ports['up']}/v1",
            "MEMORYD_DATABASE_URL": "",
        }
        fake = [sys.executable, "-m", "memoryd.testing", "--port", str(ports["up"])]
        up = stack.enter_context(
            process(fake, base_env, f"http://127.0.0.1:{ports['up']}/v1/models")
        )
        pids, secrets = {"up": up.pid}, {}
        memoryd = str(Path(sys.executable).with_name("memoryd"))
        for name, (embedder, extra, count) in SERVERS.items():
            env = base_env | {"MEMORYD_DATA_DIR": str(Path(tmp) / name)} | extra
            progress(f"proxy: preparing {count:,} memories ({embedder}, {name})")
            secrets[name] = prepare(Path(tmp) / name, EMBEDDERS[embedder], env, count)
            serve = [memoryd, "serve", "--port", str(ports[name])]
            ready = f"http://127.0.0.1:{ports[name]}/healthz"
            pids[name] = stack.enter_context(process(serve, env, ready)).pid
        secrets["pure"] = _pure_key(ports["kw"])
        pids["litellm"], litellm = start_litellm(stack, Path(tmp), ports, base_env, progress)
        secrets |= {"up": "direct", "litellm": LITELLM_KEY}
        targets = [
            Target(config, ports[at], pids[at], secrets[key], different(pool))
            for config, (at, key) in PLAN.items()
        ]
        by = {t.config: t for t in targets}
        for config in REPEATS:
            by[config].text = lambda _i: REPEATED
        by["litellm"].note = litellm["note"]
        busy: list[str] = []

        def settle() -> None:
            busy.extend(name for name in SERVERS if not idle(ports[name]))

        measure(targets, n, progress, settle)
    LAST_INFO = {
        "settings": {"requests": n, "rounds": REPS, "clients": CLIENTS, "seconds": SECONDS},
        "litellm": litellm,
        "generator": "raw asyncio HTTP/1.1 keep-alive clients (uvloop) in the bench process",
        "still_busy_when_measured": sorted(set(busy)),
    }
    return [summarise(t.config, t.reps, t.note) for t in targets]
