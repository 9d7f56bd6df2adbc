"""Train the value tagger: which words of a message are a lasting value about its writer.

``python -m bench.train_tagger`` runs the packaged MiniLM over every labelled message of
the training splits and fits a small per-token classifier (one hidden layer, plain
numpy, Adam) over each word piece's contextual vector and its neighbours'. Labels come
from the splits' own ``expect``/``facts`` values (B for a value's first piece, I for the
rest, O elsewhere); fact-free messages are all O, so the tagger learns what a value is
*in context*: "Duke" after "my ol' coonhound", not "Bea" in a character sheet. It
writes the weights the engine ships (``memoryd/engine/value_tagger.npz``) and scores the
splits it did not train on: how many labelled values it finds, and how many fact-free
messages it finds anything in (``bench/results/tagger.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine
from memoryd.embedding.onnx_minilm import MiniLMEmbedder
from memoryd.engine.attribute_backing import GATE_AT
from memoryd.engine.value_tagger import MODEL_PATH, features, message_features, span_features, spans

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data" / "extraction"
RESULT = ROOT / "results" / "tagger.json"

#: trained on; every other split is scored
TRAIN = ("train", "train2", "train3", "train4", "dev", "dev2", "dev3", "dev4", "dev5", "dev7")
SCORE = ("dev6", "dev8", "test", "test2", "test4")
OUT, BEGIN, INSIDE = 0, 1, 2


def _rows(split: str, name: str) -> list[dict[str, Any]]:
    path = DATA / split / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def examples(split: str) -> list[tuple[str, list[str], str]]:
    """``(text, values, kind)`` per message: positives with their values, fact-free
    messages with none, and each update pair's two messages with the value each holds."""
    out: list[tuple[str, list[str], str]] = []
    for row in _rows(split, "positives.jsonl"):
        values = [f["value"] for f in row.get("facts", [])] or list(row.get("expect", []))
        out.append((row["text"], values, "positive"))
    for row in _rows(split, "negatives.jsonl"):
        out.append((row["text"], [], "negative"))
    for row in _rows(split, "supersede.jsonl"):
        if row.get("mode") == "retract":
            out.append((row["first"], [row["old"]] if row["old"] else [], "pair"))
            continue
        if row.get("old"):
            out.append((row["first"], [row["old"]], "pair"))
        if row.get("new"):
            out.append((row["second"], [row["new"]], "pair"))
    return out


