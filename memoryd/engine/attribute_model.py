"""The attribute classifier: which attribute a statement is about, by meaning.

One hidden ReLU layer and a softmax over the packaged MiniLM's sentence vectors,
trained here on labelled statements and clauses (``bench/train_attributes.py``; ~200 KB
of weights shipped beside this file). The rules decide what a message states and its
value; the classifier backs them where wording decides the slot: it moves a fact the
rules filed under a catch-all attribute (a hobby, a plan) into the single-valued one its
words mean ("just finished my first week at Auto Trader" is the employer), and it keeps
a statement no rule matched when it is confident the statement names a lasting
attribute.

It always uses MiniLM, whatever embedding source retrieval is configured with: the
weights live in MiniLM's space. Without the ``local`` extra it is simply absent and
extraction is the rules alone (``status``); one batch is embedded per message, in the
extraction worker, never on the request path.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from memoryd.engine.steering import SteeringReader
from memoryd.engine.value_tagger import Reading, ValueTagger

log = logging.getLogger("memoryd.extraction")

MODEL_PATH = Path(__file__).with_name("attribute_model.npz")
#: The careful reader: how likely a statement is one a careful assistant must weigh in
#: any advice (``bench/train_careful.py``), a logistic head on the same vectors.
CAREFUL_PATH = Path(__file__).with_name("careful_model.npz")
NONE = "none"


Readings = list[tuple[tuple[str, float], tuple[str, float]]]


class Read(NamedTuple):
    """One batch's readings: per text the label and attribute (``readings``), the
    message's value spans, per text and for the message whole the careful reader's
    probability."""

    readings: Readings | None
    reading: Reading | None
    careful: list[float]
    message_careful: float


class AttributeModel:
    """Lazily loaded; ``classify`` returns ``(attribute, probability)`` per text, or
    None when the model or MiniLM is unavailable (the reason is in ``status``)."""

    def __init__(
        self,
        embedder: Any | None = None,
        path: Path = MODEL_PATH,
        source: Callable[[], Any | None] | None = None,
        careful_path: Path = CAREFUL_PATH,
    ) -> None:
        self._embedder = embedder
        self._source = source  # the engine's own MiniLM, when retrieval runs it
        self._path = path
        self._lock = threading.Lock()
        self._loaded = False
        self._weights: np.ndarray | None = None
        self._bias: np.ndarray | None = None
        self._hidden: tuple[np.ndarray, np.ndarray] | None = None
        self._labels: list[str] = []
        self._careful_path = careful_path
        self._careful: tuple[np.ndarray, float] | None = None
        self._careful_done = False  # its load was tried (``careful_available`` reads it)
        self.status = "not loaded"
        self._available: bool | None = None
        #: reads value spans on the same MiniLM session
        self.tagger = ValueTagger(source=self._minilm)
        #: reads standing requests and rules against others, on the same session
        self.steering = SteeringReader(source=self._minilm)

    def _minilm(self) -> Any | None:
        return self._embedder if self._load() else None

    def _load(self) -> bool:
        with self._lock:
            if self._loaded:
                return self._weights is not None
            self._loaded = True
            try:
                with np.load(self._path) as data:
                    self._weights = data["weights"].astype(np.float32)
                    self._bias = data["bias"].astype(np.float32)
                    self._labels = [str(x) for x in data["labels"]]
                    if "hidden_weights" in data:  # one ReLU layer before the softmax
                        self._hidden = (
                            data["hidden_weights"].astype(np.float32),
                            data["hidden_bias"].astype(np.float32),
                        )
            except (OSError, KeyError, ValueError) as exc:
                self.status = f"no attribute model ({exc}): rules only"
                log.warning("attribute classifier unavailable: %s", self.status)
                return False
            try:  # optional: without it, constraints are read by their words alone
                with np.load(self._careful_path) as data:
                    self._careful = (data["weights"].astype(np.float32), float(data["bias"]))
            except (OSError, KeyError, ValueError) as exc:
                log.warning("careful reader unavailable (%s): constraints by words only", exc)
            self._careful_done = True
            if self._embedder is None and self._source is not None:
                try:  # retrieval's MiniLM session, instead of a second one
                    self._embedder = self._source()
                except Exception:
                    log.warning("attribute classifier: the engine's embedder", exc_info=True)
            if self._embedder is None:
                try:
                    from memoryd.embedding import local_model_files
                except ImportError as exc:  # the local extra is not installed
                    self._weights = None
                    self.status = f"MiniLM not installed ({exc.name}): rules only"
                    return False
                if local_model_files() is None:
                    self._weights = None
                    self.status = "MiniLM model files not found: rules only"
                    return False
                self._embedder = own_minilm()
            self.status = f"ready ({len(self._labels)} attributes)" + (
                ""
                if self._careful is not None
                else "; careful reader missing: constraints by words"
            )
            return True

    def available(self) -> bool:
        """Whether ``classify`` can answer, without loading anything: the request path
        asks it to decide whether a turn is worth an extraction job."""
        if self._loaded:
            return self._weights is not None
        if self._available is None:
            self._available = self._path.is_file() and (
                self._embedder is not None or minilm_present()
            )
        return self._available

    def tag(self, texts: Sequence[str]) -> list[Reading] | None:
        """The value spans of each text (``value_tagger``), or None without the tagger."""
        return self.tagger.tag(texts)

    def classify(self, texts: Sequence[str]) -> list[tuple[str, float]] | None:
        full = self.readings(texts)
        return None if full is None else [best for best, _named in full]

    def readings(
        self, texts: Sequence[str]
    ) -> list[tuple[tuple[str, float], tuple[str, float]]] | None:
        """Per text, the most likely label and the most likely attribute ("none" left
        out): a clause the value tagger vouches for is filed by the latter."""
        if not texts or not self._load():
            return None if not texts or self._weights is None else []
        assert self._weights is not None
        assert self._bias is not None
        embedder = self._embedder
        if embedder is None:
            return None
        try:
            vectors = np.asarray(embedder.embed_batch(list(texts)), dtype=np.float32)
        except Exception as exc:  # an embedder failure degrades to the rules alone
            log.warning("attribute classifier: embedding failed: %s", exc)
            return None
        return self._read_vectors(vectors)

    def read(
        self, message: str, texts: Sequence[str]
    ) -> tuple[list[tuple[tuple[str, float], tuple[str, float]]] | None, Reading | None]:
        """``readings(texts)`` and the tagger's ``Reading`` of ``message`` ("" for none),
        from one MiniLM call: the message and its clauses are one batch."""
        found = self.read_all(message, texts)
        return found.readings, found.reading

    def read_all(self, message: str, texts: Sequence[str]) -> Read:
        """``read`` and the careful reader's probability that ``message`` and each text
        state a constraint advice must weigh (0.0 and empty without the reader), from
        the same batch."""
        if (not texts and not message) or not self._load():
            return Read(None, None, [], 0.0)
        inner = getattr(self._embedder, "inner", self._embedder)
        encode = getattr(inner, "encode", None)
        if encode is None or (message and not self.tagger.ready()):
            tagged = self.tag([message]) if message else None
            return Read(self.readings(texts), (tagged[0] if tagged else None), [], 0.0)
        batch = ([message] if message else []) + list(texts)
        try:
            encoded = encode(batch)
        except Exception as exc:  # an embedder failure degrades to the rules alone
            log.warning("attribute classifier: embedding failed: %s", exc)
            return Read(None, None, [], 0.0)
        reading = None
        whole = 0.0
        if message:
            vector, states, offsets = encoded[0]
            reading = self.tagger.read(message, states, offsets)
            whole = next(iter(self._careful_of(vector[None, :])), 0.0)
            encoded = encoded[1:]
        if not texts:
            return Read(None, reading, [], whole)
        vectors = np.stack([vector for vector, _states, _offsets in encoded])
        return Read(self._read_vectors(vectors), reading, self._careful_of(vectors), whole)

    def careful_scores(self, texts: Sequence[str]) -> list[float]:
        """The careful reader's probability per text (empty without it); a text the
        session read a moment ago (the message's batch) is not embedded again."""
        if not texts or not self.careful_ready():
            return []
        vectors = self._vectors(texts)
        return [] if vectors is None else self._careful_of(vectors)

    def distributions(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray] | None:
        """The labels and, per text, the classifier's whole distribution over them (an
        update weighs the attributes a person already holds, not only the likeliest);
        a text the session read a moment ago is not embedded again. None without the
        model."""
        if not texts or not self._load():
            return None
        vectors = self._vectors(texts)
        return None if vectors is None else (list(self._labels), self._probabilities(vectors))

    def _vectors(self, texts: Sequence[str]) -> np.ndarray | None:
        inner = getattr(self._embedder, "inner", self._embedder)
        encode = getattr(inner, "encode", None)
        try:
            if encode is not None:
                return np.stack([vector for vector, _states, _offsets in encode(list(texts))])
            assert self._embedder is not None
            return np.asarray(self._embedder.embed_batch(list(texts)), dtype=np.float32)
        except Exception as exc:  # an embedder failure: the rules' reading stands
            log.warning("attribute classifier: embedding failed: %s", exc)
            return None

    def careful_available(self) -> bool:
        """Whether the careful reader can answer, without loading anything (the
        request path's extraction pre-check asks)."""
        if self._careful_done:  # not while another thread is loading it
            return self._careful is not None
        return self._careful_path.is_file() and self.available()

    def careful_ready(self) -> bool:
        """Whether the careful reader can answer (loads the models)."""
        return self._load() and self._careful is not None

    def _careful_of(self, vectors: np.ndarray) -> list[float]:
        if self._careful is None:
            return []
        weights, bias = self._careful
        return [float(p) for p in 1.0 / (1.0 + np.exp(-(vectors @ weights + bias)))]

    def _probabilities(self, vectors: np.ndarray) -> np.ndarray:
        assert self._weights is not None
        assert self._bias is not None
        if self._hidden is not None:
            vectors = np.maximum(vectors @ self._hidden[0] + self._hidden[1], 0)
        logits = vectors @ self._weights + self._bias
        logits -= logits.max(axis=1, keepdims=True)
        probs: np.ndarray = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        return probs

    def _read_vectors(
        self, vectors: np.ndarray
    ) -> list[tuple[tuple[str, float], tuple[str, float]]]:
        probs = self._probabilities(vectors)
        best = probs.argmax(axis=1)
        named = probs.copy()
        if NONE in self._labels:
            named[:, self._labels.index(NONE)] = -1.0
        second = named.argmax(axis=1)
        return [
            ((self._labels[i], float(probs[row, i])), (self._labels[j], float(probs[row, j])))
            for row, (i, j) in enumerate(zip(best, second, strict=True))
        ]


_own: Any | None = None


def own_minilm() -> Any:
    """One MiniLM session per process for the classifier when retrieval runs another
    embedder (or none)."""
    global _own
    with _shared_lock:
        if _own is None:
            from memoryd.embedding.onnx_minilm import MiniLMEmbedder

            _own = MiniLMEmbedder(threads=1)
        return _own


def forget_texts() -> None:
    """Drop the texts the classifier's own session kept (an erasure)."""
    with _shared_lock:
        own = _own
    if own is not None:
        own.forget_texts()


def engine_minilm(embeddings: Any) -> Callable[[], Any | None]:
    """A source of the engine's embedder when it is the packaged MiniLM (the space the
    weights were trained in), else of None."""

    def source() -> Any | None:
        if embeddings is None:
            return None
        from memoryd.embedding import TRANSFORMERS_MODEL

        resolution, embedder = embeddings.current()
        if resolution.source == "transformers" and resolution.model == TRANSFORMERS_MODEL:
            return embedder
        return None

    return source


def minilm_present() -> bool:
    try:
        from memoryd.embedding import local_model_files
    except ImportError:
        return False
    try:
        return local_model_files() is not None
    except Exception:  # a broken install is the rules alone, never a failed request
        return False


_shared: AttributeModel | None = None
_shared_lock = threading.Lock()


def shared_model() -> AttributeModel:
    """One model per process (it holds an ONNX session)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = AttributeModel()
        return _shared
