"""The fast query encoder's trainer (bench/train_query_encoder.py) and the query-path
bench's pure parts (bench/query_path.py), on small planted data."""

from __future__ import annotations

import json
import threading

import numpy as np

from bench import query_path
from bench import train_query_encoder as trainer
from memoryd.embedding.query_encoder import quantize


def test_batches_take_the_rows_token_ids_in_order() -> None:
    batches = trainer.Batches([[1, 2, 3], [], [7], [4, 5]])
    tokens, owner = batches.take(np.array([3, 0, 2]))
    assert tokens.tolist() == [4, 5, 1, 2, 3, 7]
    assert owner.tolist() == [0, 0, 1, 1, 1, 2]
    tokens, owner = batches.take(np.array([1]))  # an empty text reads as one padding id
    assert (tokens.tolist(), owner.tolist()) == ([0], [0])


def _planted(seed: int = 0) -> tuple[trainer.Batches, np.ndarray, np.ndarray]:
    """Texts of random word pieces whose targets come from a hidden table."""
    rng = np.random.default_rng(seed)
    vocab, dims = 60, 384
    hidden = rng.standard_normal((vocab, dims)).astype(np.float32)
    ids = [list(rng.integers(1, vocab, rng.integers(2, 7))) for _ in range(600)]
    targets = np.stack([hidden[r].mean(axis=0) for r in ids])
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    start = rng.standard_normal((vocab, dims)).astype(np.float32)
    return trainer.Batches(ids), targets.astype(np.float32), start


def test_fit_learns_a_planted_table_and_the_student_reads_it_back() -> None:
    batches, targets, start = _planted()
    rows = np.arange(len(targets))
    train, test = rows[:500], rows[500:]
    before = trainer.cosine(
        {"table": start, "proj": np.eye(384, dtype=np.float32), "bias": np.zeros(384)},
        batches,
        targets,
        test,
    )

    def fitted() -> dict[str, np.ndarray]:
        return trainer.fit(
            batches,
            targets,
            train,
            start,
            epochs=30,
            lr=0.05,
            contrast=0.1,
            temperature=0.05,
            seed=0,
            say=lambda _m: None,
            hidden=16,
        )

    params = fitted()
    after = trainer.cosine(params, batches, targets, test)
    assert before < 0.3
    assert after > 0.9, after  # texts never trained on, from the same hidden table
    again = fitted()
    assert np.array_equal(again["table"], params["table"])  # seeded: the same weights
    stored = quantize(params)
    assert {"table", "scale", "proj", "bias", "w1", "c1", "w2"} == set(stored)


def test_the_corpus_keeps_no_evaluation_split() -> None:
    texts = trainer.corpus(None)
    assert len(texts) > 5000
    assert len(texts) == len(set(texts))
    # the questions the benches measure with are never learned from
    data = query_path.REPO / "bench" / "data"
    lines = (data / "relevance" / "queries.jsonl").read_text().splitlines()
    measured = [json.loads(line)["query"] for line in lines if line.strip()]
    assert not set(measured) & set(texts)
    assert "dev" not in trainer.SELFQ
    assert "test" not in trainer.SELFQ
    assert 0.02 < sum(trainer.held_out(t) for t in texts) / len(texts) < 0.1


def test_the_competition_thread_embeds_until_stopped() -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def embed(batch: list[str]) -> None:
        with lock:
            seen.append(len(batch))

    with query_path._Competition(embed) as busy:
        pass
    assert busy.batches == len(seen) > 0
    assert set(seen) == {32}


def test_rows_name_every_part_and_both_paths() -> None:
    part = {"p50_ms": 1.0, "p99_ms": 2.0, "mean_ms": 1.1}
    phases = dict.fromkeys(("tokenizer", "onnx_run", "pooling", "fast"), part)
    per = {
        "phases": phases,
        "phases_under_background_embedding": phases,
        "fast": {"retrieval": part},
        "model": {"retrieval": part},
    }
    rows = query_path._rows({"sizes": {"1000": per}})
    assert [r["part"] for r in rows] == [
        "tokenizer",
        "onnx_run",
        "pooling",
        "fast",
        "whole retrieval, fast path",
        "whole retrieval, model path",
    ]
    assert all(r["memories"] == 1000 for r in rows)
