"""A learned ranker over the hybrid path's candidates, trained here and measured.

``python -m bench.ranker`` records every candidate list (``bench.ranker_data``: LoCoMo,
and the LongMemEval oracle questions), trains small rankers on the LongMemEval training
questions only, and measures each, reranking the same candidates the shipped path
ranked, on LoCoMo (never trained on) and on the held-out LongMemEval questions, beside
the shipped order. Seeded: the same recordings give the same figures.

Models (plain numpy):

- ``logistic``: one weight per feature on standardised features (pointwise);
- ``pairwise``: the same linear form trained on (evidence, non-evidence) pairs of one
  question (RankNet with a linear scorer);
- ``mlp``: one hidden ReLU layer, pointwise.

The hyper-parameters are chosen by 4-fold cross-validation on the training questions
(R@10), never on LoCoMo or the held-out questions. Writes ``bench/results/ranker.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.locomo import DEFAULT_DATA
from bench.output import write
from bench.ranker_data import DISTRACTORS, FEATURES, Asked, cached, record_lme, record_locomo
from memoryd.eval.metrics import recall_at, session_hits

KS = (5, 10, 25)
SEED = 0
KINDS = ("logistic", "pairwise", "mlp")


@dataclass(frozen=True, slots=True)
class Model:
    kind: str
    mean: np.ndarray
    scale: np.ndarray
    params: tuple[np.ndarray, ...]
    columns: tuple[int, ...]

    def score(self, x: np.ndarray) -> np.ndarray:
        z = (x[:, self.columns] - self.mean) / self.scale
        if self.kind == "mlp":
            w1, b1, w2, b2 = self.params
            hidden: np.ndarray = np.maximum(z @ w1 + b1, 0)
            return np.asarray(hidden @ w2 + b2)
        (w,) = self.params
        return np.asarray(z @ w)


def _labels(q: Asked) -> np.ndarray:
    wanted = set(q.evidence)
    return np.array([i in wanted for i in q.ids], dtype=np.float32)


def usable(qs: Sequence[Asked]) -> list[Asked]:
    """Questions with evidence among the candidates and at least one other candidate."""
    return [q for q in qs if len(q.ids) > 1 and 0 < _labels(q).sum() < len(q.ids)]


def _standardise(qs: Sequence[Asked], columns: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    x = np.concatenate([q.features[:, columns] for q in qs])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    return mean, scale


def _adam(
    params: list[np.ndarray],
    grad_fn: Callable[[list[np.ndarray], np.random.Generator], list[np.ndarray]],
    steps: int,
    lr: float,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t in range(1, steps + 1):
        grads = grad_fn(params, rng)
        for i, g in enumerate(grads):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            params[i] -= lr * (m[i] / (1 - 0.9**t)) / (np.sqrt(v[i] / (1 - 0.999**t)) + 1e-8)
    return params


def fit(
    qs: Sequence[Asked],
    kind: str = "logistic",
    *,
    l2: float = 1e-3,
    hidden: int = 16,
    steps: int = 600,
    columns: tuple[int, ...] | None = None,
    seed: int = SEED,
) -> Model:
    """A ranker of ``kind`` trained on ``qs`` (full-batch Adam, seeded)."""
    if kind not in KINDS:
        raise ValueError(f"unknown ranker {kind!r}: one of {', '.join(KINDS)}")
    cols = tuple(range(len(FEATURES))) if columns is None else columns
    train = usable(qs)
    mean, scale = _standardise(train, cols)
    xs = [(q.features[:, cols] - mean) / scale for q in train]
    ys = [_labels(q) for q in train]
    rng = np.random.default_rng(seed)
    d = len(cols)
    if kind == "pairwise":
        pairs = [
            (x[y == 1][:, None, :] - x[y == 0][None, :, :]).reshape(-1, d)
            for x, y in zip(xs, ys, strict=True)
        ]
        weights = np.concatenate([np.full(len(p), 1 / len(p)) for p in pairs])
        diff = np.concatenate(pairs)

        def grad_pairs(p: list[np.ndarray], _rng: np.random.Generator) -> list[np.ndarray]:
            s = diff @ p[0]
            g = -(1 / (1 + np.exp(np.clip(s, -30, 30)))) * weights
            return [diff.T @ g / len(train) + l2 * p[0]]

        (w,) = _adam([np.zeros(d)], grad_pairs, steps, 0.05, rng)
        return Model(kind, mean, scale, (w,), cols)
    x = np.concatenate(xs)
    y = np.concatenate(ys)
    # each question weighs the same, and its evidence as much as its other candidates
    qw = np.concatenate(
        [np.where(yy == 1, 0.5 / yy.sum(), 0.5 / (len(yy) - yy.sum())) for yy in ys]
    ) / len(train)
    if kind == "logistic":
        xb = np.hstack([x, np.ones((len(x), 1))])

        def grad_lin(p: list[np.ndarray], _rng: np.random.Generator) -> list[np.ndarray]:
            s = xb @ p[0]
            g = (1 / (1 + np.exp(-np.clip(s, -30, 30))) - y) * qw
            reg = l2 * p[0]
            reg[-1] = 0.0
            return [xb.T @ g + reg]

        (w,) = _adam([np.zeros(d + 1)], grad_lin, steps, 0.05, rng)
        return Model(kind, mean, scale, (w[:-1],), cols)
    params = [
        rng.normal(0, np.sqrt(2 / d), (d, hidden)),
        np.zeros(hidden),
        rng.normal(0, np.sqrt(1 / hidden), hidden),
        np.zeros(1),
    ]

    def grad_mlp(p: list[np.ndarray], _rng: np.random.Generator) -> list[np.ndarray]:
        w1, b1, w2, b2 = p
        h = x @ w1 + b1
        a = np.maximum(h, 0)
        s = a @ w2 + b2[0]
        g = (1 / (1 + np.exp(-np.clip(s, -30, 30))) - y) * qw
        ga = np.outer(g, w2) * (h > 0)
        return [x.T @ ga + l2 * w1, ga.sum(axis=0), a.T @ g + l2 * w2, np.array([g.sum()])]

    trained = _adam(params, grad_mlp, steps, 0.01, rng)
    return Model(kind, mean, scale, tuple(trained), cols)


def reranked(q: Asked, model: Model | None) -> list[str]:
    """The candidates in the model's order (the shipped order for None; ties keep it)."""
    if model is None:
        return list(q.ids)
    s = model.score(q.features)
    order = sorted(range(len(q.ids)), key=lambda i: (-s[i], i))
    return [q.ids[i] for i in order]


