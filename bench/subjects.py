"""The subject prior's weight, chosen by leave-one-conversation-out (issue 20).

``python -m bench.subjects [--data DIR] [--weights 0,0.15,0.3,0.6,1]``: the LoCoMo
conversations are ingested once (MiniLM, engine defaults, every turn about its
speaker); every question is asked at each weight of ``MEMORY_SUBJECT_WEIGHT`` (0 = no
prior, and no names taken out of the dense query). For each conversation in turn, the
weight is chosen on the other ones (by R@5 + R@10 + R@25) and that conversation's
recall at the chosen weight is its held-out figure; the table gives the per-weight
means, the held-out mean and its spread. Writes ``bench/results/subjects_cv.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.__main__ import write
from bench.locomo import DEFAULT_DATA
from memoryd.eval import locomo
from memoryd.eval.metrics import StrategyResult

KS = (5, 10, 25)


def sweep(data: Path, weights: list[float]) -> dict[str, Any]:
    conversations = locomo.load_conversations(data)
    embedder = locomo.transformers_embedder()
    if embedder is None:
        raise SystemExit("the local MiniLM is not installed")
    # per weight, per conversation: the tally of its questions
    tallies: dict[float, dict[str, StrategyResult]] = {}
    with tempfile.TemporaryDirectory(prefix="memoryd-subjects-") as tmp:
        data_dir = Path(tmp) / "data"
        config = locomo.eval_config(data_dir)
        engine = locomo.open_eval_engine(data_dir, embedder, config)
        try:
            turns = sum(len(c.turns) for c in conversations)
            print(f"... ingesting {turns} turns", file=sys.stderr)
            locomo.ingest(engine, conversations, locomo.turn_with_context)
            engine.drain(timeout=3600)
            for weight in weights:
                print(f"... subject weight {weight}", file=sys.stderr)
                engine.retriever.config = dataclasses.replace(config, subject_weight=weight)
                per: dict[str, StrategyResult] = {}
                for conv in conversations:
                    result = per[conv.name] = StrategyResult(KS)
                    for question in locomo.evaluated(conv):
                        ranked, tokens, _, ms = locomo.ask(engine, conv, question, "hybrid", 25)
                        result.add(question, ranked, tokens)
                        result.latencies_ms.append(ms)
                tallies[weight] = per
        finally:
            engine.close()
    return {"weights": weights, "tallies": tallies, "names": [c.name for c in conversations]}


def _pooled(results: list[StrategyResult]) -> dict[str, float]:
    """Recall over the questions of several conversations (each question counts once)."""
    n = sum(r.overall.n for r in results)
    out = {f"R@{k}": sum(r.overall.recall.get(k, 0.0) for r in results) / max(1, n) for k in KS}
    out["S@10"] = sum(r.overall.sessions.get(10, 0.0) for r in results) / max(1, n)
    return out


def analyse(found: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    weights, tallies, names = found["weights"], found["tallies"], found["names"]
    rows = []
    for weight in weights:
        pooled = _pooled(list(tallies[weight].values()))
        rows.append({"weight": weight, **{k: round(v, 4) for k, v in pooled.items()}})
    held_out = []
    for name in names:
        others = [n for n in names if n != name]

        def score(weight: float, others: list[str] = others) -> float:
            p = _pooled([tallies[weight][n] for n in others])
            return p["R@5"] + p["R@10"] + p["R@25"]

        chosen = max(weights, key=score)
        mine = _pooled([tallies[chosen][name]])
        held_out.append({"conversation": name, "chosen_weight": chosen, **mine})
    r10 = [h["R@10"] for h in held_out]
    cv = {
        "held_out": held_out,
        "held_out_mean": {
            k: round(statistics.fmean(h[k] for h in held_out), 4)
            for k in ("R@5", "R@10", "R@25", "S@10")
        },
        "r10_spread": {"min": round(min(r10), 4), "max": round(max(r10), 4)},
        "chosen_weights": sorted({h["chosen_weight"] for h in held_out}),
    }
    return rows, cv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.subjects", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--weights", default="0,0.15,0.3,0.6,1")
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    rows, cv = analyse(sweep(args.data, weights))
    write("subjects_cv", rows, {"leave_one_conversation_out": cv})
    print(
        f"held out (each conversation, weight chosen on the others): {cv['held_out_mean']}, "
        f"R@10 from {cv['r10_spread']['min']} to {cv['r10_spread']['max']}, "
        f"weights chosen {cv['chosen_weights']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
