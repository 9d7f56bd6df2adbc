"""The active embedder, chosen from settings at run time, and its health.

``EmbeddingService.current()`` resolves the embedding source from the settings
(the ``auto`` order), builds the embedder through the registry once per
source/model, wraps it in the shared embedding cache, and remembers a load failure
for a while so a broken model does not cost every request a retry. Callers that get
``None`` (or an ``EmbeddingError``) degrade to the keyword tier.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from memoryd.config.settings import MemorySettings, SettingsService
from memoryd.embedding import (
    CachedEmbedder,
    Embedder,
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    create,
    resolve_source,
)
from memoryd.embedding.resolve import PROBE_NOTE

#: Chooses the embedding source from the settings (``resolve_source`` by default).
Resolver = Callable[[MemorySettings, EmbeddingContext], EmbeddingResolution]

log = logging.getLogger(__name__)

#: How long a failed model load is remembered before it is tried again.
LOAD_RETRY_S = 60.0


def _query_path(embedder: Embedder | None) -> str | None:
    if embedder is None:
        return None
    inner = getattr(embedder, "inner", embedder)
    path = getattr(inner, "query_path", "model")
    return str(path) if isinstance(path, str) else "model"


class EmbeddingService:
    def __init__(
        self,
        settings: SettingsService,
        context: Callable[[], EmbeddingContext],
        cache: Any,
        *,
        resolver: Resolver | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.resolver: Resolver = resolver or resolve_source
        self.settings = settings
        self.context = context
        self.cache = cache
        self._clock = clock
        self._lock = threading.Lock()
        self._key: tuple[str | None, str | None] | None = None
        self._embedder: Embedder | None = None
        self._failure: tuple[float, str] | None = None
        self.last_error: str | None = None
        self.calls = 0
        self.total_ms = 0.0

    def forget_texts(self) -> None:
        """Drop what was kept of recent texts: the cached vectors (keyed by a hash of
        the text) and what the embedder itself kept (``MiniLMEmbedder.encode``'s texts).
        An erasure calls it; the next questions are embedded again."""
        self.cache.clear(reset_stats=False)
        with self._lock:
            embedder = self._embedder
        inner = getattr(embedder, "inner", embedder)
        forget = getattr(inner, "forget_texts", None)
        if forget is not None:
            forget()

    def resolution(self) -> EmbeddingResolution:
        return self.resolver(self.settings.get(), self.context())

    def current(self) -> tuple[EmbeddingResolution, Embedder | None]:
        """The resolution and a ready-to-use embedder, or ``None`` with the reason."""
        resolution = self.resolution()
        if resolution.source is None:
            return resolution, None
        key = (resolution.source, resolution.model)
        with self._lock:
            if key != self._key:
                self._key, self._embedder, self._failure = key, None, None
            if self._embedder is None:
                if self._failure and self._clock() - self._failure[0] < LOAD_RETRY_S:
                    return replace(resolution, source=None, reason=self._failure[1]), None
                try:
                    self._embedder = CachedEmbedder(create(resolution, self.context()), self.cache)
                except EmbeddingError as exc:
                    reason = f"{resolution.source} unavailable ({exc.reason}): {exc.message}"
                    self._failure = (self._clock(), reason)
                    self.last_error = reason
                    log.warning("embedding source unavailable: %s", reason)
                    return replace(resolution, source=None, reason=reason), None
            embedder = self._embedder
        dims = embedder.dimensions or resolution.dimensions
        reason = resolution.reason
        if dims and not resolution.dimensions:  # a remote model's, from its first answer
            reason = reason.replace(PROBE_NOTE, f"dim={dims}, learned from the first answer")
        return replace(resolution, dimensions=dims, reason=reason), embedder

    def close(self) -> None:
        """Release the embedder's resources (a remote one's HTTP connections) at
        shutdown; a later call builds it again."""
        with self._lock:
            embedder, self._embedder, self._key = self._embedder, None, None
        close = getattr(embedder, "close", None)
        if callable(close):
            close()

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """Embed with latency bookkeeping; EmbeddingError propagates to the caller."""
        start = time.perf_counter()
        try:
            vectors = embedder.embed_batch(list(texts))
        except EmbeddingError as exc:
            self.last_error = f"{exc.reason}: {exc.message}"
            raise
        self.calls += 1
        self.total_ms += (time.perf_counter() - start) * 1000
        return vectors

    def embed_query(self, embedder: Embedder, text: str) -> tuple[np.ndarray, bool]:
        """One question's vector and whether the fast query path gave it: the
        embedder's ``embed_query`` when it has one (``CachedEmbedder``), else
        ``embed``."""
        query = getattr(embedder, "embed_query", None)
        if not callable(query):
            return self.embed(embedder, [text])[0], False
        start = time.perf_counter()
        try:
            vector, fast = query(text)
        except EmbeddingError as exc:
            self.last_error = f"{exc.reason}: {exc.message}"
            raise
        self.calls += 1
        self.total_ms += (time.perf_counter() - start) * 1000
        return vector, bool(fast)

    def status(self) -> dict[str, Any]:
        resolution, embedder = self.current()
        stats = self.cache.stats()
        return {
            "source": resolution.source,
            "model": resolution.model,
            "dimensions": resolution.dimensions,
            "available": embedder is not None,
            "reason": resolution.reason,
            "signature": resolution.signature,
            "cacheStats": {k: stats[k] for k in ("hits", "misses", "size")},
            # "fast": new questions by the fast query encoder; "model": by the embedder
            "queryEncoder": _query_path(embedder),
            "lastError": self.last_error,
            "meanLatencyMs": round(self.total_ms / self.calls, 3) if self.calls else None,
        }