def measure(qs: Sequence[Asked], model: Model | None) -> dict[str, float]:
    """Turn recall@k over questions with evidence, and session recall any@10."""
    rated = [q for q in qs if q.evidence]
    n = max(1, len(rated))
    out: dict[str, float] = {}
    ranked = [reranked(q, model) for q in rated]
    for k in KS:
        out[f"R@{k}"] = round(
            sum(recall_at(r, q.evidence, k) for r, q in zip(ranked, rated, strict=True)) / n, 4
        )
    out["S@10"] = round(
        sum(session_hits(r, q.evidence)[10] for r, q in zip(ranked, rated, strict=True)) / n, 4
    )
    out["n"] = len(rated)
    return out


def cross_validate(qs: Sequence[Asked], kind: str, folds: int = 4, **kw: Any) -> float:
    """Mean R@10 of ``kind`` over ``folds`` folds of ``qs`` (by position, seeded order)."""
    order = np.random.default_rng(SEED).permutation(len(qs))
    scores = []
    for f in range(folds):
        test = [qs[i] for i in order[f::folds]]
        train = [qs[i] for j, i in enumerate(order) if j % folds != f]
        scores.append(measure(test, fit(train, kind, **kw))["R@10"])
    return float(np.mean(scores))


#: The features that mean the same in any store: the legs' scores and the priors, not
#: the memory's length, age or the question's length (which tell a LongMemEval user
#: turn from an assistant's answer, and nothing about a LoCoMo turn).
SCORES_ONLY = tuple(
    i for i, name in enumerate(FEATURES) if name not in ("log_chars", "age", "query_words")
)


