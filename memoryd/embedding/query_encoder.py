"""The fast query encoder: a question in MiniLM's space for the price of a table lookup.

Every chat with a new question used to run MiniLM on the request path (about 3.5 ms
for one sentence on two cores, more when extraction shares them). Documents are
embedded once and can afford the model; a question cannot. This encoder is a static
table trained on MiniLM's own sentence vectors (``bench/train_query_encoder.py``):
``normalize(mean(table[word pieces]) @ proj + bias)``. It lands in the document
embedder's space, so stored vectors stay as they are and nothing is re-embedded.

It serves only the local MiniLM (``transformers``) source, whose tokenizer it shares;
any other source, a missing file or a text with no known word piece falls back to
the model. ``quantize`` is what the trainer writes: int8 rows with a scale each.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

MODEL_PATH = Path(__file__).with_name("query_encoder.npz")
#: As the model: a question longer than this is read by its first pieces.
MAX_TOKENS = 256


def quantize(params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """int8 rows with one float16 scale each (4x smaller than float32 at a held-out
    cosine within .001), the projection and the bias as float16."""
    table = params["table"].astype(np.float32)
    scale = np.abs(table).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    rows = np.clip(np.round(table / scale[:, None]), -127, 127).astype(np.int8)
    out = {"table": rows, "scale": scale.astype(np.float16)}
    return out | {k: v.astype(np.float16) for k, v in params.items() if k != "table"}


class QueryEncoder:
    """Loaded lazily, once; thread-safe after that (numpy and the Rust tokenizer)."""

    def __init__(self, tokenizer: Path, model: Path = MODEL_PATH) -> None:
        self._tokenizer_path = tokenizer
        self._model_path = model
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._table: np.ndarray | None = None
        self._proj: np.ndarray | None = None
        self._bias: np.ndarray | None = None
        self._hidden: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def available(self) -> bool:
        return self._model_path.is_file() and self._tokenizer_path.is_file()

    def load(self) -> None:
        if self._table is None:  # every question passes here: no lock once loaded
            with self._lock:
                self._load()

    def _load(self) -> None:
        if self._table is not None:
            return
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        with np.load(self._model_path) as data:
            scale = data["scale"].astype(np.float32)
            # float32 rows: a lookup then costs no conversion on the request path
            table = data["table"].astype(np.float32) * scale[:, None]
            proj = data["proj"].astype(np.float32)
            bias = data["bias"].astype(np.float32)
            if "w1" in data.files:  # the residual layer, when the trainer fitted one
                w1, c1, w2 = (data[k].astype(np.float32) for k in ("w1", "c1", "w2"))
                self._hidden = (w1, c1, w2)
        self._tokenizer, self._proj, self._bias = tokenizer, proj, bias
        self._table = table

    def encode(self, text: str) -> np.ndarray | None:
        """The unit vector of ``text``, or None when it has no word piece."""
        self.load()
        table, proj, bias = self._table, self._proj, self._bias
        assert table is not None
        assert proj is not None
        assert bias is not None
        ids = self._tokenizer.encode(text, add_special_tokens=False).ids
        if not ids:
            return None
        pooled = table[ids].mean(axis=0)
        z = pooled @ proj + bias
        if self._hidden is not None:
            w1, c1, w2 = self._hidden
            z += np.maximum(pooled @ w1 + c1, 0.0) @ w2
        norm = float(np.linalg.norm(z))
        if norm == 0.0 or not np.isfinite(norm):
            return None
        out: np.ndarray = (z / norm).astype(np.float32)
        return out
