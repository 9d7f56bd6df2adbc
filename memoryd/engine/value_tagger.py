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
from typing import Any, NamedTuple

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


def span_features(states: np.ndarray, start: int, end: int) -> np.ndarray:
    """A value's pieces ``start:end`` read as one: their mean, the pieces either side of
    them and the message's mean (what it is, from what surrounds it)."""
    n, d = states.shape
    zero = np.zeros(d, dtype=np.float32)
    left = states[start - 1] if start > 0 else zero
    right = states[end] if end < n else zero
    inner = states[start:end].mean(axis=0)
    return np.concatenate([inner, left, right, states.mean(axis=0)]).astype(np.float32)


def runs(
    offsets: Sequence[tuple[int, int]], probs: np.ndarray, at: float = TAG_AT
) -> list[tuple[int, int, float]]:
    """Runs of value pieces, as ``(first piece, last piece + 1, mean value probability)``;
    a B piece opens a new run even right after another, a "##" piece never does."""
    out: list[tuple[int, int, float]] = []
    first = -1
    end = -1
    mass: list[float] = []
    for i, ((a, b), p) in enumerate(zip(offsets, probs, strict=False)):
        value = float(p[1] + p[2])
        if b <= a or value < at:
            if mass:
                out.append((first, i, sum(mass) / len(mass)))
                mass = []
            continue
        opens = p[1] >= p[2] and a > end
        if mass and opens:
            out.append((first, i, sum(mass) / len(mass)))
            mass = []
        if not mass:
            first = i
        end = b
        mass.append(value)
    if mass:
        out.append((first, len(offsets), sum(mass) / len(mass)))
    return out


def spans(
    text: str, offsets: Sequence[tuple[int, int]], probs: np.ndarray, at: float = TAG_AT
) -> list[Span]:
    """The runs as character spans, widened to whole words."""
    return [
        _widen(text, offsets[i][0], offsets[j - 1][1], p) for i, j, p in runs(offsets, probs, at)
    ]


def _widen(text: str, start: int, end: int, p: float) -> Span:
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "'-"):
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return start, end, p


class Tagged(NamedTuple):
    """A value the tagger read: where it is, how sure it is, and which attribute of the
    schema it is a value of, by its own context ("Morgan Stanley" in "I'm at Morgan
    Stanley from Monday" is an employer whatever rule read the clause)."""

    start: int
    end: int
    p: float
    attribute: str
    attribute_p: float


class Reading(NamedTuple):
    """What the tagger read in one message: its values, and how likely the message is
    to state nothing lasting about its writer at all (a story, a task, a question)."""

    values: list[Tagged]
    fact_free: float


def message_features(states: np.ndarray) -> np.ndarray:
    """The message as a whole: the mean and the maximum of its pieces' vectors."""
    return np.concatenate([states.mean(axis=0), states.max(axis=0)]).astype(np.float32)


def mlp(model: dict[str, np.ndarray], prefix: str, x: np.ndarray) -> np.ndarray:
    x = (x - model[prefix + "mean"]) / model[prefix + "scale"]
    a = np.maximum(x @ model[prefix + "w1"] + model[prefix + "b1"], 0)
    z = a @ model[prefix + "w2"] + model[prefix + "b2"]
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    out: np.ndarray = p / p.sum(axis=1, keepdims=True)
    return out


def load_heads(path: Path, labels_key: str) -> tuple[list[str], dict[str, np.ndarray]]:
    """A weights file's labels and its arrays as float32 (shipped as float16)."""
    with np.load(path) as data:
        labels = [str(x) for x in data[labels_key]]
        model = {k: data[k].astype(np.float32) for k in data.files if k != labels_key}
    return labels, model


