"""Single texts asked for at the same time share one run of the local model."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from memoryd.embedding import EmbeddingError, local_model_files
from memoryd.embedding.coalesce import Coalescer
from memoryd.embedding.onnx_minilm import MiniLMEmbedder

CALLERS = 12
TEXTS = [f"does the user like hobby number {i} on weekends?" for i in range(CALLERS)]
#: Generous: only a deadlock comes near it.
JOIN_S = 120.0


class HeldRuns:
    """The real model's batch function, with its first run held until every other
    caller is waiting (so the test does not depend on thread timing) and every run's
    size recorded."""

    def __init__(self, run: object, expect_waiting: int) -> None:
        self.run = run
        self.sizes: list[int] = []
        self.expect = expect_waiting
        self.coalescer: Coalescer | None = None

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if not self.sizes:
            deadline = time.monotonic() + JOIN_S
            assert self.coalescer is not None
            while self.coalescer.waiting < self.expect and time.monotonic() < deadline:
                time.sleep(0.002)
        self.sizes.append(len(texts))
        result: np.ndarray = self.run(texts)  # type: ignore[operator]
        return result


def _concurrently(embed: object, texts: list[str]) -> dict[int, object]:
    out: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            out[i] = embed(texts[i])  # type: ignore[operator]
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_S)
    assert not any(t.is_alive() for t in threads), "a caller never returned"
    return out


@pytest.mark.skipif(local_model_files() is None, reason="pip install 'memoryd[local]'")
def test_concurrent_queries_share_a_run_and_get_their_own_vectors() -> None:
    model = MiniLMEmbedder()
    alone = {i: model.embed_batch([t])[0] for i, t in enumerate(TEXTS)}
    held = HeldRuns(model._embed_many, expect_waiting=CALLERS - 1)
    coalescer = held.coalescer = Coalescer(held)  # the default: one run at a time
    out = _concurrently(coalescer.embed, TEXTS)
    # the first caller ran alone; everyone who arrived meanwhile shared the next run
    assert held.sizes == [1, CALLERS - 1]
    assert coalescer.runs == 2
    assert coalescer.texts == CALLERS
    for i, vector in out.items():
        assert isinstance(vector, np.ndarray)
        assert vector.shape == (384,)
        assert float(vector @ alone[i]) > 0.9999, TEXTS[i]
        assert vector.base is None  # a copy: no cached query keeps a whole batch alive
    assert coalescer.waiting == 0


@pytest.mark.skipif(local_model_files() is None, reason="pip install 'memoryd[local]'")
def test_a_lone_query_runs_at_once_through_the_embedder() -> None:
    model = MiniLMEmbedder()
    vector = model.embed_batch(["where does the user live?"])
    assert vector.shape == (1, 384)
    assert model._single.runs == 1
    assert model.embed_batch(["a", "b"]).shape == (2, 384)  # several: one run already
    assert model._single.runs == 1


def test_one_bad_text_fails_only_its_caller_and_the_next_calls_still_run() -> None:
    def run(texts: Sequence[str]) -> np.ndarray:
        if "bad" in texts:
            raise EmbeddingError("request_failed", "this text cannot be embedded", source="test")
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    held = HeldRuns(run, expect_waiting=3)
    coalescer = held.coalescer = Coalescer(held, max_runs=1)
    out = _concurrently(coalescer.embed, ["first", "ok", "bad", "fine"])
    assert isinstance(out[2], EmbeddingError)
    for i, text in ((0, "first"), (1, "ok"), (3, "fine")):
        vector = out[i]
        assert isinstance(vector, np.ndarray)
        assert vector[0] == len(text)
    # the failed batch was retried text by text; the coalescer is idle again
    assert held.sizes[:2] == [1, 3]
    assert sorted(held.sizes[2:]) == [1, 1, 1]
    assert coalescer.embed("again")[0] == 5.0


def test_a_batch_larger_than_the_limit_is_handed_on_in_turns() -> None:
    def run(texts: Sequence[str]) -> np.ndarray:
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)

    held = HeldRuns(run, expect_waiting=6)
    coalescer = held.coalescer = Coalescer(held, max_batch=4, max_runs=1)
    texts = ["x" * (i + 1) for i in range(7)]
    out = _concurrently(coalescer.embed, texts)
    assert held.sizes == [1, 4, 2]
    for i, text in enumerate(texts):
        assert out[i][0] == len(text)  # type: ignore[index]


def test_up_to_max_runs_run_at_once_before_callers_wait() -> None:
    """With two runs in flight the second caller does not wait for the first; the
    rest share the next run."""
    gate = threading.Event()
    started: list[int] = []
    lock = threading.Lock()

    def run(texts: Sequence[str]) -> np.ndarray:
        with lock:
            started.append(len(texts))
            first_two = len(started) <= 2
        if first_two:  # both held until the other five wait
            deadline = time.monotonic() + JOIN_S
            while coalescer.waiting < 5 and time.monotonic() < deadline:
                time.sleep(0.002)
            gate.wait(JOIN_S)
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)

    coalescer = Coalescer(run, max_runs=2)
    texts = ["y" * (i + 1) for i in range(7)]
    threading.Timer(0.2, gate.set).start()
    out = _concurrently(coalescer.embed, texts)
    # the five who waited share the run of whichever caller finished first
    assert started == [1, 1, 5]
    for i, text in enumerate(texts):
        assert out[i][0] == len(text)  # type: ignore[index]
