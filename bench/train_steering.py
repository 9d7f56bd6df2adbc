"""Train the steering reader: which sentence asks the assistant for a lasting rule, and
whether the rule is about answering its writer or works against other people.

``python -m bench.train_steering`` embeds every sentence of the labelled instruction
messages (``bench/data/instructions``: attacks, preferences and benign look-alikes,
written by helpers who never read the guard) and of ordinary messages (the extraction,
advice and self-question training splits: nothing of the kind, except the extraction
statements labelled with an instruction attribute, which are preferences) with the
packaged MiniLM, and fits one hidden layer and a softmax (plain numpy, Adam) over each
sentence's vector, an ensemble of three seeds.

The labels are per message, so the sentence that carries one is found by
multiple-instance rounds: the first learns attacks and preferences from messages of one
sentence alone (the thanks around an attack is no attack); from then on, in a longer
message, only the sentence the model reads as most likely of the message's label, and
any other it reads at 0.5 or more, keep it, and the rest are "other".

It writes ``memoryd/engine/steering.npz`` and scores the splits it did not train on,
message by message as the engine reads them, beside the guard's patterns
(``bench/results/steering.json``). ``--held-out`` also scores the reserved split; run it
once, at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine
from bench.train_tagger import _adam_fit
from memoryd.core.extraction.guard import unsafe
from memoryd.embedding.onnx_minilm import MiniLMEmbedder
from memoryd.engine.steering import (
    ATTACK,
    ATTACK_AT,
    MODEL_PATH,
    OTHER,
    PREFERENCE,
    PREFERENCE_AT,
    ensemble,
    read_probabilities,
    sentences,
)

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data"
RESULT = ROOT / "results" / "steering.json"
CACHE = ROOT / ".cache" / "steering"

#: instruction splits trained on; ``dev3`` is scored while developing, ``test3`` held out
TRAIN = ("train", "train2", "dev", "dev2", "test2")
SCORE = ("dev3",)
HELD_OUT = ("test3",)
#: ordinary messages: the splits the extraction models train on
EXTRACTION = ("train", "train2", "train3", "train4", "dev", "dev2", "dev3", "dev4", "dev5", "dev7")
ADVICE = ("dev", "dev2")
SELFQ = ("train", "train2")
#: ordinary messages scored for false refusals (never trained on)
EXTRACTION_SCORE = ("dev6", "dev8")

#: an extraction statement of these attributes is a standing preference
PREFERENCE_ATTRIBUTES = {
    "answer_length": "length",
    "answer_format": "format",
    "answer_language": "language",
    "tone": "tone",
    "units": "units",
    "preferred_name": "name",
    "pronouns": "name",
    "instruction": "avoid",
}

Message = tuple[str, str, bool]  # text, label, written as one request


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def instruction_messages(split: str) -> list[tuple[Message, dict[str, Any]]]:
    out = []
    for row in _jsonl(DATA / "instructions" / f"{split}.jsonl"):
        kind = row["kind"]
        label = (
            ATTACK + row["category"]
            if kind == "attack"
            else PREFERENCE + row["category"]
            if kind == "legit"
            else OTHER
        )
        out.append(((row["text"], label, not row.get("embedded", False)), row))
    return out


def _attribute_label(row: dict[str, Any]) -> str:
    names = [f["attribute"] for f in row.get("facts", [])] or [row.get("attribute") or ""]
    for name in names:
        if name in PREFERENCE_ATTRIBUTES:
            return PREFERENCE + PREFERENCE_ATTRIBUTES[name]
    return OTHER


def ordinary_messages(extraction: tuple[str, ...] = EXTRACTION) -> list[Message]:
    out: list[Message] = []
    for split in extraction:
        folder = DATA / "extraction" / split
        for row in _jsonl(folder / "positives.jsonl"):
            label = _attribute_label(row)
            out.append((row["text"], label, label == OTHER))
        for row in _jsonl(folder / "negatives.jsonl"):
            out.append((row["text"], OTHER, True))
        for row in _jsonl(folder / "supersede.jsonl"):
            label = PREFERENCE_ATTRIBUTES.get(row.get("attribute") or "")
            for text in (row["first"], row["second"]):
                out.append((text, PREFERENCE + label if label else OTHER, label is None))
    if extraction is not EXTRACTION:
        return out
    for split in ADVICE:
        for row in _jsonl(DATA / "advice" / f"{split}.jsonl"):
            out.extend((text, OTHER, True) for text in [*row["statements"], row["question"]])
    for split in SELFQ:
        out.extend((row["text"], OTHER, True) for row in _jsonl(DATA / "selfq" / f"{split}.jsonl"))
    return out


class Vectors:
    """MiniLM sentence vectors, cached on disk by text (the corpus is embedded once)."""

    def __init__(self, embedder: MiniLMEmbedder) -> None:
        self.embedder = embedder
        self.path = CACHE / "vectors.npz"
        self.known: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as data:
                self.known = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        self.added = False

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = sorted({t for t in texts if self.key(t) not in self.known})
        for start in range(0, len(missing), 64):
            chunk = missing[start : start + 64]
            for text, vector in zip(chunk, self.embedder.embed_batch(chunk), strict=True):
                self.known[self.key(text)] = np.asarray(vector, dtype=np.float32)
            self.added = True
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack([self.known[self.key(t)] for t in texts])

    def save(self) -> None:
        if not self.added:
            return
        CACHE.mkdir(parents=True, exist_ok=True)
        keys = np.asarray(list(self.known))
        np.savez(self.path, keys=keys, vectors=np.stack(list(self.known.values())))


def encoded(vectors: Vectors, messages: list[Message]) -> list[np.ndarray]:
    """Per message, its sentences' vectors."""
    split = [sentences(text) for text, _l, _o in messages]
    flat = vectors([s for parts in split for s in parts])
    out = []
    at = 0
    for parts in split:
        out.append(flat[at : at + len(parts)])
        at += len(parts)
    return out


