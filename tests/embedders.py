"""Deterministic embedders for tests, plugged in through the real registry.

``HashEmbedder`` is feature hashing over lower-cased word tokens: texts that share
words are similar, unrelated texts are near-orthogonal, and every run gives the same
vectors. ``FailingEmbedder`` raises like a provider that is down.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from memoryd.config.settings import MemorySettings
from memoryd.embedding import EmbeddingError, EmbeddingResolution, registry
from memoryd.embedding.base import EmbeddingContext

WORD = re.compile(r"\w+")


class HashEmbedder:
    name = "hash"

    def __init__(self, dim: int = 64) -> None:
        self.model = f"hash-{dim}"
        self._dim = dim
        self.calls = 0

    @property
    def dimensions(self) -> int:
        return self._dim

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in WORD.findall(text.lower()):
                digest = hashlib.sha256(token.encode()).digest()
                index = int.from_bytes(digest[:4], "little") % self._dim
                out[row, index] += 1.0 if digest[4] & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    def embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_batch([text])[0]
        return vector


class FailingEmbedder(HashEmbedder):
    name = "failing"

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError("request_failed", "provider is down", source=self.name)


registry.register("hash", lambda res, ctx: HashEmbedder(res.dimensions or 64))
registry.register("failing", lambda res, ctx: FailingEmbedder(res.dimensions or 64))


def fixed_resolver(source: str = "hash", dim: int = 64):  # type: ignore[no-untyped-def]
    """A resolver that always picks ``source`` (replaces the settings-driven choice)."""

    def resolve(settings: MemorySettings, ctx: EmbeddingContext) -> EmbeddingResolution:
        return EmbeddingResolution(source, f"{source}-{dim}", dim, f"test embedder {source}")

    return resolve


def no_source(settings: MemorySettings, ctx: EmbeddingContext) -> EmbeddingResolution:
    """As on an install without any embedding model."""
    return EmbeddingResolution(None, None, None, "auto: no embedding source available")
