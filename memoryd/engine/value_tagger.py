"""The value tagger: which words of a message are a lasting value about its writer.

The rules read a fact only in a shape someone wrote a rule for; people who never saw
them put the same fact in shapes nobody did ("My ol' coonhound Duke has been
scratchin' his ears", "Ah'm on a 2019 MacBook Pro runnin Sonoma"). The tagger reads
each word piece's contextual vector from the packaged MiniLM (with its neighbours' and
the message's mean) and a one-hidden-layer classifier, trained here on the labelled
splits (``bench/train_tagger.py``), says B/I/O: the first piece of a value, a later
piece, or neither. Fact-free messages are all O in training, so a value is judged in
context ("Bea" in a character sheet is no value of the writer's).

Like the attribute classifier it always uses MiniLM, runs in the extraction worker,
never on the request path, and is absent (extraction is the rules alone, said in
``status``) without the ``local`` extra or its weights.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("memoryd.extraction")

MODEL_PATH = Path(__file__).with_name("value_tagger.npz")
#: a span is a run of pieces whose value probability (B + I) reaches this; set on the
#: development splits (``bench/train_tagger.py``)
TAG_AT = 0.5

Span = tuple[int, int, float]  # start, end (characters), mean value probability


def features(states: np.ndarray) -> np.ndarray:
    """Each piece's vector beside its left and right neighbours' and the message's mean:
    a value is read from the words around it."""
    n, d = states.shape
    if n == 0:
        return np.zeros((0, 4 * d), dtype=np.float32)
    zero = np.zeros((1, d), dtype=np.float32)
    left = np.concatenate([zero, states[:-1]])
    right = np.concatenate([states[1:], zero])
    mean = np.repeat(states.mean(axis=0, keepdims=True), n, axis=0)
    return np.concatenate([states, left, right, mean], axis=1).astype(np.float32)


def spans(
    text: str, offsets: Sequence[tuple[int, int]], probs: np.ndarray, at: float = TAG_AT
) -> list[Span]:
    """Runs of value pieces as character spans, widened to whole words; a B piece opens
    a new span even right after another."""
    out: list[Span] = []
    start = end = -1
    mass: list[float] = []
    for (a, b), p in zip(offsets, probs, strict=False):
        value = float(p[1] + p[2])
        if b <= a or value < at:
            if mass:
                out.append((start, end, sum(mass) / len(mass)))
                mass = []
            continue
        opens = p[1] >= p[2] and not (a == end and mass)  # "##" pieces continue a word
        if mass and opens and a > end:
            out.append((start, end, sum(mass) / len(mass)))
            mass = []
        if not mass:
            start = a
        end = b
        mass.append(value)
    if mass:
        out.append((start, end, sum(mass) / len(mass)))
    return [_widen(text, s, e, p) for s, e, p in out]


def _widen(text: str, start: int, end: int, p: float) -> Span:
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "'-"):
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return start, end, p


class ValueTagger:
    """Lazily loaded; ``tag`` returns the value spans per text, or None when the model
    or MiniLM is unavailable (the reason is in ``status``)."""

    def __init__(
        self,
        embedder: Any | None = None,
        path: Path = MODEL_PATH,
        source: Callable[[], Any | None] | None = None,
        at: float = TAG_AT,
    ) -> None:
        self._embedder = embedder
        self._source = source
        self._path = path
        self._at = at
        self._lock = threading.Lock()
        self._loaded = False
        self._model: dict[str, np.ndarray] | None = None
        self.status = "not loaded"

    def _load(self) -> bool:
        with self._lock:
            if self._loaded:
                return self._model is not None and self._embedder is not None
            self._loaded = True
            try:
                with np.load(self._path) as data:
                    model = {k: data[k].astype(np.float32) for k in data.files}
            except (OSError, KeyError, ValueError) as exc:
                self.status = f"no value tagger ({exc}): rules only"
                log.warning("value tagger unavailable: %s", self.status)
                return False
            if self._embedder is None and self._source is not None:
                try:
                    self._embedder = self._source()
                except Exception:
                    log.warning("value tagger: the engine's embedder", exc_info=True)
            inner = getattr(self._embedder, "inner", None)  # under the embedding cache
            if inner is not None and hasattr(inner, "token_states"):
                self._embedder = inner
            if self._embedder is None or not hasattr(self._embedder, "token_states"):
                self._embedder = None
                self.status = "MiniLM unavailable: rules only"
                return False
            self._model = model
            self.status = "ready"
            return True

    def probabilities(self, states: np.ndarray) -> np.ndarray:
        """B/I/O probabilities per piece; the model must be loaded."""
        m = self._model
        assert m is not None
        x = (features(states) - m["mean"]) / m["scale"]
        a = np.maximum(x @ m["w1"] + m["b1"], 0)
        z = a @ m["w2"] + m["b2"]
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        out: np.ndarray = p / p.sum(axis=1, keepdims=True)
        return out

    def tag(self, texts: Sequence[str]) -> list[list[Span]] | None:
        if not texts or not self._load():
            return None
        assert self._embedder is not None
        try:
            encoded = self._embedder.token_states(list(texts))
        except Exception as exc:
            self.status = f"MiniLM failed ({exc}): rules only for now"
            log.warning("value tagger: %s", self.status)
            return None
        return [
            spans(text, offsets, self.probabilities(states), self._at)
            for text, (states, offsets) in zip(texts, encoded, strict=True)
        ]
