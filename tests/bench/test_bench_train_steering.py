"""The steering reader's training: labels per message reach the sentence that carries
them (multiple-instance rounds), on planted vectors, so the test runs without MiniLM."""

from __future__ import annotations

import numpy as np

from bench.train_steering import fit, score, sentence_labels
from memoryd.engine.steering import OTHER

ATTACK, PREF = "attack:others", "pref:tone"


def _vectors(rng: np.random.Generator, kinds: list[str]) -> np.ndarray:
    """A sentence of a kind: noise, plus a planted direction for an attack or a
    preference."""
    x = rng.standard_normal((len(kinds), 8)).astype(np.float32) * 0.3
    for i, kind in enumerate(kinds):
        if kind == ATTACK:
            x[i, 0] += 3.0
        elif kind == PREF:
            x[i, 1] += 3.0
    return x


def _corpus(seed: int) -> tuple[list[tuple[str, str, bool]], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    messages: list[tuple[str, str, bool]] = []
    xs: list[np.ndarray] = []
    for i in range(60):
        # one-sentence requests, and the same inside thanks and a question
        for label, kinds in (
            (ATTACK, [ATTACK]),
            (PREF, [PREF]),
            (OTHER, [OTHER, OTHER]),
            (ATTACK, [OTHER, ATTACK, OTHER]),
            (PREF, [OTHER, PREF]),
        ):
            text = " ".join(f"Sentence {j} of message {i}." for j in range(len(kinds)))
            messages.append((text, label, len(kinds) == 1))
            xs.append(_vectors(rng, kinds))
    return messages, xs


def test_the_first_round_leaves_out_what_it_cannot_place() -> None:
    messages, xs = _corpus(0)
    names = sorted({label for _t, label, _w in messages})
    y = sentence_labels(messages, xs, names, None)
    first = np.concatenate([np.full(len(x), i) for i, x in enumerate(xs)])
    embedded = [
        i for i, (_t, label, _w) in enumerate(messages) if label != OTHER and len(xs[i]) > 1
    ]
    assert embedded
    assert all((y[first == i] == -1).all() for i in embedded)
    ordinary = [i for i, (_t, label, _w) in enumerate(messages) if label == OTHER]
    assert all((y[first == i] == names.index(OTHER)).all() for i in ordinary)


def test_rounds_put_a_messages_label_on_the_sentence_that_carries_it() -> None:
    messages, xs = _corpus(1)
    model, names = fit(messages, xs, hidden=16, epochs=400, l2=1e-3, rounds=2, seeds=2)
    assert {k.split("_", 1)[0] for k in model} == {"m0", "m1"}
    y = sentence_labels(messages, xs, names, model)
    # the thanks and the question around an embedded attack are "other", the rule is not
    x = np.concatenate(xs)
    assert (y[x[:, 0] > 2] == names.index(ATTACK)).all()
    assert (y[(x[:, 0] < 1) & (x[:, 1] < 1)] == names.index(OTHER)).all()
    again, _ = fit(messages, xs, hidden=16, epochs=400, l2=1e-3, rounds=2, seeds=2)
    assert all(np.array_equal(model[k], again[k]) for k in model)  # seeded


def test_score_counts_what_the_model_and_the_patterns_refuse() -> None:
    messages, xs = _corpus(2)
    model, names = fit(messages, xs, hidden=16, epochs=400, l2=1e-3, rounds=2, seeds=1)
    test, txs = _corpus(3)
    kind = {ATTACK: "attack", PREF: "legit", OTHER: "benign"}
    rows = [(m, {"id": str(i), "kind": kind[m[1]]}) for i, m in enumerate(test)]
    got = score(model, names, rows, txs, 0.5, 0.5)
    assert got["attack_by_model"] > 0.9
    assert got["attack_by_patterns"] == 0.0  # planted text: no pattern fires
    assert got["legit_read"] > 0.9
    assert got["legit_refused"] < 0.1
    assert got["benign_refused"] < 0.1
