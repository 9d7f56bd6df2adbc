"""Train the question classifier: which attribute of the user a question asks about.

``python -m bench.train_questions`` embeds ``bench/data/selfq/train*.jsonl`` (questions
labelled with an attribute of the schema, ``overview`` or ``none``, written by a
helper who never read the retrieval code) with the packaged MiniLM, fits the same
softmax regression as the attribute classifier (``bench.train_attributes.fit``) on
both MiniLM's vectors and the fast query encoder's (a new question arrives as the
latter), and
writes ``memoryd/engine/question_model.npz``. It scores the questions of the dev
personas (``bench/data/selfq/dev.jsonl``, another author, never trained on): the
asked attribute, their overview questions, and their unrelated questions as ``none``;
and writes ``bench/results/questions.json``. The test personas are never read here.
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
from bench.train_attributes import fit
from memoryd.embedding.locate import local_model_files
from memoryd.embedding.onnx_minilm import MiniLMEmbedder
from memoryd.embedding.query_encoder import QueryEncoder
from memoryd.engine.asked import MODEL_PATH, NONE, OVERVIEW, QuestionModel

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data" / "selfq"
RESULT = ROOT / "results" / "questions.json"


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def persona_questions(name: str) -> list[dict[str, Any]]:
    """Every question of a persona split as ``{"text", "attribute", "register"}``:
    self-questions, overview questions, and unrelated ones labelled ``none``."""
    out: list[dict[str, Any]] = []
    for persona in load(name):
        for q in persona["questions"]:
            out.append(
                {"text": q["ask"], "attribute": q["attribute"], "register": persona["register"]}
            )
        for text in persona.get("unrelated", []):
            out.append({"text": text, "attribute": NONE, "register": persona["register"]})
    return out


def decided(model: QuestionModel, vectors: np.ndarray) -> list[list[str]]:
    """What retrieval acts on: the attributes asked (or overview), or none below the
    thresholds."""
    return [model.asked(v).describe() or [NONE] for v in vectors]


def _fast(texts: list[str], fallback: np.ndarray) -> np.ndarray:
    """The fast query encoder's vector of each text (the model's where it has none)."""
    files = local_model_files()
    assert files is not None
    encoder = QueryEncoder(files[1])
    out = fallback.copy()
    for i, text in enumerate(texts):
        vector = encoder.encode(text)
        if vector is not None:
            out[i] = vector
    return out


def main() -> int:
    started = time.perf_counter()
    train = load("train.jsonl") + load("train2.jsonl")  # two authors; dev is a third
    dev = persona_questions("dev.jsonl")
    labels = sorted({r["attribute"] for r in train})
    index = {name: i for i, name in enumerate(labels)}
    embedder = MiniLMEmbedder()
    xt = embedder.embed_batch([r["text"] for r in train]).astype(np.float64)
    xd = embedder.embed_batch([r["text"] for r in dev]).astype(np.float64)
    yt = np.array([index[r["attribute"]] for r in train])
    # A new question reaches the classifier as the fast query encoder's vector, a
    # repeated or remote one as the model's: it learns from both.
    ft = _fast([r["text"] for r in train], xt)
    fd = _fast([r["text"] for r in dev], xd).astype(np.float32)
    w, b = fit(np.vstack([xt, ft]), np.concatenate([yt, yt]), len(labels))
    np.savez_compressed(MODEL_PATH, weights=w.astype(np.float16), bias=b, labels=np.array(labels))
    model = QuestionModel(MODEL_PATH)
    chosen = decided(model, xd.astype(np.float32))
    pred = [c[0] for c in chosen]
    gold = [r["attribute"] for r in dev]
    selfq = [i for i, g in enumerate(gold) if g not in (NONE, OVERVIEW)]
    top = [labels[i] for i in (xd @ w + b).argmax(axis=1)]
    nn = [train[i]["attribute"] for i in (xd @ xt.T).argmax(axis=1)]

    def share(pairs: list[bool]) -> float:
        return round(sum(pairs) / len(pairs), 3) if pairs else 0.0

    fast = decided(model, fd)
    rows = {
        "self-questions: first attribute asked": share([pred[i] == gold[i] for i in selfq]),
        "self-questions: first attribute asked, fast query vector": share(
            [fast[i][0] == gold[i] for i in selfq]
        ),
        "unrelated questions asking nothing, fast query vector": share(
            [fast[i][0] == NONE for i, g in enumerate(gold) if g == NONE]
        ),
        "self-questions: among the attributes asked": share([gold[i] in chosen[i] for i in selfq]),
        "self-questions: top class": share([top[i] == gold[i] for i in selfq]),
        "self-questions: nearest labelled question": share([nn[i] == gold[i] for i in selfq]),
        "overview questions recognised": share(
            [p == OVERVIEW for p, g in zip(pred, gold, strict=True) if g == OVERVIEW]
        ),
        "unrelated questions asking nothing": share(
            [p == NONE for p, g in zip(pred, gold, strict=True) if g == NONE]
        ),
    }
    registers: dict[str, list[bool]] = {}
    for i in selfq:
        registers.setdefault(dev[i]["register"], []).append(pred[i] == gold[i])
    confusions = Counter((gold[i], pred[i]) for i in range(len(dev)) if gold[i] != pred[i])
    out = {
        "benchmark": "questions",
        "machine": machine.machine(),
        "train": len(train),
        "dev_questions": len(dev),
        "labels": len(labels),
        "rows": rows,
        "per_register": {k: share(v) for k, v in sorted(registers.items())},
        "top_confusions": [
            {"gold": g, "predicted": p, "n": n} for (g, p), n in confusions.most_common(15)
        ],
        "elapsed_s": round(time.perf_counter() - started, 2),
    }
    RESULT.write_text(json.dumps(out, indent=2) + "\n")
    for name, value in rows.items():
        print(f"{name:48} {value:.3f}")
    print(f"weights: {MODEL_PATH} ({MODEL_PATH.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
