"""A query adapter for the packaged MiniLM, trained here and measured.

``python -m bench.adapter``: a linear map ``W`` on the question's vector (documents keep
their MiniLM vectors: nothing is re-embedded), ``W = I + A`` with ``A`` kept small by an
L2 pull towards the identity, trained with in-batch negatives plus each question's own
hard negatives (the non-evidence candidates the shipped hybrid path ranked first) on the
LongMemEval training questions (``bench.ranker_data``). Measured dense-only (each
question against every memory of its owner) and through the real hybrid path, on LoCoMo
(never trained on) and the held-out LongMemEval questions, beside the identity.
Seeded. Writes ``bench/results/adapter.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bench.locomo import DEFAULT_DATA
from bench.output import write
from bench.ranker import measure
from bench.ranker_data import (
    CACHE,
    DISTRACTORS,
    Asked,
    cached,
    record_lme,
    record_locomo,
    stored_vectors,
)
from memoryd.eval import locomo, longmemeval
from memoryd.eval.metrics import recall_at

SEED = 0
HARD = 10  # hard negatives per question


def _embed(name: str, texts: Sequence[str], say: Callable[[str], None]) -> np.ndarray:
    """MiniLM vectors of ``texts``, cached in ``bench/.cache/ranker/<name>.npy``."""
    path = CACHE / f"{name}.npy"
    if path.is_file():
        found: np.ndarray = np.load(path)
        if len(found) == len(texts):
            return found
    from memoryd.embedding.onnx_minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for start in range(0, len(texts), 256):
        out[start : start + 256] = embedder.embed_batch(list(texts[start : start + 256]))
        if start % 5120 == 0:
            say(f"{name}: {start}/{len(texts)} embedded")
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def lme_haystacks() -> dict[str, list[str]]:
    """Each LongMemEval question's haystack, as the ``session:turn`` ids
    ``bench.ranker_data.record_lme`` stores (the vectors are read back from its
    database, so the texts are not needed)."""
    path = longmemeval.fetch_oracle(longmemeval.default_cache_dir())
    work = longmemeval.plan(longmemeval.load_items(path), 0, DISTRACTORS)
    return {
        item.id: [
            f"{s.id}:{i}"
            for s in sessions
            for i, (_role, content) in enumerate(s.turns)
            if content.strip()
        ]
        for item, sessions in work.asked
    }


def locomo_texts() -> tuple[dict[str, str], dict[str, list[str]]]:
    """Every LoCoMo turn's stored text by ``conv:dia_id``, and each conversation's ids."""
    texts: dict[str, str] = {}
    hay: dict[str, list[str]] = {}
    for conv in locomo.load_conversations(DEFAULT_DATA):
        ids = hay[conv.name] = []
        for turn in conv.turns:
            text = locomo.turn_with_context(conv, turn)
            if text.strip():
                texts[f"{conv.name}:{turn.dia_id}"] = text
                ids.append(f"{conv.name}:{turn.dia_id}")
    return texts, hay


def _unit(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-9))


def train(
    qs: Sequence[Asked],
    vectors: Mapping[str, np.ndarray],
    *,
    l2: float = 1.0,
    tau: float = 0.05,
    epochs: int = 20,
    batch: int = 32,
    lr: float = 1e-3,
    seed: int = SEED,
) -> np.ndarray:
    """``W`` (384 x 384) trained with a multi-positive InfoNCE over the batch's
    documents (every question's evidence and hard negatives)."""
    rng = np.random.default_rng(seed)
    rated = [q for q in qs if q.query_vector is not None and any(e in vectors for e in q.evidence)]
    d = 384
    a = np.zeros((d, d))
    m, v, t = np.zeros_like(a), np.zeros_like(a), 0
    for _ in range(epochs):
        order = rng.permutation(len(rated))
        for start in range(0, len(order), batch):
            group = [rated[i] for i in order[start : start + batch]]
            docs: list[str] = []
            owner: list[int] = []
            for gi, q in enumerate(group):
                wanted = set(q.evidence)
                hard = [i for i in q.ids if i not in wanted][:HARD]
                for i in [*q.evidence, *hard]:
                    if i not in vectors:  # an evidence id no turn has (LoCoMo has a few)
                        continue
                    docs.append(i)
                    owner.append(gi if i in wanted else -1)
            dm = np.stack([vectors[i] for i in docs])  # (n_docs, d)
            qm = np.stack([q.query_vector for q in group])  # (b, d)
            w = np.eye(d) + a
            raw = qm @ w.T
            norm = np.linalg.norm(raw, axis=1, keepdims=True)
            u = raw / norm
            logits = u @ dm.T / tau
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            target = np.array(
                [[1.0 if o == gi else 0.0 for o in owner] for gi in range(len(group))]
            )
            target /= target.sum(axis=1, keepdims=True)
            g_logits = (p - target) / len(group)
            g_u = g_logits @ dm / tau
            g_raw = (g_u - u * (g_u * u).sum(axis=1, keepdims=True)) / norm
            grad = g_raw.T @ qm + l2 * a
            t += 1
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            a -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return (np.eye(d) + a).astype(np.float32)


def dense_recall(
    qs: Sequence[Asked],
    hay: Callable[[Asked], tuple[list[str], np.ndarray]],
    w: np.ndarray | None,
) -> dict[str, float]:
    """Dense-only recall@k: each question against every memory of its owner."""
    rated = [q for q in qs if q.evidence and q.query_vector is not None]
    out = {5: 0.0, 10: 0.0, 25: 0.0}
    for q in rated:
        ids, dm = hay(q)
        qv = q.query_vector if w is None else _unit(w @ q.query_vector)
        order = np.argsort(-(dm @ qv), kind="stable")
        ranked = [ids[i] for i in order[:25]]
        for k in out:
            out[k] += recall_at(ranked, q.evidence, k)
    return {f"dense R@{k}": round(v / max(1, len(rated)), 4) for k, v in out.items()}


def in_domain(
    loc: Sequence[Asked],
    vectors: Mapping[str, np.ndarray],
    hay: Callable[[Asked], tuple[list[str], np.ndarray]],
    l2: float,
) -> dict[str, float]:
    """LoCoMo dense recall of adapters each trained on the other conversations."""
    scoped = [
        dataclasses.replace(
            q,
            ids=[f"{q.group}:{i}" for i in q.ids],
            evidence=[f"{q.group}:{e}" for e in q.evidence],
        )
        for q in loc
    ]
    tallies = []
    for g in sorted({q.group for q in loc}):
        w = train([q for q in scoped if q.group != g], vectors, l2=l2, epochs=10)
        test = [q for q in loc if q.group == g]
        tallies.append((len(test), dense_recall(test, hay, w)))
    n = sum(size for size, _ in tallies)
    keys = list(tallies[0][1])
    return {f"locomo {k}": round(sum(size * t[k] for size, t in tallies) / n, 4) for k in keys}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.adapter", description=__doc__)
    parser.add_argument("--name", default="adapter")
    parser.add_argument("--l2", default="0.1,1,10")
    parser.add_argument("--hybrid", action="store_true", help="also through the hybrid path")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr)

    loc = cached("locomo", lambda: record_locomo(DEFAULT_DATA, say))
    lme = cached("lme", lambda: record_lme(0, DISTRACTORS, say))
    train_qs = [q for q in lme if q.dataset == "lme-train"]
    held = [q for q in lme if q.dataset == "lme-heldout"]

    l_hay = lme_haystacks()
    l_stored = stored_vectors(f"lme-0-{DISTRACTORS}")  # what the engine searched
    l_ids = list(l_stored)
    l_vecs = np.stack([l_stored[i] for i in l_ids])
    l_row = {i: n for n, i in enumerate(l_ids)}
    c_texts, c_hay = locomo_texts()
    c_ids = list(c_texts)
    c_vecs = _embed("locomo_turns", [c_texts[i] for i in c_ids], say)
    c_row = {i: n for n, i in enumerate(c_ids)}

    def lme_hay(q: Asked) -> tuple[list[str], np.ndarray]:
        ids = l_hay[q.qid]
        return ids, l_vecs[[l_row[i] for i in ids]]

    def loc_hay(q: Asked) -> tuple[list[str], np.ndarray]:
        ids = c_hay[q.group]
        return [i.split(":", 1)[1] for i in ids], c_vecs[[c_row[i] for i in ids]]

    rows: list[dict[str, Any]] = []

    def row(name: str, w: np.ndarray | None) -> None:
        r: dict[str, Any] = {"adapter": name}
        r |= {f"locomo {k}": v for k, v in dense_recall(loc, loc_hay, w).items()}
        r |= {f"lme {k}": v for k, v in dense_recall(held, lme_hay, w).items()}
        r["lme-train dense R@10"] = dense_recall(train_qs, lme_hay, w)["dense R@10"]
        if args.hybrid and w is None:  # the shipped path, as recorded
            r |= {f"locomo hybrid {k}": v for k, v in measure(loc, None).items() if k != "n"}
            r |= {f"lme hybrid {k}": v for k, v in measure(held, None).items() if k != "n"}
        if args.hybrid and w is not None:
            mapped = np.asarray(w)

            def query_map(vector: np.ndarray) -> np.ndarray:
                return _unit(mapped @ vector).astype(np.float32)

            hl = record_locomo(DEFAULT_DATA, say, query_map)
            hm = [
                q for q in record_lme(0, DISTRACTORS, say, query_map) if q.dataset == "lme-heldout"
            ]
            r |= {f"locomo hybrid {k}": v for k, v in measure(hl, None).items() if k != "n"}
            r |= {f"lme hybrid {k}": v for k, v in measure(hm, None).items() if k != "n"}
        rows.append(r)
        say(str(r))

    row("identity (shipped)", None)
    for l2 in (float(x) for x in args.l2.split(",")):
        row(f"linear, l2 {l2:g}", train(train_qs, l_stored, l2=l2))
    # Not a candidate (LoCoMo is what is measured): how much a linear map can close the
    # gap between LoCoMo's questions and turns at all, trained on its other conversations.
    c_vectors = {i: c_vecs[c_row[i]] for i in c_ids}
    for l2 in (0.0, 0.1, 1.0):
        rows.append(
            {"adapter": f"linear, l2 {l2:g}, trained on LoCoMo (in-domain check)"}
            | in_domain(loc, c_vectors, loc_hay, l2)
        )
        say(str(rows[-1]))
    write(args.name, rows, {"questions": {"locomo": len(loc), "lme-train": len(train_qs)}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
