"""One registry of embedding sources, for built-ins and plugins (tests) alike.

A factory takes the resolution and the context and returns an ``Embedder``; it may
raise ``EmbeddingError`` (e.g. ``no_key`` for a remote provider without a key). The
built-in sources are registered below through the same ``register`` call, with a
factory that imports the source module only when that source is created, so
``import memoryd.embedding`` never pulls in onnxruntime, tokenizers or httpx.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from memoryd.embedding.base import Embedder, EmbeddingContext, EmbeddingError, EmbeddingResolution

Factory = Callable[[EmbeddingResolution, EmbeddingContext], Embedder]

_lock = threading.Lock()
_factories: dict[str, Factory] = {}


def register(name: str, factory: Factory) -> None:
    """Add (or replace) the source ``name``."""
    if not name or not isinstance(name, str):
        raise ValueError("an embedding source needs a non-empty name")
    with _lock:
        _factories[name] = factory


def unregister(name: str) -> None:
    with _lock:
        _factories.pop(name, None)


def available_sources() -> list[str]:
    """Registered source names, sorted."""
    with _lock:
        return sorted(_factories)


def create(resolution: EmbeddingResolution, ctx: EmbeddingContext) -> Embedder:
    """Build the embedder of a resolution; an unknown or missing source is
    ``model_load_failed``."""
    source = resolution.source
    with _lock:
        factory = _factories.get(source) if source else None
    if factory is None:
        raise EmbeddingError(
            "model_load_failed",
            f"unknown embedding source {source!r}" if source else resolution.reason,
            source=source or "none",
            model=resolution.model,
        )
    return factory(resolution, ctx)


def _lazy(module: str) -> Factory:
    def factory(resolution: EmbeddingResolution, ctx: EmbeddingContext) -> Embedder:
        made: Embedder = importlib.import_module(module).create_embedder(resolution, ctx)
        return made

    return factory


register("transformers", _lazy("memoryd.embedding.onnx_minilm"))
register("static", _lazy("memoryd.embedding.static"))
register("remote", _lazy("memoryd.embedding.remote"))
