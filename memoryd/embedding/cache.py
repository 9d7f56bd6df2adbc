"""The embedding cache (docs/design/vectors.md#embedding-cache): true LRU with a TTL, keyed by
``source:model:dim:sha256(text)``, in front of any Embedder.

``CachedEmbedder.embed_batch`` looks every text up, embeds only the misses in one
call to the inner embedder (duplicates embedded once) and stores them. Cached
vectors are read-only arrays; callers get fresh arrays.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence

import numpy as np

from memoryd.cache import TTLCache
from memoryd.embedding.base import Embedder, empty_matrix

EmbeddingCache = TTLCache[str, np.ndarray]


def cache_key(source: str, model: str | None, dimensions: int | None, text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{source}:{model if model is not None else 'unknown'}:{dimensions or 0}:{digest}"


def make_embedding_cache(
    max_entries: int = 1000, ttl_ms: int = 300_000, *, clock: Callable[[], float] = time.monotonic
) -> EmbeddingCache:
    """A cache sized from ``MEMORY_EMBEDDING_CACHE_MAX`` / ``MEMORY_EMBEDDING_CACHE_TTL_MS``
    (``EngineConfig`` reads them); ``clock`` is for tests."""
    return TTLCache(max_entries, max(0, ttl_ms) / 1000.0, clock=clock)


class CachedEmbedder:
    """An Embedder that answers repeated texts from ``cache``."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.model = inner.model

    @property
    def dimensions(self) -> int | None:
        return self.inner.dimensions

    def key(self, text: str) -> str:
        return cache_key(self.name, self.model, self.inner.dimensions, text)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return empty_matrix(self.dimensions)
        keys = [self.key(str(t)) for t in texts]
        found: dict[int, np.ndarray] = {}
        missing: dict[str, list[int]] = {}  # text -> positions, first-seen order
        for i, key in enumerate(keys):
            hit, vector = self.cache.lookup(key)
            if hit and vector is not None:
                found[i] = vector
            else:
                missing.setdefault(str(texts[i]), []).append(i)
        if missing:
            fresh = self.inner.embed_batch(list(missing))
            for row, positions in zip(fresh, missing.values(), strict=True):
                stored = np.array(row, dtype=np.float32)
                stored.flags.writeable = False
                # Keyed with the width now known, so the next lookup of a remote
                # embedder (whose width was unknown before its first vector) hits.
                self.cache.set(self.key(str(texts[positions[0]])), stored)
                for i in positions:
                    found[i] = stored
        width = len(next(iter(found.values())))
        out = np.empty((len(texts), width), dtype=np.float32)
        for i, vector in found.items():
            out[i] = vector
        return out

    def embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_batch([text])[0]
        return vector

    def embed_query(self, text: str) -> tuple[np.ndarray, bool]:
        """A question's vector, and whether it came from the fast query path: the
        cached vector when this text was embedded before (the model's own), else the
        inner embedder's fast query path when it has one (never cached: documents
        share this cache and must keep the model's vectors), else ``embed``."""
        hit, vector = self.cache.lookup(self.key(text))
        if hit and vector is not None:
            return np.array(vector, dtype=np.float32), False
        fast = getattr(self.inner, "fast_query", None)
        found = fast(text) if callable(fast) else None
        return (found, True) if found is not None else (self.embed(text), False)

    def close(self) -> None:
        """Close the inner embedder when it holds resources (a remote one's client)."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def stats(self) -> dict[str, int | float]:
        """``{hits, misses, size, maxSize, hitRate}`` of the shared cache."""
        return self.cache.stats()
