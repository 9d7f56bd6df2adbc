"""What ``GET /api/memory/embedding-providers`` lists: local sources and remote providers.

Each entry is ``{provider, hasKey, models: [{id, name, dimensions}]}`` with model ids
``provider/model``. The local ``transformers`` source is always listed (``hasKey``
says whether its model is installed); ``static`` is listed when a model directory is
present; each configured remote provider is listed with the known OpenAI models (for
OpenAI itself) plus the configured ``embeddingProviderModel`` when it names it.
"""

from __future__ import annotations

from typing import Any

from memoryd.config.settings import MemorySettings
from memoryd.embedding.base import EmbeddingContext, ProviderConfig
from memoryd.embedding.locate import (
    TRANSFORMERS_DIMENSIONS,
    TRANSFORMERS_MODEL,
    local_model_files,
    static_model_dir,
    static_model_info,
)
from memoryd.embedding.remote import KNOWN_MODELS, known_dimensions, split_provider_model


def _model(provider: str, model: str, name: str, dimensions: int | None) -> dict[str, Any]:
    return {"id": f"{provider}/{model}", "name": name, "dimensions": dimensions}


def _is_openai(provider: ProviderConfig) -> bool:
    return provider.name == "openai" or "api.openai.com" in provider.base_url


def _remote_entry(provider: ProviderConfig, configured: tuple[str, str] | None) -> dict[str, Any]:
    models = []
    if _is_openai(provider):
        models = [_model(provider.name, m, m, d) for m, d in KNOWN_MODELS.items()]
    if configured and configured[0] == provider.name:
        model = configured[1]
        if all(m["id"] != f"{provider.name}/{model}" for m in models):
            models.append(_model(provider.name, model, model, known_dimensions(model)))
    return {"provider": provider.name, "hasKey": provider.has_key, "models": models}


def list_embedding_providers(
    ctx: EmbeddingContext, settings: MemorySettings
) -> list[dict[str, Any]]:
    """Local sources first (transformers, then static when present), then providers."""
    entries: list[dict[str, Any]] = [
        {
            "provider": "transformers",
            "hasKey": local_model_files(ctx.env) is not None,
            "models": [
                _model(
                    "transformers",
                    TRANSFORMERS_MODEL,
                    f"{TRANSFORMERS_MODEL} (local ONNX)",
                    TRANSFORMERS_DIMENSIONS,
                )
            ],
        }
    ]
    info = static_model_info(static_model_dir(ctx))
    if info is not None:
        entries.append(
            {
                "provider": "static",
                "hasKey": True,
                "models": [_model("static", info.name, f"{info.name} (static)", info.dimensions)],
            }
        )
    configured = split_provider_model(settings.embedding_provider_model)
    for name in sorted(ctx.providers):
        entries.append(_remote_entry(ctx.providers[name], configured))
    return entries