def leave_one_conversation_out(qs: Sequence[Asked], kind: str) -> dict[str, float]:
    """Recall of rankers each trained on all conversations but the one measured."""
    groups = sorted({q.group for q in qs})
    tallies = []
    for g in groups:
        test = [q for q in qs if q.group == g]
        model = fit([q for q in qs if q.group != g], kind, l2=1e-3)
        tallies.append((len(test), measure(test, model)))
    n = sum(size for size, _ in tallies)
    keys = [f"R@{k}" for k in KS] + ["S@10"]
    return {k: round(sum(size * t[k] for size, t in tallies) / n, 4) for k in keys}


GRID: dict[str, list[dict[str, Any]]] = {
    "logistic": [{"l2": v} for v in (1e-4, 1e-3, 1e-2, 1e-1)],
    "pairwise": [{"l2": v} for v in (1e-4, 1e-3, 1e-2, 1e-1)],
    "mlp": [{"l2": v, "hidden": h} for v in (1e-3, 1e-2) for h in (8, 32)],
}


def load(say: Callable[[str], None]) -> tuple[list[Asked], list[Asked], list[Asked]]:
    """LoCoMo, the LongMemEval training and held-out questions (recorded once)."""
    loc = cached("locomo", lambda: record_locomo(DEFAULT_DATA, say))
    lme = cached("lme", lambda: record_lme(0, DISTRACTORS, say))
    train = [q for q in lme if q.dataset == "lme-train"]
    held = [q for q in lme if q.dataset == "lme-heldout"]
    return loc, train, held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ranker", description=__doc__)
    parser.add_argument("--name", default="ranker")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr)

    loc, train, held = load(say)
    rows: list[dict[str, Any]] = []

    def row(name: str, model: Model | None, chosen: dict[str, Any]) -> None:
        r: dict[str, Any] = {"ranker": name}
        r |= {f"locomo {k}": v for k, v in measure(loc, model).items() if k != "n"}
        # (session recall is 1 for nearly every LongMemEval question: ten distractor
        # sessions are easy to tell apart)
        r |= {f"lme {k}": v for k, v in measure(held, model).items() if k not in ("n", "S@10")}
        r["lme-train R@10"] = measure(train, model)["R@10"]
        r["params"] = chosen
        if model is not None and model.kind != "mlp":  # what it learned, per feature
            names = [FEATURES[c] for c in model.columns]
            learned = zip(names, model.params[0], strict=True)
            r["weights"] = {n: round(float(w), 3) for n, w in learned}
        rows.append(r)

    row("shipped order", None, {})
    for features, cols in (("all", None), ("scores only", SCORES_ONLY)):
        for kind, grid in GRID.items():
            cv = [(cross_validate(train, kind, columns=cols, **kw), i) for i, kw in enumerate(grid)]
            best = grid[max(cv)[1]]
            say(f"{kind} ({features}): cv R@10 {[round(c, 4) for c, _ in cv]} -> {best}")
            model = fit(train, kind, columns=cols, **best)
            row(f"{kind}, {features}", model, best | {"cv R@10": round(max(cv)[0], 4)})
    # Not a candidate to ship (LoCoMo is what is measured), and not a ceiling (no grid,
    # no MLP): whether these features order LoCoMo's candidates better when trained on
    # LoCoMo itself.
    for kind in ("logistic", "pairwise"):
        r: dict[str, Any] = {"ranker": f"{kind}, all, trained on LoCoMo (in-domain check)"}
        r |= {f"locomo {k}": v for k, v in leave_one_conversation_out(loc, kind).items()}
        rows.append(r | {"params": {"l2": 1e-3}})
    write(
        args.name,
        rows,
        {
            "features": list(FEATURES),
            "questions": {"locomo": len(loc), "lme-train": len(train), "lme-heldout": len(held)},
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