def minilm(
    embedder: Any | None, source: Callable[[], Any | None] | None, needs: str, who: str
) -> Any | None:
    """The MiniLM session a model reads: ``embedder``, else ``source``'s (the engine's),
    unwrapped from the embedding cache; None when it has no ``needs`` method."""
    if embedder is None and source is not None:
        try:
            embedder = source()
        except Exception:
            log.warning("%s: the engine's embedder", who, exc_info=True)
    inner = getattr(embedder, "inner", None)  # under the embedding cache
    if inner is not None and hasattr(inner, needs):
        embedder = inner
    return embedder if embedder is not None and hasattr(embedder, needs) else None


class LazyHeads:
    """Weights read from ``path`` and the MiniLM session they read, both loaded on first
    use; without either the model is absent and ``status`` says why (``fallback``: what
    capture does then)."""

    #: the key of the weights file's labels, the MiniLM method the model needs, its name
    #: in the log, and what capture does without it
    labels_key = "labels"
    needs = "embed_batch"
    who = "model"
    fallback = "rules only"

    def __init__(
        self,
        embedder: Any | None = None,
        path: Path = MODEL_PATH,
        source: Callable[[], Any | None] | None = None,
    ) -> None:
        self._embedder = embedder
        self._source = source
        self._path = path
        self._lock = threading.Lock()
        self._loaded = False
        self._model: dict[str, np.ndarray] | None = None
        self.labels: list[str] = []
        self.status = "not loaded"

    def _load(self) -> bool:
        with self._lock:
            if self._loaded:
                return self._model is not None and self._embedder is not None
            self._loaded = True
            try:
                labels, model = load_heads(self._path, self.labels_key)
            except (OSError, KeyError, ValueError) as exc:
                self.status = f"no {self.who} ({exc}): {self.fallback}"
                log.warning("%s unavailable: %s", self.who, self.status)
                return False
            self._embedder = minilm(self._embedder, self._source, self.needs, self.who)
            if self._embedder is None:
                self.status = f"MiniLM unavailable: {self.fallback}"
                return False
            self._model = model
            self.labels = labels
            self.status = "ready"
            return True

    def ready(self) -> bool:
        """Whether the weights and MiniLM are loaded (loading them on first ask)."""
        return self._load()


class ValueTagger(LazyHeads):
    """Lazily loaded; ``tag`` returns the value spans per text, or None when the model
    or MiniLM is unavailable (the reason is in ``status``)."""

    labels_key = "attr_labels"
    needs = "token_states"
    who = "value tagger"

    def __init__(
        self,
        embedder: Any | None = None,
        path: Path = MODEL_PATH,
        source: Callable[[], Any | None] | None = None,
        at: float = TAG_AT,
    ) -> None:
        super().__init__(embedder, path, source)
        self._at = at

    def probabilities(self, states: np.ndarray) -> np.ndarray:
        """B/I/O probabilities per piece; the model must be loaded."""
        assert self._model is not None
        return mlp(self._model, "", features(states))

    def read(self, text: str, states: np.ndarray, offsets: Sequence[tuple[int, int]]) -> Reading:
        """The values of one encoded text, each with its attribute."""
        m = self._model
        assert m is not None
        if len(states) == 0:
            return Reading([], 1.0)
        fact_free = float(mlp(m, "gate_", message_features(states)[None, :])[0, 0])
        found = runs(offsets, self.probabilities(states), self._at)
        if not found:
            return Reading([], fact_free)
        x = np.stack([span_features(states, i, j) for i, j, _p in found])
        probs = mlp(m, "attr_", x)
        best = probs.argmax(axis=1)
        out = []
        for (i, j, p), k, row in zip(found, best, probs, strict=True):
            start, end, _ = _widen(text, offsets[i][0], offsets[j - 1][1], p)
            out.append(Tagged(start, end, p, self.labels[int(k)], float(row[k])))
        return Reading(out, fact_free)

    def tag(self, texts: Sequence[str]) -> list[Reading] | None:
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
            self.read(text, states, offsets)
            for text, (states, offsets) in zip(texts, encoded, strict=True)
        ]
