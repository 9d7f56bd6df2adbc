"""Where a new question's time goes, and what the fast query encoder costs in quality.

``python -m bench --only query`` (alone: ``python -m bench.query_path``) runs two parts:

- **timing**, in one process: an engine with MiniLM and 1,000 (then 10,000) memories
  for one key, and a new question each time (``bench.corpus.queries``). Per question,
  timed apart: the tokenizer, the ONNX session's run, the pooling; the fast query
  encoder; the whole retrieval (``engine.preview``) with each query path; and the same
  two embeddings while a background thread embeds batches of 32 sentences without
  pause, as extraction and the indexer do after a chat. Then ``cProfile`` over the
  fast path's retrievals names the functions the rest of the time goes to.
- **quality**, each query path in a child process with ``MEMORY_QUERY_ENCODER`` set:
  LoCoMo hybrid recall (``memoryd eval locomo``), the self-question splits through the
  gateway (``bench.selfq``) and the relevance bench's unrelated questions.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import facts, queries
from bench.retrieval import percentile

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "data" / "locomo"
Progress = Callable[[str], None]
PATHS = ("fast", "model")


def _summary(samples: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(samples), 3),
        "p99_ms": round(percentile(samples, 99), 3),
        "mean_ms": round(statistics.fmean(samples), 3),
    }


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


class _Competition:
    """A background thread embedding batches of 32 sentences with the same model, as
    the indexer and extraction do after a chat."""

    def __init__(self, embed: Callable[[list[str]], Any]) -> None:
        self._embed = embed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.batches = 0

    def _run(self) -> None:
        texts = facts(4096, seed=3)
        i = 0
        while not self._stop.is_set():
            self._embed(texts[i : i + 32])
            i = (i + 32) % 4064
            self.batches += 1

    def __enter__(self) -> _Competition:
        self._thread.start()
        time.sleep(0.2)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _phases(embedder: Any, questions: list[str]) -> dict[str, dict[str, float]]:
    """The model's path cut in its parts, and the fast encoder, one question at a time."""
    tokenizer, session = embedder._tokenizer, embedder._session
    out: dict[str, list[float]] = {k: [] for k in ("tokenizer", "onnx_run", "pooling", "fast")}
    for q in questions:
        start = time.perf_counter()
        ids = tokenizer.encode(q).ids
        tokenized = time.perf_counter()
        feeds = {
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
            "token_type_ids": np.zeros((1, len(ids)), dtype=np.int64),
        }
        hidden = session.run(None, feeds)[0]
        ran = time.perf_counter()
        pooled = hidden[0].mean(axis=0)
        pooled /= np.linalg.norm(pooled)
        pooled_at = time.perf_counter()
        out["tokenizer"].append((tokenized - start) * 1000)
        out["onnx_run"].append((ran - tokenized) * 1000)
        out["pooling"].append((pooled_at - ran) * 1000)
        out["fast"].append(_timed(lambda q=q: embedder.fast_query(q)))
    return {k: _summary(v) for k, v in out.items()}


def _engine(tmp: Path, count: int, query_path: str) -> tuple[Any, str]:
    from memoryd.bootstrap import open_engine
    from memoryd.models import NewMemory

    engine = open_engine(data_dir=tmp, env_overrides={"MEMORY_QUERY_ENCODER": query_path})
    engine.settings.update({"embeddingSource": "transformers", "transformersEnabled": True})
    owner = "bench-owner"
    engine.create_many(NewMemory(owner, text) for text in facts(count))
    engine.drain(timeout=1800)
    return engine, owner


def _previews(engine: Any, owner: str, questions: list[str]) -> dict[str, float]:
    samples = []
    for q in questions:
        start = time.perf_counter()
        engine.preview(owner, q)
        samples.append((time.perf_counter() - start) * 1000)
    return _summary(samples)


def _profile(engine: Any, owner: str, questions: list[str], top: int = 12) -> list[dict[str, Any]]:
    profiler = cProfile.Profile()
    profiler.enable()
    for q in questions:
        engine.preview(owner, q)
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    rows = []
    per_call = len(questions) or 1
    entries = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    for (path, line, name), (_cc, _nc, tottime, cumtime, _callers) in entries[:top]:
        rows.append(
            {
                "function": f"{Path(path).name}:{line}({name})",
                "self_ms_per_question": round(tottime * 1000 / per_call, 3),
                "cumulative_ms_per_question": round(cumtime * 1000 / per_call, 3),
            }
        )
    return rows


