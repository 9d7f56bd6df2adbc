"""Source ``remote``: an OpenAI-compatible ``POST {base_url}/embeddings``.

The setting ``embeddingProviderModel`` is ``"provider/model"``: the provider (text
before the first ``/``) is looked up in ``EmbeddingContext.providers`` and the rest
is sent as ``model``. The embedder's ``model`` is the full ``provider/model`` string,
so cache keys and vector signatures change when the provider does.

Inputs go in chunks of 128 through one reused ``httpx.Client``. Errors map to
``EmbeddingError`` reasons: 401/403 ``no_key``, 429 ``rate_limited``, any other
non-2xx ``request_failed`` ("Embedding provider returned HTTP <s>"), a timeout
``timeout``, a connection failure or a malformed body ``request_failed``.
``request_failed`` and ``timeout`` are retried once; the others are not.

The vector width is learned from the provider's first answer, never taken from the
table of known models (which only lists them): a gateway alias, a local server that
serves a familiar name, or a ``dimensions`` option upstream answer another width, and
a width assumed before the first vector built the index for the wrong one. A width
that changes later (the provider's model changed) fails that one call and is learned:
the embedding signature changes with it and the vector index is rebuilt.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memoryd.embedding.base import (
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    ErrorReason,
    ProviderConfig,
    empty_matrix,
    l2_normalize,
)

SOURCE = "remote"
CHUNK = 128
RETRIED: frozenset[ErrorReason] = frozenset({"request_failed", "timeout"})

#: Known OpenAI embedding models and their default widths, for listings only: every
#: model's width is learned from its first vector.
KNOWN_MODELS: Mapping[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


def split_provider_model(value: str | None) -> tuple[str, str] | None:
    """``"provider/model"`` -> ``("provider", "model")``; None when malformed."""
    if not value or "/" not in value:
        return None
    provider, model = value.strip().split("/", 1)
    return (provider, model) if provider and model else None


def known_dimensions(model: str | None) -> int | None:
    """Width of a known model, given as ``model`` or ``provider/model``."""
    if not model:
        return None
    if model in KNOWN_MODELS:
        return KNOWN_MODELS[model]
    split = split_provider_model(model)
    return KNOWN_MODELS.get(split[1]) if split else None


class RemoteEmbedder:
    """Embeddings from one provider; ``no_key`` at construction when it has no key."""

    def __init__(self, provider: ProviderConfig, model: str, *, timeout_s: float = 10.0) -> None:
        self.name = SOURCE
        self.model = f"{provider.name}/{model}"
        self.provider = provider
        self.wire_model = model
        self.timeout_s = float(timeout_s)
        if not provider.has_key:
            raise self._error("no_key", f"embedding provider {provider.name!r} has no API key")
        self._url = provider.base_url.rstrip("/") + "/embeddings"
        self._lock = threading.Lock()
        self._client: Any = None
        self._learned: int | None = None
        self.requests = 0

    @property
    def dimensions(self) -> int | None:
        """None until the first answer: the width the provider really sends."""
        return self._learned

    def _error(self, reason: ErrorReason, message: str) -> EmbeddingError:
        return EmbeddingError(reason, message, source=SOURCE, model=self.model)

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import httpx
                except ImportError:
                    raise self._error("request_failed", "the httpx package is missing") from None
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout_s),
                    headers={"Authorization": f"Bearer {self.provider.api_key}"},
                )
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- one request -------------------------------------------------------------------

    def _post(self, texts: list[str]) -> Any:
        client = self._http()
        import httpx

        self.requests += 1
        try:
            response = client.post(self._url, json={"model": self.wire_model, "input": texts})
        except httpx.TimeoutException:
            raise self._error("timeout", f"no answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise self._error("request_failed", f"{type(exc).__name__}: {exc}") from None
        status = response.status_code
        if status in (401, 403):
            raise self._error("no_key", f"Embedding provider returned HTTP {status}")
        if status == 429:
            raise self._error("rate_limited", "Embedding provider returned HTTP 429")
        if not 200 <= status < 300:
            raise self._error("request_failed", f"Embedding provider returned HTTP {status}")
        try:
            return response.json()
        except ValueError:
            raise self._error("request_failed", "the provider sent invalid JSON") from None

    def _vectors(self, body: Any, count: int) -> np.ndarray:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise self._error("request_failed", f"expected {count} embeddings, got {got}")
        if all(isinstance(item, dict) and isinstance(item.get("index"), int) for item in data):
            data = sorted(data, key=lambda item: item["index"])
            if [item["index"] for item in data] != list(range(count)):
                raise self._error("request_failed", "embedding indexes do not match the inputs")
        rows = [item.get("embedding") if isinstance(item, dict) else None for item in data]
        if not all(isinstance(row, list) and row for row in rows):
            raise self._error("request_failed", "a data[i].embedding array is missing")
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise self._error("request_failed", "embeddings are not equal-length numbers") from None
        if matrix.ndim != 2 or not np.isfinite(matrix).all():
            raise self._error("request_failed", "embeddings are not equal-length numbers")
        self._learned = int(matrix.shape[1])  # embed_batch refuses a call that changed it
        return matrix

    def _chunk(self, texts: list[str]) -> np.ndarray:
        try:
            return self._vectors(self._post(texts), len(texts))
        except EmbeddingError as exc:
            if exc.reason not in RETRIED:
                raise
        return self._vectors(self._post(texts), len(texts))

    # -- Embedder ------------------------------------------------------------------------

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return empty_matrix(self.dimensions)
        items = [str(t) for t in texts]
        before = self._learned
        parts = [self._chunk(items[i : i + CHUNK]) for i in range(0, len(items), CHUNK)]
        width = before or int(parts[0].shape[1])
        changed = next((int(p.shape[1]) for p in parts if p.shape[1] != width), None)
        if changed is not None:
            # one call's vectors are one width, and the caller's index is for the old
            # one: this call fails; the next has the new width (learned) and a new
            # signature, so the index is rebuilt for it
            raise self._error(
                "request_failed", f"the model's dimension changed from {width} to {changed}"
            )
        matrix = parts[0] if len(parts) == 1 else np.vstack(parts)
        return l2_normalize(matrix)

    def embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_batch([text])[0]
        return vector


def create_embedder(resolution: EmbeddingResolution, ctx: EmbeddingContext) -> RemoteEmbedder:
    """Registry factory; ``no_key`` when the provider is unknown or has no key."""
    split = split_provider_model(resolution.model)
    if split is None:
        raise EmbeddingError(
            "no_key",
            'embeddingProviderModel must be "provider/model"',
            source=SOURCE,
            model=resolution.model,
        )
    provider = ctx.providers.get(split[0])
    if provider is None:
        raise EmbeddingError(
            "no_key",
            f"embedding provider {split[0]!r} is not configured",
            source=SOURCE,
            model=resolution.model,
        )
    timeout = ctx.timeout_s if math.isfinite(ctx.timeout_s) and ctx.timeout_s > 0 else 10.0
    return RemoteEmbedder(provider, split[1], timeout_s=timeout)
