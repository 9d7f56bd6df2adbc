"""The hybrid pipeline's parameters, chosen by leave-one-conversation-out.

``python -m bench.fusion_cv [--data DIR] [--grid SPEC] [--content none]``: the LoCoMo
conversations are ingested once (MiniLM, every turn about its speaker), then every
question is asked under each point of a grid of ``EngineConfig`` fields, e.g.
``--grid "context_field_weight=0,0.35;context_vector_weight=0,1"``. For each
conversation in turn, the point is chosen on the other six (by R@5 + R@10 + R@25) and
that conversation's recall at the chosen point is its held-out figure; the table gives
each point's pooled recall, and the JSON the held-out mean, its spread, per category.
Writes ``bench/results/fusion_cv.json`` (``--name`` to keep several).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.locomo import DEFAULT_DATA
from bench.output import write
from memoryd.eval import locomo
from memoryd.eval.metrics import CATEGORIES, StrategyResult, latency_summary

KS = (5, 10, 25)
DEFAULT_GRID = "context_field_weight=0,0.2,0.35,0.5;context_vector_weight=0,0.5,1"

Point = tuple[tuple[str, float | str], ...]


def _value(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text.strip()  # e.g. fusion=score,zscore


def parse_grid(spec: str) -> list[Point]:
    axes = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        name, _, values = part.partition("=")
        axes.append([(name.strip(), _value(v)) for v in values.split(",")])
    return [tuple(point) for point in itertools.product(*axes)]


def label(point: Point) -> str:
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point)


def sweep(data: Path, grid: list[Point], content: str) -> dict[str, Any]:
    conversations = locomo.load_conversations(data)
    embedder = locomo.transformers_embedder()
    if embedder is None:
        raise SystemExit("the local MiniLM is not installed")
    tallies: dict[Point, dict[str, StrategyResult]] = {}
    with tempfile.TemporaryDirectory(prefix="memoryd-fusion-cv-") as tmp:
        data_dir = Path(tmp) / "data"
        config = locomo.eval_config(data_dir)
        # the second vectors are built when a point searches them (off by default)
        built = max(float(dict(p).get("context_vector_weight", 0.0)) for p in grid)
        engine = locomo.open_eval_engine(
            data_dir, embedder, dataclasses.replace(config, context_vector_weight=built)
        )
        try:
            started = time.perf_counter()
            locomo.ingest(engine, conversations, locomo.CONTENT_FNS[content])
            engine.drain(timeout=3600)
            ingest_s = time.perf_counter() - started
            print(f"... ingested in {ingest_s:.1f} s", file=sys.stderr)
            for point in grid:
                print(f"... {label(point)}", file=sys.stderr)
                engine.retriever.config = dataclasses.replace(config, **dict(point))
                per: dict[str, StrategyResult] = {}
                for conv in conversations:
                    result = per[conv.name] = StrategyResult(KS)
                    for question in locomo.evaluated(conv):
                        ranked, tokens, _, ms = locomo.ask(engine, conv, question, "hybrid", 25)
                        result.add(question, ranked, tokens)
                        result.latencies_ms.append(ms)
                tallies[point] = per
        finally:
            engine.close()
    names = [c.name for c in conversations]
    return {"grid": grid, "tallies": tallies, "names": names, "ingest_s": ingest_s}


def pooled(results: list[StrategyResult]) -> dict[str, float]:
    """Recall over the questions of several conversations (each question counts once)."""
    n = sum(r.overall.n for r in results)
    out = {f"R@{k}": sum(r.overall.recall.get(k, 0.0) for r in results) / max(1, n) for k in KS}
    out["S@10"] = sum(r.overall.sessions.get(10, 0.0) for r in results) / max(1, n)
    return out


def per_category(results: list[StrategyResult]) -> dict[str, float]:
    out = {}
    for number, name in CATEGORIES.items():
        tallies = [r.by_category[number] for r in results if number in r.by_category]
        n = sum(t.n for t in tallies)
        out[name] = round(sum(t.recall.get(10, 0.0) for t in tallies) / max(1, n), 4)
    return out


def analyse(found: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    grid, tallies, names = found["grid"], found["tallies"], found["names"]
    rows = []
    for point in grid:
        results = list(tallies[point].values())
        latency = latency_summary([ms for r in results for ms in r.latencies_ms])["p50"]
        rows.append(
            {
                "point": label(point),
                **{k: round(v, 4) for k, v in pooled(results).items()},
                "p50_ms": round(latency, 2),
            }
        )
    held_out = []
    for name in names:
        others = [n for n in names if n != name]

        def score(point: Point, others: list[str] = others) -> float:
            p = pooled([tallies[point][n] for n in others])
            return p["R@5"] + p["R@10"] + p["R@25"]

        chosen = max(grid, key=score)
        held_out.append(
            {"conversation": name, "chosen": label(chosen), **pooled([tallies[chosen][name]])}
        )
    r10 = [h["R@10"] for h in held_out]
    best = max(grid, key=lambda p: sum(pooled(list(tallies[p].values()))[f"R@{k}"] for k in KS))
    cv = {
        "held_out": held_out,
        "held_out_mean": {
            k: round(statistics.fmean(h[k] for h in held_out), 4)
            for k in ("R@5", "R@10", "R@25", "S@10")
        },
        "r10_spread": {"min": round(min(r10), 4), "max": round(max(r10), 4)},
        "chosen": sorted({h["chosen"] for h in held_out}),
        "best_on_all": label(best),
        "best_on_all_by_category_R@10": per_category(list(tallies[best].values())),
        "ingest_s": round(found.get("ingest_s", 0.0), 1),
    }
    return rows, cv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fusion_cv", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--grid", default=DEFAULT_GRID)
    parser.add_argument("--content", default="none", choices=sorted(locomo.CONTENT_FNS))
    parser.add_argument("--name", default="fusion_cv")
    args = parser.parse_args(argv)
    rows, cv = analyse(sweep(args.data, parse_grid(args.grid), args.content))
    write(args.name, rows, {"content": args.content, "leave_one_conversation_out": cv})
    print(
        f"held out: {cv['held_out_mean']}, R@10 from {cv['r10_spread']['min']} to "
        f"{cv['r10_spread']['max']}, chosen {cv['chosen']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