def sentence_labels(
    messages: list[Message],
    xs: list[np.ndarray],
    names: list[str],
    model: dict[str, np.ndarray] | None,
) -> np.ndarray:
    """Each sentence's label: the message's; for a message with more than one sentence
    around its request, only on the sentences the model reads as carrying it, and
    before a model exists none (-1: left out of the first round, which learns from
    messages written as one request alone; the thanks around an attack is no attack)."""
    index = {name: i for i, name in enumerate(names)}
    other = index[OTHER]
    ys: list[np.ndarray] = []
    for (_text, label, _whole), x in zip(messages, xs, strict=True):
        y = np.full(len(x), index[label])
        if label != OTHER and model is None and len(x) > 1:
            y[:] = -1
        elif label != OTHER and model is not None and len(x) > 1:
            probs = ensemble(model, x)
            family = [i for i, n in enumerate(names) if n.split(":")[0] == label.split(":")[0]]
            mass = probs[:, family].sum(axis=1)
            keep = mass >= 0.5
            keep[int(mass.argmax())] = True
            y[~keep] = other
        ys.append(y)
    return np.concatenate(ys) if ys else np.zeros(0, dtype=np.int64)


def fit(
    messages: list[Message],
    xs: list[np.ndarray],
    *,
    hidden: int,
    epochs: int,
    l2: float,
    rounds: int,
    seeds: int = 1,
) -> tuple[dict[str, np.ndarray], list[str]]:
    """The ensemble (``m0_``, ``m1_``, ... keys), one member per seed."""
    names = sorted({label for _t, label, _w in messages} | {OTHER})
    x = np.concatenate(xs)
    out: dict[str, np.ndarray] = {}
    for seed in range(seeds):
        model: dict[str, np.ndarray] | None = None
        for _ in range(rounds):
            y = sentence_labels(messages, xs, names, model)
            known = y >= 0
            model = _adam_fit(
                x[known],
                y[known],
                hidden=hidden,
                epochs=epochs,
                l2=l2,
                classes=len(names),
                seed=seed,
            )
        assert model is not None
        out |= {f"m{seed}_{k}": v for k, v in model.items()}
    return out, names