def attributed(split: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """``(text, [(value, attribute)])`` per message whose values carry an attribute:
    the ``facts`` of a message, a message's one value under its ``attribute``, and each
    update pair's two values under the pair's."""
    out: list[tuple[str, list[tuple[str, str]]]] = []
    for row in _rows(split, "positives.jsonl"):
        if row.get("facts"):
            out.append((row["text"], [(f["value"], f["attribute"]) for f in row["facts"]]))
        elif row.get("attribute") and len(row.get("expect", [])) == 1:
            out.append((row["text"], [(row["expect"][0], row["attribute"])]))
    for row in _rows(split, "supersede.jsonl"):
        attribute = row.get("attribute")
        if not attribute or row.get("negated"):
            continue
        if row.get("old"):
            out.append((row["first"], [(row["old"], attribute)]))
        if row.get("new") and row.get("mode") != "retract":
            out.append((row["second"], [(row["new"], attribute)]))
    return out


def span_rows(embedder: MiniLMEmbedder, splits: tuple[str, ...]) -> tuple[np.ndarray, list[str]]:
    """Span features and attribute labels of every attributed value."""
    rows = [r for s in splits for r in attributed(s)]
    encoded = encode(embedder, [text for text, _ in rows])
    xs: list[np.ndarray] = []
    ys: list[str] = []
    for (text, values), (states, offsets) in zip(rows, encoded, strict=True):
        low = text.lower()
        for value, attribute in values:
            start = low.find(value.lower())
            if start < 0:
                continue
            end = start + len(value)
            pieces = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
            if not pieces:
                continue
            xs.append(span_features(states, pieces[0], pieces[-1] + 1))
            ys.append(attribute)
    if not xs:
        return np.zeros((0, 4 * 384), dtype=np.float32), ys
    return np.stack(xs), ys


def gate_rows(embedder: MiniLMEmbedder, splits: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Each message as a whole, labelled 0 when it states nothing about its writer."""
    rows = [r for s in splits for r in examples(s)]
    encoded = encode(embedder, [text for text, _v, _k in rows])
    x = np.stack([message_features(states) for states, _offsets in encoded])
    y = np.asarray([0 if kind == "negative" else 1 for _t, _v, kind in rows])
    return x, y


def labels(offsets: list[tuple[int, int]], text: str, values: list[str]) -> np.ndarray:
    """B/I/O per word piece; every occurrence of a value is labelled."""
    y = np.zeros(len(offsets), dtype=np.int64)
    low = text.lower()
    for value in values:
        v = value.lower().strip()
        if not v:
            continue
        start = low.find(v)
        while start >= 0:
            end = start + len(v)
            first = True
            for i, (a, b) in enumerate(offsets):
                if b <= a or b <= start or a >= end:
                    continue
                y[i] = BEGIN if first else INSIDE
                first = False
            start = low.find(v, end)
    return y


def encode(embedder: MiniLMEmbedder, texts: list[str]) -> list[tuple[np.ndarray, list]]:
    """Contextual vectors and character offsets per message (special pieces dropped)."""
    embedder.load()
    out = []
    for start in range(0, len(texts), 32):
        out.extend(embedder.token_states(texts[start : start + 32]))
    return out


def build(
    embedder: MiniLMEmbedder, splits: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, list[str], str, Any, Any]]]:
    rows = [r for s in splits for r in examples(s)]
    encoded = encode(embedder, [r[0] for r in rows])
    xs, ys, kept = [], [], []
    for (text, values, kind), (states, offsets) in zip(rows, encoded, strict=True):
        xs.append(features(states))
        ys.append(labels(offsets, text, values))
        kept.append((text, values, kind, states, offsets))
    return np.concatenate(xs), np.concatenate(ys), kept


def _adam_fit(
    x: np.ndarray,
    y: np.ndarray,
    *,
    hidden: int,
    epochs: int,
    l2: float,
    seed: int = 0,
    classes: int = 3,
    balance: float = 0.5,
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, d = x.shape
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    xn = ((x - mean) / scale).astype(np.float32)
    w1 = (rng.standard_normal((d, hidden)) * np.sqrt(2.0 / d)).astype(np.float32)
    b1 = np.zeros(hidden, dtype=np.float32)
    w2 = (rng.standard_normal((hidden, classes)) * np.sqrt(1.0 / hidden)).astype(np.float32)
    b2 = np.zeros(classes, dtype=np.float32)
    params = [w1, b1, w2, b2]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    # the rare classes weigh more: a missed value costs more than a stray O
    counts = np.bincount(y, minlength=classes).astype(np.float64)
    cw = (counts.sum() / np.maximum(counts, 1.0) / classes) ** balance
    cw = (cw / cw.min()).astype(np.float32)
    lr, beta1, beta2, step = 1e-3, 0.9, 0.999, 0
    batch = 512
    for _ in range(epochs):
        order = rng.permutation(n)
        for s in range(0, n, batch):
            idx = order[s : s + batch]
            xb, yb = xn[idx], y[idx]
            h = xb @ w1 + b1
            a = np.maximum(h, 0)
            z = a @ w2 + b2
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            wt = cw[yb][:, None]
            g = p.copy()
            g[np.arange(len(idx)), yb] -= 1.0
            g *= wt / len(idx)
            gw2 = a.T @ g + l2 * w2
            gb2 = g.sum(axis=0)
            ga = g @ w2.T
            ga[h <= 0] = 0
            gw1 = xb.T @ ga + l2 * w1
            gb1 = ga.sum(axis=0)
            step += 1
            for i, grad in enumerate((gw1, gb1, gw2, gb2)):
                m[i] = beta1 * m[i] + (1 - beta1) * grad
                v[i] = beta2 * v[i] + (1 - beta2) * grad * grad
                mh = m[i] / (1 - beta1**step)
                vh = v[i] / (1 - beta2**step)
                params[i] -= lr * mh / (np.sqrt(vh) + 1e-8)
    return {
        "mean": mean.astype(np.float32),
        "scale": scale.astype(np.float32),
        "w1": params[0],
        "b1": params[1],
        "w2": params[2],
        "b2": params[3],
    }


def predict(model: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    xn = (x - model["mean"]) / model["scale"]
    a = np.maximum(xn @ model["w1"] + model["b1"], 0)
    z = a @ model["w2"] + model["b2"]
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    out: np.ndarray = p / p.sum(axis=1, keepdims=True)
    return out


def score(
    model: dict[str, np.ndarray], rows: list[tuple[str, list[str], str, Any, Any]], at: float
) -> dict[str, Any]:
    """Values found (a predicted span overlaps the value), messages whose every value is
    found, and fact-free messages with any span."""
    values = found = msgs = whole = negs = flagged = 0
    for text, vals, kind, states, offsets in rows:
        probs = predict(model, features(states))
        got = spans(text, offsets, probs, at)
        if kind == "negative":
            negs += 1
            flagged += bool(got)
            continue
        if kind != "positive" or not vals:
            continue
        msgs += 1
        low = text.lower()
        all_found = True
        for value in vals:
            values += 1
            start = low.find(value.lower())
            end = start + len(value)
            if start >= 0 and any(a < end and b > start for a, b, _p in got):
                found += 1
            else:
                all_found = False
        whole += all_found
    return {
        "values": values,
        "value_recall": round(found / max(values, 1), 3),
        "messages": msgs,
        "message_recall": round(whole / max(msgs, 1), 3),
        "negatives": negs,
        "negatives_flagged": round(flagged / max(negs, 1), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.train_tagger")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--l2", type=float, default=1e-4)
    parser.add_argument("--at", type=float, default=0.5)
    parser.add_argument("--attr-hidden", type=int, default=256)
    parser.add_argument("--attr-epochs", type=int, default=40)
    parser.add_argument("--gate-hidden", type=int, default=256)
    parser.add_argument("--gate-epochs", type=int, default=40)
    parser.add_argument("--score", nargs="*", default=list(SCORE))
    parser.add_argument("--no-write", action="store_true", help="measure without shipping")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    embedder = MiniLMEmbedder()
    x, y, _train_rows = build(embedder, TRAIN)
    print(f"training on {len(y)} pieces ({int((y != OUT).sum())} in values)", file=sys.stderr)
    model = _adam_fit(x, y, hidden=args.hidden, epochs=args.epochs, l2=args.l2)
    sx, sy = span_rows(embedder, TRAIN)
    names = sorted(set(sy))
    index = {name: i for i, name in enumerate(names)}
    print(f"attributes: {len(sy)} labelled values, {len(names)} attributes", file=sys.stderr)
    head = _adam_fit(
        sx,
        np.asarray([index[a] for a in sy]),
        hidden=args.attr_hidden,
        epochs=args.attr_epochs,
        l2=args.l2,
        classes=len(names),
        balance=0.0,
    )
    gx, gy = gate_rows(embedder, TRAIN)
    gate = _adam_fit(gx, gy, hidden=args.gate_hidden, epochs=args.gate_epochs, l2=1e-3, classes=2)
    results: dict[str, Any] = {}
    for split in args.score:
        _x, _y, rows = build(embedder, (split,))
        results[split] = score(model, rows, args.at)
        vx, vy = span_rows(embedder, (split,))
        if vy:
            probs = predict(head, vx)
            sure = probs.max(axis=1) >= 0.7
            right = np.asarray(
                [names[k] == a for k, a in zip(probs.argmax(axis=1), vy, strict=True)]
            )
            results[split]["attribute_values"] = len(vy)
            results[split]["attribute_accuracy"] = round(float(right.mean()), 3)
            results[split]["attribute_sure_share"] = round(float(sure.mean()), 3)
            results[split]["attribute_sure_accuracy"] = round(float(right[sure].mean()), 3)
        vx, vy = gate_rows(embedder, (split,))
        free = predict(gate, vx)[:, 0] >= GATE_AT
        results[split]["gate_negatives_vetoed"] = round(float(free[vy == 0].mean()), 3)
        results[split]["gate_positives_vetoed"] = round(float(free[vy == 1].mean()), 3)
        print(split, results[split], file=sys.stderr)
    if not args.no_write:
        shipped = {k: v.astype(np.float16) for k, v in model.items()}
        shipped |= {f"attr_{k}": v.astype(np.float16) for k, v in head.items()}
        shipped |= {f"gate_{k}": v.astype(np.float16) for k, v in gate.items()}
        np.savez_compressed(MODEL_PATH, attr_labels=np.asarray(names), **shipped)
        RESULT.write_text(
            json.dumps(
                {
                    "benchmark": "tagger",
                    "machine": machine.machine(),
                    "trained_on": [s for s in TRAIN if (DATA / s).exists()],
                    "settings": {
                        "hidden": args.hidden,
                        "epochs": args.epochs,
                        "l2": args.l2,
                        "attribute_hidden": args.attr_hidden,
                        "attribute_epochs": args.attr_epochs,
                        "gate_hidden": args.gate_hidden,
                        "gate_epochs": args.gate_epochs,
                    },
                    "threshold": args.at,
                    "splits": results,
                    "elapsed_s": round(time.perf_counter() - started, 1),
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
