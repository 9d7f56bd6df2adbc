"""The static source on tiny hand-made model directories (no distillation here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from tokenizers import Tokenizer, normalizers, pre_tokenizers
from tokenizers.models import WordLevel

from memoryd.embedding import (
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    create,
    static_model_info,
)
from memoryd.embedding.static import StaticEmbedder, main

VOCAB = {"[UNK]": 0, "hello": 1, "world": 2}
ROWS = np.array([[0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32)


def make_tiny_model(
    directory: Path,
    *,
    fmt: str = "safetensors",
    key: str = "embeddings",
    extra: dict[str, np.ndarray] | None = None,
    name: str | None = None,
) -> Path:
    """A 3-word WordLevel tokenizer and a (3, 4) table: [UNK]=0, hello=e1, world=e2."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(directory / "tokenizer.json"))
    if fmt == "npy":
        np.save(directory / "embeddings.npy", ROWS)
    else:
        save_file({key: ROWS, **(extra or {})}, str(directory / "model.safetensors"))
    if name is not None:
        config = {"model_type": "model2vec", "hidden_dim": 4, "name": name}
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


@pytest.fixture(params=["safetensors", "npy"])
def tiny(request: pytest.FixtureRequest, tmp_path: Path) -> StaticEmbedder:
    return StaticEmbedder(make_tiny_model(tmp_path / "tiny", fmt=request.param))


def test_mean_of_rows_then_normalized(tiny: StaticEmbedder) -> None:
    vector = tiny.embed("hello world")
    np.testing.assert_allclose(vector, [2**-0.5, 2**-0.5, 0, 0], atol=1e-6)
    assert vector.dtype == np.float32
    assert tiny.dimensions == 4
    assert tiny.name == "static"
    assert tiny.model == "tiny"


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("hello world", [1, 2]),
        ("foo bar", []),
        ("hello foo world", [1, 2]),  # unknown tokens are dropped, as model2vec does
        ("", []),
        ("Hello World", [1, 2]),  # the tokenizer lower-cases
    ],
)
def test_token_ids(tiny: StaticEmbedder, text: str, ids: list[int]) -> None:
    assert tiny.token_ids(text) == ids


@pytest.mark.parametrize("text", ["foo", "foo bar baz", "", "   "])
def test_unknown_only_text_is_the_zero_vector(tiny: StaticEmbedder, text: str) -> None:
    np.testing.assert_array_equal(tiny.embed(text), np.zeros(4, dtype=np.float32))


def test_unknown_tokens_do_not_dilute(tiny: StaticEmbedder) -> None:
    np.testing.assert_allclose(tiny.embed("hello"), [1, 0, 0, 0])
    np.testing.assert_allclose(tiny.embed("hello foo foo foo"), [1, 0, 0, 0])


def test_batch_rows_match_single_embeds(tiny: StaticEmbedder) -> None:
    texts = ["hello", "world", "foo", "hello world world"]
    batch = tiny.embed_batch(texts)
    assert batch.shape == (4, 4)
    for text, row in zip(texts, batch, strict=True):
        np.testing.assert_array_equal(row, tiny.embed(text))
    np.testing.assert_allclose(batch[3], np.array([1, 2, 0, 0]) / 5**0.5, atol=1e-6)


def test_safetensors_and_npy_dirs_agree(tmp_path: Path) -> None:
    a = StaticEmbedder(make_tiny_model(tmp_path / "a", fmt="safetensors"))
    b = StaticEmbedder(make_tiny_model(tmp_path / "b", fmt="npy"))
    texts = ["hello world", "world", "nothing known"]
    np.testing.assert_array_equal(a.embed_batch(texts), b.embed_batch(texts))


def test_first_2d_float_tensor_is_the_table(tmp_path: Path) -> None:
    directory = make_tiny_model(tmp_path / "m", key="emb", extra={"bias": np.zeros(3, np.float32)})
    assert StaticEmbedder(directory).embed("world").tolist() == [0, 1, 0, 0]


def test_model2vec_token_weights_are_applied(tmp_path: Path) -> None:
    weights = np.array([0.0, 1.0, 3.0], dtype=np.float32)
    directory = make_tiny_model(tmp_path / "w", extra={"weights": weights})
    np.testing.assert_allclose(
        StaticEmbedder(directory).embed("hello world"), np.array([1, 3, 0, 0]) / 10**0.5, atol=1e-6
    )


def test_model_name_comes_from_config(tmp_path: Path) -> None:
    directory = make_tiny_model(tmp_path / "dir", name="tiny-static-4")
    info = static_model_info(directory)
    assert info is not None
    assert (info.name, info.dimensions) == ("tiny-static-4", 4)
    assert StaticEmbedder(directory).model == "tiny-static-4"


def test_registry_builds_it_from_the_context(tmp_path: Path) -> None:
    make_tiny_model(tmp_path / "data" / "models" / "static")
    ctx = EmbeddingContext(data_dir=tmp_path / "data")
    embedder = create(EmbeddingResolution("static", "static", 4, "test"), ctx)
    np.testing.assert_allclose(embedder.embed("world"), [0, 1, 0, 0])
    explicit = EmbeddingContext(env={"MEMORY_STATIC_MODEL": str(tmp_path / "data/models/static")})
    assert create(EmbeddingResolution("static", None, 4, "test"), explicit).embed("hello")[0] == 1


def test_empty_batch(tiny: StaticEmbedder) -> None:
    assert tiny.embed_batch([]).shape == (0, 4)


def test_missing_model_is_model_load_failed(tmp_path: Path) -> None:
    embedder = StaticEmbedder(tmp_path / "nowhere")
    assert embedder.dimensions is None
    with pytest.raises(EmbeddingError) as info:
        embedder.embed("hello")
    assert info.value.reason == "model_load_failed"
    assert info.value.source == "static"
    assert "build-static" in info.value.message


def test_corrupt_weights_are_model_load_failed(tmp_path: Path) -> None:
    directory = make_tiny_model(tmp_path / "bad")
    (directory / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}")
    with pytest.raises(EmbeddingError) as info:
        StaticEmbedder(directory).embed("hello")
    assert info.value.reason == "model_load_failed"


def test_module_entry_reports_a_missing_local_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["build", str(tmp_path / "out"), "--model-dir", str(empty)]) == 1
    assert "pip install 'memoryd[local]'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
