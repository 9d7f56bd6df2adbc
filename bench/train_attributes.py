"""Train the attribute classifier and measure it against the rules.

``python -m bench.train_attributes`` embeds ``bench/data/attributes/train*.jsonl`` with
the packaged MiniLM, fits a softmax regression (plain numpy, L2, full-batch gradient
descent), and writes the weights the engine ships
(``memoryd/engine/attribute_model.npz``). It then scores ``dev.jsonl`` three ways: the
rules alone (the attribute of the first fact ``extract_facts`` finds, "none" when it
finds nothing), the classifier alone, and nearest labelled example (cosine 1-NN), and
writes ``bench/results/attributes.json``. The clauses were written by a helper who did
not read the extractor; dev is never trained on.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine
from memoryd.core.extraction import extract_facts
from memoryd.core.extraction.segment import clauses, prepare, windows
from memoryd.embedding.onnx_minilm import MiniLMEmbedder
from memoryd.engine.attribute_model import MODEL_PATH, NONE

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data" / "attributes"
RESULT = ROOT / "results" / "attributes.json"


def load(name: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]
    return rows


def fit(
    x: np.ndarray, y: np.ndarray, classes: int, *, l2: float = 1e-4, steps: int = 3000
) -> tuple[np.ndarray, np.ndarray]:
    """Softmax regression by full-batch gradient descent with momentum."""
    n, d = x.shape
    w = np.zeros((d, classes), dtype=np.float64)
    b = np.zeros(classes, dtype=np.float64)
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    onehot = np.eye(classes)[y]
    lr, mom = 20.0, 0.9
    for _ in range(steps):
        z = x @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) / n
        gw = x.T @ g + l2 * w
        gb = g.sum(axis=0)
        vw = mom * vw - lr * gw
        vb = mom * vb - lr * gb
        w += vw
        b += vb
    return w.astype(np.float32), b.astype(np.float32)


#: Extraction splits whose clauses also train the classifier: the message's
#: clauses as capture segments them, a clause holding an expected value labelled with
#: its fact's attribute, every clause of a fact-free message "none". ``dev6`` and the
#: held-out ``test*`` splits are never trained on.
CLAUSE_SPLITS = ("train", "train2", "dev3", "dev4", "dev5")
EXTRACTION = ROOT / "data" / "extraction"
#: labels the schema files under another name
SAME_AS = {"dislike": "like"}


def _clauses(text: str) -> list[str]:
    out = []
    for window in windows(text):
        out += [c.text for c in clauses(prepare(window))]
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def clause_examples(splits: tuple[str, ...] = CLAUSE_SPLITS) -> list[dict[str, Any]]:
    """Labelled clauses of the extraction splits, as the classifier meets them."""
    out: list[dict[str, Any]] = []
    for split in splits:
        for row in _rows(EXTRACTION / split / "positives.jsonl"):
            facts = row.get("facts") or [
                {"value": v, "attribute": row.get("attribute")} for v in row["expect"]
            ]
            for clause in _clauses(row["text"]):
                low = clause.lower()
                hit = next((f for f in facts if f["value"].lower() in low), None)
                if hit is None or not hit.get("attribute"):
                    continue  # a clause with no labelled value: unknown, not "none"
                label = SAME_AS.get(hit["attribute"], hit["attribute"])
                out.append({"text": clause, "attribute": label, "register": row["register"]})
        for row in _rows(EXTRACTION / split / "negatives.jsonl"):
            for clause in _clauses(row["text"]):
                out.append({"text": clause, "attribute": NONE, "register": row["register"]})
    return out


def fit_mlp(
    x: np.ndarray,
    y: np.ndarray,
    classes: int,
    *,
    hidden: int = 256,
    epochs: int = 40,
    drop: float = 0.2,
    lr: float = 1e-3,
    l2: float = 1e-4,
    seed: int = 0,
) -> tuple[np.ndarray, ...]:
    """One ReLU layer and a softmax, trained with Adam on minibatches of 64 and dropout
    (seeded: the same data gives the same weights). On the held-out statements it names
    the attribute 3 points more often than the softmax alone (0.91 against 0.88)."""
    rng = np.random.default_rng(seed)
    n, d = x.shape
    params = [
        rng.normal(0, np.sqrt(2 / d), (d, hidden)),
        np.zeros(hidden),
        rng.normal(0, np.sqrt(1 / hidden), (hidden, classes)),
        np.zeros(classes),
    ]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = 0
    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, 64):
            batch = order[start : start + 64]
            xb, yb = x[batch], y[batch]
            w1, b1, w2, b2 = params
            h = xb @ w1 + b1
            mask = (rng.random(h.shape) > drop) / (1 - drop)
            a = np.maximum(h, 0) * mask
            z = a @ w2 + b2
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(yb)), yb] -= 1
            g = p / len(yb)
            ga = (g @ w2.T) * mask * (h > 0)
            grads = [xb.T @ ga + l2 * w1, ga.sum(axis=0), a.T @ g + l2 * w2, g.sum(axis=0)]
            t += 1
            for i, grad in enumerate(grads):
                m[i] = 0.9 * m[i] + 0.1 * grad
                v[i] = 0.999 * v[i] + 0.001 * grad * grad
                step = (m[i] / (1 - 0.9**t)) / (np.sqrt(v[i] / (1 - 0.999**t)) + 1e-8)
                params[i] -= lr * step
    return tuple(p.astype(np.float32) for p in params)


def rules_attribute(text: str) -> str:
    facts = [f for f in extract_facts(text) if not f.is_retraction]
    return (facts[0].attribute or NONE) if facts else NONE


def accuracy(pred: list[str], gold: list[str]) -> float:
    return round(sum(p == g for p, g in zip(pred, gold, strict=True)) / len(gold), 4)


def per_register(pred: list[str], rows: list[dict[str, Any]]) -> dict[str, float]:
    groups: dict[str, list[bool]] = {}
    for p, r in zip(pred, rows, strict=True):
        groups.setdefault(r["register"], []).append(p == r["attribute"])
    return {k: round(sum(v) / len(v), 4) for k, v in sorted(groups.items())}


def main() -> int:
    started = time.perf_counter()
    info = machine.machine()
    train = load("train.jsonl") + load("train2.jsonl")  # two authors, one held-out dev
    known = {r["attribute"] for r in train}
    extra = [r for r in clause_examples() if r["attribute"] in known]
    print(f"{len(train)} statements and {len(extra)} clauses of {', '.join(CLAUSE_SPLITS)}")
    train += extra
    dev = load("dev.jsonl")
    labels = sorted({r["attribute"] for r in train})
    index = {name: i for i, name in enumerate(labels)}
    embedder = MiniLMEmbedder()
    xt = embedder.embed_batch([r["text"] for r in train]).astype(np.float64)
    xd = embedder.embed_batch([r["text"] for r in dev]).astype(np.float64)
    yt = np.array([index[r["attribute"]] for r in train])
    w, b = fit(xt, yt, len(labels))
    softmax = [labels[i] for i in (xd @ w + b).argmax(axis=1)]
    w1, b1, w2, b2 = fit_mlp(xt, yt, len(labels))
    MODEL_PATH.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        MODEL_PATH,
        hidden_weights=w1.astype(np.float16),
        hidden_bias=b1,
        weights=w2.astype(np.float16),
        bias=b2,
        labels=np.array(labels),
    )
    gold = [r["attribute"] for r in dev]
    logits = np.maximum(xd @ w1 + b1, 0) @ w2 + b2
    clf = [labels[i] for i in logits.argmax(axis=1)]
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    print("mean top probability", float((z.max(axis=1) / z.sum(axis=1)).mean()))
    nn = [train[i]["attribute"] for i in (xd @ xt.T).argmax(axis=1)]
    rules = [rules_attribute(r["text"]) for r in dev]
    confusions = Counter((g, p) for g, p in zip(gold, clf, strict=True) if g != p)
    rows = [
        {"method": "rules (first fact's attribute)", "accuracy": accuracy(rules, gold)}
        | {"per_register": per_register(rules, dev)},
        {"method": "classifier (one hidden layer over MiniLM, shipped)"}
        | {"accuracy": accuracy(clf, gold), "per_register": per_register(clf, dev)},
        {"method": "softmax over MiniLM (no hidden layer)", "accuracy": accuracy(softmax, gold)}
        | {"per_register": per_register(softmax, dev)},
        {"method": "nearest labelled example", "accuracy": accuracy(nn, gold)}
        | {"per_register": per_register(nn, dev)},
    ]
    out = {
        "benchmark": "attributes",
        "machine": info,
        "train": len(train),
        "train_clauses": len(extra),
        "dev": len(dev),
        "labels": len(labels),
        "rows": rows,
        "top_confusions": [
            {"gold": g, "predicted": p, "n": n} for (g, p), n in confusions.most_common(12)
        ],
        "elapsed_s": round(time.perf_counter() - started, 2),
    }
    RESULT.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{'method':36} accuracy")
    for row in rows:
        print(f"{row['method']:36} {row['accuracy']:.3f}")
    print(f"weights: {MODEL_PATH} ({MODEL_PATH.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
