"""Single texts embedded at the same time, run as one batch.

Every chat with a new question embeds one query, and under concurrent load the local
model was asked for many single texts at once: sixteen one-text runs took 2.3 times
as long as one sixteen-text run (3.4 against 1.5 ms a query on two cores), because a
batch shares the model's per-run overhead and fills its matrix kernels. A caller that
finds the model busy waits for the run in progress and is then embedded with every
other caller that arrived meanwhile; a caller that finds it idle runs at once, so a
lone query costs what it did. Each caller's thread runs at most one batch: when a run
ends, the first waiting caller takes the next batch over and the others are answered
by it, so no request does another's work after its own is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

#: Most texts one coalesced run embeds (the local model's own batch size).
MAX_BATCH = 32
#: Runs in flight before callers wait to share the next one. One: a run already uses
#: every core (ONNX Runtime's intra-op threads), and behind a gateway with 8-32
#: concurrent chats a second run in flight halved the batches and cost 18-32 % of the
#: requests a second (2-4 concurrent: within 7 %, the other way).
MAX_RUNS = 1


class _Call:
    __slots__ = ("batch", "done", "error", "text", "vector")

    def __init__(self, text: str) -> None:
        self.text = text
        self.done = threading.Event()
        self.batch: list[_Call] | None = None  # set when this call runs the next batch
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None


class Coalescer:
    """``embed(text)`` through ``run(texts) -> matrix``, concurrent callers batched."""

    def __init__(
        self,
        run: Callable[[Sequence[str]], np.ndarray],
        max_batch: int = MAX_BATCH,
        max_runs: int = MAX_RUNS,
    ) -> None:
        self._run = run
        self._max = max(1, max_batch)
        self._max_runs = max(1, max_runs)
        self._lock = threading.Lock()
        self._waiting: list[_Call] = []
        self._running = 0
        self.runs = 0
        self.texts = 0

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def embed(self, text: str) -> np.ndarray:
        call = _Call(text)
        with self._lock:
            if self._running >= self._max_runs:
                self._waiting.append(call)
                batch = None
            else:
                self._running += 1
                batch = [call]
        if batch is None:
            call.done.wait()
            batch = call.batch  # None: another caller's run answered this one
        if batch is not None:
            try:
                self._execute(batch)
            finally:
                self._hand_over()
        if call.error is not None:
            raise call.error
        assert call.vector is not None
        return call.vector

    def _execute(self, batch: list[_Call]) -> None:
        try:
            try:
                vectors = self._run([c.text for c in batch])
                for c, vector in zip(batch, vectors, strict=True):
                    c.vector = vector.copy()  # not a view that keeps the batch alive
            except Exception:
                if len(batch) == 1:
                    raise
                # one caller's text must not fail the others: each on its own
                for c in batch:
                    try:
                        c.vector = self._run([c.text])[0].copy()
                    except Exception as exc:
                        c.error = exc
        except BaseException as exc:
            for c in batch:
                if c.vector is None and c.error is None:
                    c.error = exc
        finally:
            self.runs += 1
            self.texts += len(batch)
            for c in batch:
                c.done.set()

    def _hand_over(self) -> None:
        """The next batch to the first caller waiting, or the model back to idle."""
        with self._lock:
            if not self._waiting:
                self._running -= 1
                return
            batch = self._waiting[: self._max]
            del self._waiting[: self._max]
        batch[0].batch = batch
        batch[0].done.set()
