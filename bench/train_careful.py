"""Train the careful reader: is this statement one a careful assistant must weigh?

``python -m bench.train_careful`` fits a logistic regression over the packaged
MiniLM's sentence vectors and writes the weights the engine ships
(``memoryd/engine/careful_model.npz``). Positives are the constraint statements of the
advice splits (``bench/data/advice``: "Our youngest has carried an EpiPen everywhere
since he reacted to a satay sauce"); negatives are the other statements of the same
scenarios (a hobby, a job, weekend news) and the clauses capture leaves over from the
fact-free messages of the extraction development splits (a neighbour's diagnosis, a
question about allergies, a character's traits), as the engine meets them.

``--without SPLIT`` leaves one advice split out and scores it (AUC, and recall and
flagged share per threshold), kept per split in ``bench/results/careful.json``: the reader is
judged on statements it never saw. Capture asks it only about statements no rule read
(``engine.attribute_backing``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine
from memoryd.core.extraction import extract
from memoryd.embedding.onnx_minilm import MiniLMEmbedder
from memoryd.engine.attribute_model import CAREFUL_PATH

ROOT = Path(__file__).resolve().parent
ADVICE = ROOT / "data" / "advice"
EXTRACTION = ROOT / "data" / "extraction"
RESULT = ROOT / "results" / "careful.json"
#: Advice splits measured held-out once and since used for development; a new held-out
#: split is never listed here before its single measurement.
ADVICE_SPLITS = ("dev", "dev2", "test2", "test3", "test4", "test5", "test6")
#: Extraction splits whose fact-free messages teach what is not a constraint: the
#: development ones the attribute classifier trains on too; the others stay unseen, so
#: the false memories they show are measured on messages the reader never met.
NEGATIVE_SPLITS = ("train", "train2", "dev", "dev2", "dev3", "dev4", "dev5")
#: A constraint is the rarer class and a miss costs more than a flag: positives weigh
#: this much (set on ``--without test5``, before ``test6`` was measured).
POSITIVE_WEIGHT = 3.0
L2 = 0.1


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def advice(splits: tuple[str, ...]) -> tuple[list[str], list[int]]:
    texts: list[str] = []
    labels: list[int] = []
    for split in splits:
        for row in _rows(ADVICE / f"{split}.jsonl"):
            for i, text in enumerate(row["statements"]):
                texts.append(text)
                labels.append(int(i == row["constraint"]))
    return texts, labels


def leftovers(text: str) -> list[str]:
    """What capture's rules leave of a message for the models to read."""
    weak: list[str] = []
    _facts, left = extract(text, weak=weak)
    return left + weak


def negatives(splits: tuple[str, ...]) -> list[str]:
    return [
        c
        for s in splits
        for r in _rows(EXTRACTION / s / "negatives.jsonl")
        for c in leftovers(r["text"])
    ]


def fit(x: np.ndarray, y: np.ndarray, weight: float = POSITIVE_WEIGHT) -> tuple[np.ndarray, float]:
    """Weighted logistic regression, full-batch gradient descent (deterministic)."""
    w = np.zeros(x.shape[1])
    b = 0.0
    sw = np.where(y == 1, weight, 1.0)
    for _ in range(3000):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        g = (p - y) * sw
        w -= 0.5 * (x.T @ g / len(y) + L2 * w / len(y))
        b -= 0.5 * float(g.mean())
    return w.astype(np.float32), b


def score(p: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    pos, neg = p[y == 1], p[y == 0]
    auc = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
    return {
        "auc": round(auc, 3),
        "at": {
            f"{t:.1f}": {
                "constraints_flagged": round(float(np.mean(pos >= t)), 3),
                "other_statements_flagged": round(float(np.mean(neg >= t)), 3),
            }
            for t in (0.5, 0.6, 0.7, 0.8, 0.9)
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--without", help="leave this advice split out and score it")
    parser.add_argument(
        "--write", action="store_true", help="write the weights even with --without"
    )
    args = parser.parse_args()
    embedder = MiniLMEmbedder()

    def vectors(texts: list[str]) -> np.ndarray:
        return np.asarray(embedder.embed_batch(texts), dtype=np.float32)

    splits = tuple(s for s in ADVICE_SPLITS if s != args.without)
    texts, labels = advice(splits)
    negs = negatives(NEGATIVE_SPLITS)
    x = vectors(texts + negs)
    y = np.array(labels + [0] * len(negs), dtype=np.float64)
    started = time.perf_counter()
    weights, bias = fit(x, y)
    took = time.perf_counter() - started
    print(
        f"trained on {len(texts)} statements ({sum(labels)} constraints) and "
        f"{len(negs)} clauses of fact-free messages in {took:.1f} s"
    )
    if not args.without or args.write:
        np.savez(CAREFUL_PATH, weights=weights, bias=np.float32(bias))
        print(f"wrote {CAREFUL_PATH}")
    if not args.without:
        return
    held_texts, held_labels = advice((args.without,))
    p = 1.0 / (1.0 + np.exp(-(vectors(held_texts) @ weights + bias)))
    result = {
        "benchmark": "careful-reader",
        "machine": machine.machine(),
        "trained_on": list(splits),
        "negatives_from": list(NEGATIVE_SPLITS),
        "scored_on": args.without,
        **score(p, np.array(held_labels)),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    kept = json.loads(RESULT.read_text()) if RESULT.is_file() else {}
    splits_scored = kept.get("left_out", {}) if kept.get("benchmark") == "careful-reader" else {}
    splits_scored[args.without] = result
    RESULT.write_text(
        json.dumps({"benchmark": "careful-reader", "left_out": splits_scored}, indent=2) + "\n"
    )
    print(json.dumps(result["at"], indent=1), "AUC", result["auc"])


if __name__ == "__main__":
    main()
