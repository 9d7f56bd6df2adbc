"""The embedding layer (docs/design/vectors.md#embedders): one Embedder protocol, a
registry of sources, the ``auto`` resolver and a shared cache.

Sources: ``transformers`` (local MiniLM on ONNX Runtime), ``static`` (a model2vec
token table), ``remote`` (an OpenAI-compatible provider). Importing this package
loads no model and imports no heavy dependency.
"""

from memoryd.embedding.base import (
    Embedder,
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    ErrorReason,
    ProviderConfig,
    l2_normalize,
    sanitize_message,
)
from memoryd.embedding.cache import CachedEmbedder, EmbeddingCache, cache_key, make_embedding_cache
from memoryd.embedding.distill import build_static
from memoryd.embedding.locate import (
    TRANSFORMERS_DIMENSIONS,
    TRANSFORMERS_MODEL,
    local_model_files,
    static_model_dir,
    static_model_info,
)
from memoryd.embedding.providers import list_embedding_providers
from memoryd.embedding.registry import Factory, available_sources, create, register, unregister
from memoryd.embedding.remote import KNOWN_MODELS, known_dimensions, split_provider_model
from memoryd.embedding.resolve import resolve_source

__all__ = [
    "KNOWN_MODELS",
    "TRANSFORMERS_DIMENSIONS",
    "TRANSFORMERS_MODEL",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingContext",
    "EmbeddingError",
    "EmbeddingResolution",
    "ErrorReason",
    "Factory",
    "ProviderConfig",
    "available_sources",
    "build_static",
    "cache_key",
    "create",
    "known_dimensions",
    "l2_normalize",
    "list_embedding_providers",
    "local_model_files",
    "make_embedding_cache",
    "register",
    "resolve_source",
    "sanitize_message",
    "split_provider_model",
    "static_model_dir",
    "static_model_info",
    "unregister",
]
