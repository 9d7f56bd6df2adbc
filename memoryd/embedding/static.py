"""Source ``static``: a model2vec-style token table, no neural net at query time.

A model directory holds ``tokenizer.json`` and either ``model.safetensors`` (the
model2vec format: the ``embeddings`` matrix, else the first 2-D float tensor, with
the optional ``mapping``/``weights`` tensors of newer model2vec versions) or
``embeddings.npy``. Encoding follows model2vec: token ids without special tokens,
unknown tokens dropped, at most 512 tokens, mean of the rows, L2-normalized. A text
with no known token is the zero vector.

``build_static`` (in ``distill.py``) makes such a directory from the local MiniLM;
``python -m memoryd.embedding.static build OUTPUT_DIR`` runs it.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.embedding.base import (
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    empty_matrix,
    l2_normalize,
)
from memoryd.embedding.distill import build_static
from memoryd.embedding.locate import (
    INSTALL_HINT,
    safetensors_matrix_key,
    static_model_dir,
    static_model_info,
)

__all__ = ["StaticEmbedder", "build_static", "create_embedder", "load_matrix"]

SOURCE = "static"
MAX_TOKENS = 512


def load_matrix(weights: Path) -> np.ndarray:
    """The ``(vocab, dim)`` float32 table of a ``model.safetensors`` or ``.npy`` file."""
    if weights.suffix == ".npy":
        return np.asarray(np.load(weights, allow_pickle=False), dtype=np.float32)
    from safetensors.numpy import load_file

    found = safetensors_matrix_key(weights)
    if found is None:
        raise ValueError("no 2-D float tensor in the safetensors file")
    tensors = load_file(str(weights))
    matrix = np.asarray(tensors[found[0]], dtype=np.float32)
    mapping = tensors.get("mapping")
    if mapping is not None and mapping.ndim == 1:  # model2vec vocabulary quantization
        matrix = matrix[np.asarray(mapping, dtype=np.int64)]
    weights_vec = tensors.get("weights")
    if weights_vec is not None and weights_vec.ndim == 1 and len(weights_vec) == len(matrix):
        matrix = matrix * np.asarray(weights_vec, dtype=np.float32)[:, None]
    return matrix


class StaticEmbedder:
    """A static model directory; loaded lazily and once."""

    def __init__(self, directory: Path, *, model: str | None = None) -> None:
        self.name = SOURCE
        self.directory = Path(directory)
        info = static_model_info(self.directory)
        self.model = model or (info.name if info else self.directory.name)
        self._expected = info.dimensions if info else None
        self._lock = threading.Lock()
        self._matrix: np.ndarray | None = None
        self._tokenizer: Any = None
        self._unk: int | None = None

    @property
    def dimensions(self) -> int | None:
        return int(self._matrix.shape[1]) if self._matrix is not None else self._expected

    def _fail(self, detail: str) -> EmbeddingError:
        return EmbeddingError(
            "model_load_failed",
            f"static model {self.directory.name!r} is not usable ({detail}); build one with "
            f"`memoryd models build-static` (needs {INSTALL_HINT})",
            source=SOURCE,
            model=self.model,
        )

    def load(self) -> np.ndarray:
        """Load the table and the tokenizer (idempotent, thread-safe)."""
        with self._lock:
            if self._matrix is not None:
                return self._matrix
            info = static_model_info(self.directory)
            if info is None:
                raise self._fail("no tokenizer.json with model.safetensors or embeddings.npy")
            try:
                from tokenizers import Tokenizer
            except ImportError:
                raise self._fail("the tokenizers package is missing") from None
            try:
                tokenizer = Tokenizer.from_file(str(info.tokenizer))
                tokenizer.no_padding()
                tokenizer.no_truncation()
                matrix = load_matrix(info.weights)
            except Exception as exc:  # tokenizers/safetensors/numpy raise many types
                raise self._fail(f"{type(exc).__name__}: {exc}") from None
            if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
                raise self._fail(f"bad embedding table shape {matrix.shape}")
            unk_token = getattr(tokenizer.model, "unk_token", None)
            self._unk = tokenizer.token_to_id(unk_token) if unk_token else None
            self._tokenizer = tokenizer
            self._matrix = np.ascontiguousarray(matrix)
            return self._matrix

    def token_ids(self, text: str) -> list[int]:
        """Ids whose rows are averaged: known tokens only, at most 512."""
        rows = len(self.load())
        ids = self._tokenizer.encode(str(text), add_special_tokens=False).ids
        return [i for i in ids if i != self._unk and 0 <= i < rows][:MAX_TOKENS]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return empty_matrix(self.dimensions)
        matrix = self.load()
        try:
            encodings = self._tokenizer.encode_batch(
                [str(t) for t in texts], add_special_tokens=False
            )
            out = np.zeros((len(texts), matrix.shape[1]), dtype=np.float32)
            rows, unk = len(matrix), self._unk
            for i, encoding in enumerate(encodings):
                ids = [t for t in encoding.ids if t != unk and 0 <= t < rows][:MAX_TOKENS]
                if ids:
                    out[i] = matrix[ids].mean(axis=0)
        except Exception as exc:
            raise EmbeddingError(
                "request_failed",
                f"static encoding failed: {type(exc).__name__}: {exc}",
                source=SOURCE,
                model=self.model,
            ) from None
        return l2_normalize(out)

    def embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_batch([text])[0]
        return vector


def create_embedder(resolution: EmbeddingResolution, ctx: EmbeddingContext) -> StaticEmbedder:
    """Registry factory: the model in ``MEMORY_STATIC_MODEL`` or ``<data_dir>/models/static``."""
    return StaticEmbedder(static_model_dir(ctx), model=resolution.model)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memoryd.embedding.static")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="distill a static model from the local MiniLM")
    build.add_argument("output_dir", type=Path)
    build.add_argument("--pca-dims", type=int, default=256)
    build.add_argument(
        "--model-dir", type=Path, help="a directory with model.onnx and tokenizer.json"
    )
    args = parser.parse_args(argv)
    env = {"MEMORY_TRANSFORMERS_MODEL_DIR": str(args.model_dir)} if args.model_dir else {}
    start = time.perf_counter()

    def progress(done: int, total: int) -> None:
        print(f"\rembedding vocabulary: {done}/{total}", end="", file=sys.stderr, flush=True)

    try:
        out = build_static(args.output_dir, pca_dims=args.pca_dims, progress=progress, env=env)
    except EmbeddingError as exc:
        print(f"\nerror: {exc.message}", file=sys.stderr)
        return 1
    print(f"\nstatic model written to {out} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
