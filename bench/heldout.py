"""The held-out conversation set (``bench/data/heldout``), measured like LoCoMo.

``python -m bench.heldout``: the three conversations written for memoryd, never used to
choose a parameter, through ``memoryd.eval.locomo.run_eval`` (hybrid, the local MiniLM,
the eval's stored form) under the shipped defaults and under the pipelines before
them: the default of stop 16 (score fusion, 20 candidates per leg, no subject prior,
no context), of stop 17 (the subject prior added), and the default with the optional
context vector. Writes ``bench/results/heldout.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.output import write
from memoryd.eval import locomo

DATA = Path(__file__).resolve().parent / "data" / "heldout"
BEFORE = {"fusion": "score", "rrf_vector_weight": 1.0, "vec_top_k": 20, "context_field_weight": 0.0}
PIPELINES: dict[str, dict[str, Any]] = {
    "before issue 20 (stop 16 default)": BEFORE | {"subject_weight": 0.0},
    "subject prior (stop 17 default)": BEFORE,
    "context field, z-score fusion (the default)": {},
    "the default with the context vector": {"context_vector_weight": 0.35},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.heldout", description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    conversations = locomo.load_conversations(args.data)
    embedder = locomo.transformers_embedder()
    if embedder is None:
        raise SystemExit("the local MiniLM is not installed")
    rows = []
    for name, overrides in PIPELINES.items():
        result = locomo.run_eval(
            conversations, embedder, strategies=("hybrid",), config_overrides=overrides
        )
        s = result["strategies"]["hybrid"]
        row: dict[str, Any] = {"pipeline": name}
        row |= {f"R@{k}": v for k, v in s["recall"].items()}
        row["S@3"] = s["session_recall"]["3"]
        row |= {f"R@10 c{c}": part["recall"]["10"] for c, part in s["per_category"].items()}
        row["p50_ms"] = s["latency_ms"]["p50"]
        rows.append(row)
        print(row, flush=True)
    extra = {
        "conversations": len(conversations),
        "questions": locomo.count_questions(conversations),
        "turns": sum(len(c.turns) for c in conversations),
    }
    write("heldout", rows, {"heldout": extra})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
