"""The learned ranker and the query adapter benches: recording the real hybrid path,
training (seeded), and measuring recall on what was recorded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import adapter, ranker
from bench.ranker_data import FEATURES, Asked, _weights, features_of, recording
from tests.conftest import add, make_engine
from tests.embedders import fixed_resolver


def test_recording_sees_what_the_hybrid_path_ranked_and_leaves_the_engine_as_it_was(
    tmp_path: Path,
) -> None:
    eng = make_engine(tmp_path / "d", {}, resolver=fixed_resolver("hash", 64))
    try:
        add(eng, "alice", "the cat sat on the warm mat")
        add(eng, "alice", "quarterly revenue grew strongly")
        add(eng, "alice", "my cat likes the garden")
        eng.drain()
        shipped = [h.memory.id for h in eng.preview("alice", "cat mat", strategy="hybrid").hits]
        with recording(eng) as seen:
            hits = eng.preview("alice", "cat mat", strategy="hybrid", limit=100).hits
        ids = [h.memory.id for h in hits]
        assert ids == shipped  # recording changes nothing it sees
        assert seen.vector is not None
        assert seen.legs
        assert seen.final
        x = features_of(seen, ids, "cat mat", _weights(eng))
        assert x.shape == (len(ids), len(FEATURES))
        col = {name: i for i, name in enumerate(FEATURES)}
        assert x[0, col["fts_in"]] == 1.0  # the mat turn has both words
        assert x[0, col["default_rank"]] == 1.0  # first in the shipped order
        assert list(x[:, col["default"]]) == sorted(x[:, col["default"]], reverse=True)
        # the spies are gone: the retriever's own methods answer again
        assert "_fuse" not in vars(eng.retriever)
        assert "_in_context" not in vars(eng.retriever)
        assert "_prepare_vector" not in vars(eng.retriever)
        # a query map changes the vector the legs search with, not the stored one
        with recording(eng, query_map=lambda v: -v) as flipped:
            eng.preview("alice", "cat mat", strategy="hybrid", limit=100)
        assert flipped.vector is not None
        assert dict(flipped.legs[1]) != dict(seen.legs[1])
    finally:
        eng.close()


def _synthetic(n: int, seed: int, signal: int) -> list[Asked]:
    """Questions whose evidence is marked by feature ``signal``; the shipped order is
    random, so only a ranker that finds the signal puts evidence first."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        k = 20
        x = rng.normal(size=(k, len(FEATURES))).astype(np.float32)
        good = rng.choice(k, size=2, replace=False)
        x[good, signal] += 3.0
        ids = [f"t{i}" for i in range(k)]
        out.append(Asked("syn", "g", f"q{q}", "q", ids, x, [ids[g] for g in good], ids, [], None))
    return out


def test_each_ranker_learns_a_planted_signal_and_the_same_data_gives_the_same_weights() -> None:
    train, test = _synthetic(60, 1, signal=3), _synthetic(40, 2, signal=3)
    shipped = ranker.measure(test, None)["R@5"]
    for kind in ("logistic", "pairwise", "mlp"):
        model = ranker.fit(train, kind, steps=200)
        assert ranker.measure(test, model)["R@5"] > shipped + 0.4, kind
        again = ranker.fit(train, kind, steps=200)
        for a, b in zip(model.params, again.params, strict=True):
            assert np.array_equal(a, b), kind
    with pytest.raises(ValueError, match="unknown ranker"):
        ranker.fit(train, "forest")


def test_recall_is_counted_over_all_evidence_even_outside_the_candidates() -> None:
    ids = ["a", "b", "c"]
    x = np.zeros((3, len(FEATURES)), dtype=np.float32)
    q = Asked("syn", "g", "q", "q", ids, x, ["c", "zz"], ids, ["c"], None)
    found = ranker.measure([q], None)
    assert found["R@5"] == 0.5  # "zz" was never a candidate: it counts as missed
    assert found["n"] == 1


def test_the_adapter_learns_a_planted_map_and_is_seeded() -> None:
    """Questions are a fixed rotation of their evidence vectors: the identity ranks them
    poorly, the trained map recovers the evidence."""
    rng = np.random.default_rng(0)
    d = 384
    rot = np.linalg.qr(rng.normal(size=(d, d)))[0]
    docs = {f"d{i}": adapter._unit(rng.normal(size=d)) for i in range(800)}
    names = list(docs)

    def ask(i: int, split: str) -> Asked:
        ev = names[i]
        qv = adapter._unit(rot @ docs[ev] + 0.1 * rng.normal(size=d))
        others = [n for n in names if n != ev][:12]
        return Asked(split, "g", f"q{i}", "q", [*others, ev], np.zeros((13, 1)), [ev], [], [], qv)

    train = [ask(i, "train") for i in range(700)]
    test = [ask(i, "test") for i in range(700, 800)]
    matrix = np.stack([docs[n] for n in names])

    def hay(q: Asked) -> tuple[list[str], np.ndarray]:
        return names, matrix

    before = adapter.dense_recall(test, hay, None)["dense R@10"]
    w = adapter.train(train, docs, l2=0.01, epochs=30, lr=5e-3)
    after = adapter.dense_recall(test, hay, w)["dense R@10"]
    assert before < 0.2  # chance: the rotation hides the evidence
    assert after > 0.4
    again = adapter.train(train, docs, l2=0.01, epochs=30, lr=5e-3)
    assert np.array_equal(w, again)
