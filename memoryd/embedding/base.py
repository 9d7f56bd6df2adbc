"""The embedding contract: the Embedder protocol, resolutions, errors and context.

An ``Embedder`` turns texts into unit vectors. Every source (the local ONNX MiniLM,
a static token table, a remote OpenAI-compatible provider, a test embedder) satisfies
the same protocol and raises only ``EmbeddingError``, whose ``reason`` is one of five
stable codes (docs/design/vectors.md#embedding-errors)::

    no_key             the provider is unknown or has no API key (HTTP 401/403 too)
    model_load_failed  a local model is missing or cannot be loaded
    request_failed     an inference call or HTTP request failed (retried once)
    rate_limited       HTTP 429 (not retried)
    timeout            the request exceeded ``EmbeddingContext.timeout_s`` (retried once)

Nothing here imports a heavy dependency; the sources import theirs when chosen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

ErrorReason = Literal["no_key", "model_load_failed", "request_failed", "rate_limited", "timeout"]

_MAX_MESSAGE = 300
# "File "/x/y.py", line 3", "at /x/y.js:1:2", "/src/onnxruntime/core/x.cc:123" and the like.
_STACK_BITS = re.compile(
    r'File "[^"]*", line \d+(?:, in \S+)?'
    r"|\bat (?:\S+ )?\(?/[^\s)]*\)?"
    r"|(?:/[\w.+-]+)+\.\w+:\d+(?::\d+)?"
)


def sanitize_message(message: str) -> str:
    """A one-line error message without stack frames or source paths, at most 300 chars."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    text = _STACK_BITS.sub("", lines[0] if lines else "")
    text = re.sub(r"\s{2,}", " ", text).strip(" :") or "embedding failed"
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


class EmbeddingError(Exception):
    """A typed embedding failure; ``message`` is sanitized (no stack paths, one line)."""

    def __init__(
        self, reason: ErrorReason, message: str, *, source: str, model: str | None = None
    ) -> None:
        self.reason: ErrorReason = reason
        self.message = sanitize_message(message)
        self.source = source
        self.model = model
        super().__init__(f"{source} embedding {reason}: {self.message}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "model": self.model,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class EmbeddingResolution:
    """Which source and model the settings select, and why (or why none)."""

    source: str | None
    model: str | None
    dimensions: int | None
    reason: str

    @property
    def signature(self) -> str:
        """``source:model:dim`` with ``null`` for missing parts (quantization is the
        vector store's suffix, not ours)."""
        parts = (self.source, self.model, self.dimensions)
        return ":".join("null" if p is None else str(p) for p in parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "model": self.model,
            "dimensions": self.dimensions,
            "signature": self.signature,
            "reason": self.reason,
        }


@runtime_checkable
class Embedder(Protocol):
    """Texts in, unit vectors out.

    - ``embed_batch(texts)`` returns a float32 array of shape ``(len(texts), d)`` whose
      rows are L2-normalized (a zero vector, e.g. a text of unknown tokens for a static
      model, stays zero); ``[]`` gives shape ``(0, d)``, or ``(0, 0)`` while ``d`` is
      unknown. Row ``i`` belongs to ``texts[i]``.
    - ``embed(text)`` is ``embed_batch([text])[0]``.
    - ``dimensions`` is known after loading, or after the first vector at the latest.
    - Any failure is an ``EmbeddingError``; nothing else escapes.
    """

    name: str
    model: str

    @property
    def dimensions(self) -> int | None: ...

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed(self, text: str) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """An OpenAI-compatible provider: ``base_url`` ends before ``/embeddings``
    (e.g. ``http://127.0.0.1:8000/v1``)."""

    name: str
    base_url: str
    api_key: str | None = None

    @property
    def has_key(self) -> bool:
        return bool(self.api_key and self.api_key.strip())


@dataclass(frozen=True, slots=True)
class EmbeddingContext:
    """What the sources may know about the outside world.

    ``env`` is the configuration mapping (never ``os.environ`` read inside the
    package); ``providers`` are the configured remote providers by name; ``data_dir``
    is the memoryd data directory (the default static model lives in
    ``<data_dir>/models/static``); when ``None``, ``env["MEMORYD_DATA_DIR"]`` or the
    default data directory is used.
    """

    env: Mapping[str, str] = field(default_factory=dict)
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    timeout_s: float = 10.0
    data_dir: Path | None = None


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length as float32; non-finite entries count as 0 and a zero
    row stays zero."""
    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim == 1:
        row: np.ndarray = l2_normalize(out[None, :])[0]
        return row
    out = np.where(np.isfinite(out), out, 0.0).astype(np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    safe = np.where(norms > 0, norms, 1.0)
    return np.ascontiguousarray(out / safe, dtype=np.float32)


def empty_matrix(dimensions: int | None) -> np.ndarray:
    return np.zeros((0, dimensions or 0), dtype=np.float32)