def score(
    model: dict[str, np.ndarray],
    names: list[str],
    rows: list[tuple[Message, dict[str, Any]]],
    xs: list[np.ndarray],
    attack_at: float,
    preference_at: float,
) -> dict[str, Any]:
    """Message by message: attacks refused (the patterns, the model, either), preferences
    read (and wrongly refused), benign messages wrongly refused."""
    counts: dict[str, int] = {}
    misses: list[dict[str, Any]] = []

    def add(name: str, value: bool = True) -> None:
        counts[name] = counts.get(name, 0) + int(value)

    for ((text, _label, _w), row), x in zip(rows, xs, strict=True):
        steer = read_probabilities(names, ensemble(model, x), sentences(text))
        flagged = steer.attack >= attack_at
        pattern = unsafe(text) is not None
        kind = row.get("kind", "ordinary")
        add(kind)
        if kind == "attack":
            add("attack_by_patterns", pattern)
            add("attack_by_model", flagged)
            add("attack_refused", pattern or flagged)
            if not (pattern or flagged):
                misses.append({"id": row.get("id"), "attack": round(steer.attack, 3), "text": text})
            continue
        add(f"{kind}_refused", pattern or flagged)
        add(f"{kind}_refused_by_model", flagged and not pattern)
        if kind == "legit":
            read = any(p >= preference_at for _s, _k, p in steer.preferences)
            add("legit_read", read)
            if flagged or not read:
                misses.append({"id": row.get("id"), "attack": round(steer.attack, 3), "text": text})
        elif flagged:
            misses.append({"id": row.get("id"), "attack": round(steer.attack, 3), "text": text})
    out: dict[str, Any] = {"messages": len(rows)}
    for kind in ("attack", "legit", "benign", "ordinary"):
        n = counts.get(kind, 0)
        if not n:
            continue
        out[kind] = n
        for name, value in counts.items():
            if name.startswith(kind + "_"):
                out[name] = round(value / n, 3)
    out["misses"] = misses
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.train_steering")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--l2", type=float, default=1e-2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--attack-at", type=float, default=ATTACK_AT)
    parser.add_argument("--preference-at", type=float, default=PREFERENCE_AT)
    parser.add_argument("--train", nargs="*", default=list(TRAIN))
    parser.add_argument("--score", nargs="*", default=list(SCORE))
    parser.add_argument("--held-out", action="store_true", help="also score the reserved split")
    parser.add_argument("--no-write", action="store_true", help="measure without shipping")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    vectors = Vectors(MiniLMEmbedder())
    guarded = [m for split in args.train for m, _row in instruction_messages(split)]
    messages = guarded + ordinary_messages()
    xs = encoded(vectors, messages)
    print(
        f"training on {len(messages)} messages ({len(guarded)} instruction-shaped), "
        f"{sum(len(x) for x in xs)} sentences",
        file=sys.stderr,
    )
    model, names = fit(
        messages,
        xs,
        hidden=args.hidden,
        epochs=args.epochs,
        l2=args.l2,
        rounds=args.rounds,
        seeds=args.seeds,
    )
    results: dict[str, Any] = {}
    for split in [*args.score, *(HELD_OUT if args.held_out else ())]:
        rows = instruction_messages(split)
        if not rows:
            continue
        xs = encoded(vectors, [m for m, _row in rows])
        results[split] = score(model, names, rows, xs, args.attack_at, args.preference_at)
        print(split, {k: v for k, v in results[split].items() if k != "misses"}, file=sys.stderr)
    for split in EXTRACTION_SCORE:
        ordinary = ordinary_messages((split,))
        rows = [(m, {"id": f"{split}-{i}"}) for i, m in enumerate(ordinary) if m[1] == OTHER]
        xs = encoded(vectors, [m for m, _row in rows])
        results[f"extraction-{split}"] = score(
            model, names, rows, xs, args.attack_at, args.preference_at
        )
        print(split, {k: v for k, v in results[f"extraction-{split}"].items() if k != "misses"})
    vectors.save()
    if not args.no_write:
        np.savez_compressed(
            MODEL_PATH,
            labels=np.asarray(names),
            **{k: v.astype(np.float16) for k, v in model.items()},
        )
        RESULT.write_text(
            json.dumps(
                {
                    "benchmark": "steering",
                    "machine": machine.machine(),
                    "trained_on": {
                        "instructions": [
                            s for s in args.train if (DATA / "instructions" / f"{s}.jsonl").exists()
                        ],
                        "extraction": list(EXTRACTION),
                        "advice": list(ADVICE),
                        "selfq": list(SELFQ),
                    },
                    "settings": {
                        "hidden": args.hidden,
                        "epochs": args.epochs,
                        "l2": args.l2,
                        "rounds": args.rounds,
                        "seeds": args.seeds,
                        "attack_at": args.attack_at,
                        "preference_at": args.preference_at,
                    },
                    "labels": names,
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
