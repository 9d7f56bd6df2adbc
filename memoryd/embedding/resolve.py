"""Which embedding source the settings select
(docs/design/vectors.md#choosing-a-source), without loading anything.

``auto``: remote when ``embeddingProviderModel`` names a configured provider that has
a key → static when ``staticEnabled`` and a static model directory is present →
transformers when ``transformersEnabled`` and the local model is installed → none.
An explicit source resolves to itself when configured/enabled and present, else to
no source with a reason that says what is missing. Pure and fast: file-existence
checks and a tensor-header read only.
"""

from __future__ import annotations

from memoryd.config.settings import MemorySettings
from memoryd.embedding.base import EmbeddingContext, EmbeddingResolution
from memoryd.embedding.locate import (
    INSTALL_HINT,
    TRANSFORMERS_DIMENSIONS,
    TRANSFORMERS_MODEL,
    local_model_files,
    static_model_dir,
    static_model_info,
)
from memoryd.embedding.remote import split_provider_model

__all__ = ["local_model_files", "resolve_source"]

NO_SOURCE = "auto: no embedding source available"
#: A remote model's width before its first answer (``EmbeddingService`` replaces it).
PROBE_NOTE = "dim=unknown, will probe at embed time"


def _none(reason: str) -> EmbeddingResolution:
    return EmbeddingResolution(None, None, None, reason)


def _dims_note(dims: int | None) -> str:
    return f"dim={dims}" if dims else PROBE_NOTE


def _remote(settings: MemorySettings, ctx: EmbeddingContext, label: str) -> EmbeddingResolution:
    value = settings.embedding_provider_model
    split = split_provider_model(value)
    if value is None or split is None:
        return _none("no_key: embeddingProviderModel not configured")
    provider = ctx.providers.get(split[0])
    if provider is None:
        return _none(f"no_key: embedding provider {split[0]!r} is not configured")
    if not provider.has_key:
        return _none(f"no_key: embedding provider {split[0]!r} has no API key")
    # the width comes from the first answer, never from a table (``embedding.remote``)
    reason = f"{label}: provider {split[0]} configured ({PROBE_NOTE})"
    return EmbeddingResolution("remote", value, None, reason)


def _static(settings: MemorySettings, ctx: EmbeddingContext, label: str) -> EmbeddingResolution:
    if not settings.static_enabled:
        return _none("static selected but disabled in settings (staticEnabled is false)")
    directory = static_model_dir(ctx)
    info = static_model_info(directory)
    if info is None:
        return _none(
            f"static selected but no static model in {directory}: "
            "build one with `memoryd models build-static`"
        )
    reason = f"{label}: static model {info.name} available ({_dims_note(info.dimensions)})"
    return EmbeddingResolution("static", info.name, info.dimensions, reason)


def _transformers(
    settings: MemorySettings, ctx: EmbeddingContext, label: str
) -> EmbeddingResolution:
    if not settings.transformers_enabled:
        return _none(
            "transformers selected but disabled in settings (transformersEnabled is false)"
        )
    if local_model_files(ctx.env) is None:
        return _none(f"transformers selected but the local model is not installed: {INSTALL_HINT}")
    reason = f"{label}: local {TRANSFORMERS_MODEL} (ONNX) available (dim={TRANSFORMERS_DIMENSIONS})"
    return EmbeddingResolution("transformers", TRANSFORMERS_MODEL, TRANSFORMERS_DIMENSIONS, reason)


def resolve_source(settings: MemorySettings, ctx: EmbeddingContext) -> EmbeddingResolution:
    """The resolution for these settings; ``source`` None means keyword-only."""
    choice = settings.embedding_source
    if choice == "remote":
        return _remote(settings, ctx, "remote explicitly selected")
    if choice == "static":
        return _static(settings, ctx, "static explicitly selected")
    if choice == "transformers":
        return _transformers(settings, ctx, "transformers explicitly selected")
    if choice != "auto":
        return _none(f"unknown embedding source {choice!r}")
    for attempt in (_remote, _static, _transformers):
        resolution = attempt(settings, ctx, "auto")
        if resolution.source is not None:
            return resolution
    return _none(NO_SOURCE)