def timing(sizes: tuple[int, ...], n: int, progress: Progress) -> dict[str, Any]:
    pool = list(dict.fromkeys(queries(20 * n)))
    out: dict[str, Any] = {"sizes": {}}
    for count in sizes:
        per: dict[str, Any] = {}
        for path in PATHS:
            with tempfile.TemporaryDirectory(prefix="memoryd-querypath-") as tmp:
                progress(f"query: {count:,} memories, {path} path: storing")
                engine, owner = _engine(Path(tmp), count, path)
                try:
                    embedder = engine.indexer.embeddings.current()[1].inner
                    assert embedder.query_path == path, (embedder.query_path, path)
                    for q in pool[:30]:  # warm: caches, the session, the resident index
                        engine.preview(owner, q)
                    asked = pool[30 : 30 + n]
                    per[path] = {"retrieval": _previews(engine, owner, asked)}
                    if path == "fast":
                        per["phases"] = _phases(embedder, pool[30 + n : 30 + 2 * n])
                        with _Competition(embedder._embed_many) as busy:
                            per["phases_under_background_embedding"] = _phases(
                                embedder, pool[30 + 2 * n : 30 + 3 * n]
                            )
                            per["background_batches"] = busy.batches
                        per["profile_fast"] = _profile(engine, owner, pool[30 + 3 * n : 30 + 4 * n])
                finally:
                    engine.close()
        out["sizes"][str(count)] = per
        progress(f"query: {count:,} memories done")
    return out


ADVICE_SPLITS = ("dev", "dev2", "test2")


def quality_one(path: str) -> dict[str, Any]:
    """One query path's figures; run in a process whose ``MEMORY_QUERY_ENCODER`` is
    ``path`` (``quality`` starts it)."""
    from bench import profile, selfq
    from memoryd.bootstrap import open_engine

    row: dict[str, Any] = {}
    if LOCOMO.is_dir():
        memoryd = str(Path(sys.executable).with_name("memoryd"))
        args = [memoryd, "eval", "locomo", "--data", str(LOCOMO), "--strategy", "hybrid"]
        done = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=3600)
        if done.returncode == 0:
            row["locomo_recall"] = json.loads(done.stdout)["strategies"]["hybrid"]["recall"]
        else:
            row["locomo_error"] = done.stderr[-500:]
    detail = selfq.run()[1]
    keys = ("split", "mode", "asked_fact_in_block", "unrelated_clean", "overview_facts_in_block")
    row["selfq"] = [{k: s[k] for k in keys} for s in detail["splits"]]
    every = next(r for r in detail["relevance"] if r["split"] == "all")
    row["relevance_unrelated_injecting"] = every["unrelated_injecting"]
    row["advice_constraint_injected"] = {}
    with tempfile.TemporaryDirectory(prefix="memoryd-querypath-advice-") as tmp:
        engine = open_engine(data_dir=tmp)
        try:
            for split in ADVICE_SPLITS:
                cases = profile._load(profile.ADVICE / f"{split}.jsonl")
                found = profile.advice(engine, cases, split)
                row["advice_constraint_injected"][split] = found["injected"]
        finally:
            engine.close()
    return row


def quality(progress: Progress) -> dict[str, Any]:
    """Both query paths at once, each in its own process (quality, not time)."""
    children = {}
    for path in PATHS:
        progress(f"query: quality with the {path} query path")
        env = dict(os.environ) | {"MEMORY_QUERY_ENCODER": path, "PYTHONPATH": str(REPO)}
        code = "import json; from bench import query_path as q; "
        code += f"print(json.dumps(q.quality_one({path!r})))"
        children[path] = subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    out: dict[str, Any] = {}
    for path, child in children.items():
        stdout, stderr = child.communicate(timeout=7200)
        if child.returncode != 0:
            raise RuntimeError(f"{path}: {stderr[-2000:]}")
        out[path] = json.loads(stdout.strip().splitlines()[-1])
    return out


def run(
    sizes: tuple[int, ...] = (1000, 10000),
    n: int = 300,
    progress: Progress = print,
    *,
    with_quality: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    detail: dict[str, Any] = {"timing": timing(sizes, n, progress)}
    if with_quality:
        detail["quality"] = quality(progress)
    rows = _rows(detail["timing"])
    return rows, detail


def _rows(timings: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for size, per in timings["sizes"].items():
        phases, busy = per["phases"], per["phases_under_background_embedding"]
        for part in ("tokenizer", "onnx_run", "pooling", "fast"):
            rows.append(
                {
                    "memories": int(size),
                    "part": part,
                    "p50 ms": phases[part]["p50_ms"],
                    "p99 ms": phases[part]["p99_ms"],
                    "p50 ms, background embedding": busy[part]["p50_ms"],
                }
            )
        for path in PATHS:
            rows.append(
                {
                    "memories": int(size),
                    "part": f"whole retrieval, {path} path",
                    "p50 ms": per[path]["retrieval"]["p50_ms"],
                    "p99 ms": per[path]["retrieval"]["p99_ms"],
                    "p50 ms, background embedding": None,
                }
            )
    return rows


if __name__ == "__main__":
    # ``--part timing`` or ``--part quality`` runs one part and keeps the other's last
    # figures from the results file (timing wants a quiet machine; quality does not).
    from bench import output

    part = sys.argv[sys.argv.index("--part") + 1] if "--part" in sys.argv else "both"
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    previous = output.RESULTS / "query_path.json"
    kept = json.loads(previous.read_text()) if previous.exists() else {}
    detail = {k: kept[k] for k in ("timing", "quality") if k in kept}
    if part in ("timing", "both"):
        detail["timing"] = timing((1000, 10000), 300, say)
    if part in ("quality", "both"):
        detail["quality"] = quality(say)
    output.write("query_path", _rows(detail["timing"]), detail)
