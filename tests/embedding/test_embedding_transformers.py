"""The local MiniLM (ONNX Runtime): files, loading failures, truncation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memoryd.embedding import (
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    create,
    local_model_files,
    onnx_minilm,
)
from memoryd.embedding.onnx_minilm import MiniLMEmbedder

FILES = local_model_files()
pytestmark = pytest.mark.skipif(FILES is None, reason="pip install 'memoryd[local]'")


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    embedder = create(
        EmbeddingResolution("transformers", "all-MiniLM-L6-v2", 384, "t"), EmbeddingContext()
    )
    assert isinstance(embedder, MiniLMEmbedder)
    return embedder


def test_the_installed_packages_are_found() -> None:
    assert FILES is not None
    onnx, tokenizer = FILES
    assert onnx.name == "model.onnx"
    assert onnx.is_file()
    assert tokenizer.name == "tokenizer.json"
    assert tokenizer.is_file()
    assert local_model_files(packages=False) is None


def test_an_explicit_directory_wins(tmp_path: Path) -> None:
    assert FILES is not None
    for src in FILES:
        shutil.copy(src, tmp_path / src.name)
    env = {"MEMORY_TRANSFORMERS_MODEL_DIR": str(tmp_path)}
    assert local_model_files(env) == (tmp_path / "model.onnx", tmp_path / "tokenizer.json")
    embedder = MiniLMEmbedder(env=env, packages=False)
    assert embedder.embed("hello").shape == (384,)


def test_missing_model_is_model_load_failed_with_an_install_hint(tmp_path: Path) -> None:
    env = {"MEMORY_TRANSFORMERS_MODEL_DIR": str(tmp_path)}  # an empty directory
    assert local_model_files(env) is None
    for embedder in (
        MiniLMEmbedder(env=env, packages=False),
        create(EmbeddingResolution("transformers", None, 384, "t"), EmbeddingContext(env=env)),
    ):
        with pytest.raises(EmbeddingError) as info:
            embedder.embed("hello")
        assert info.value.reason == "model_load_failed"
        assert info.value.source == "transformers"
        assert "pip install 'memoryd[local]'" in info.value.message


def test_a_corrupt_onnx_file_is_model_load_failed(tmp_path: Path) -> None:
    assert FILES is not None
    (tmp_path / "model.onnx").write_bytes(b"not an onnx model")
    shutil.copy(FILES[1], tmp_path / "tokenizer.json")
    embedder = MiniLMEmbedder(env={"MEMORY_TRANSFORMERS_MODEL_DIR": str(tmp_path)})
    with pytest.raises(EmbeddingError) as info:
        embedder.embed("hello")
    assert info.value.reason == "model_load_failed"
    assert "\n" not in info.value.message


def test_identity(minilm: MiniLMEmbedder) -> None:
    assert (minilm.name, minilm.model, minilm.dimensions) == (
        "transformers",
        "all-MiniLM-L6-v2",
        384,
    )


def test_texts_are_truncated_at_256_tokens_not_128(minilm: MiniLMEmbedder) -> None:
    words = [f"w{i % 50}" for i in range(400)]  # "w7" is two tokens: ~800 tokens in all
    head = " ".join(words[:200])
    a, b, c, d = minilm.embed_batch(
        [head, head + " tail words here", " ".join(words[:70]), " ".join(words[:70]) + " zebra"]
    )
    np.testing.assert_allclose(a, b, atol=1e-6)  # past 256 tokens nothing counts
    assert float(c @ d) < 0.9999  # ~140 tokens: the tail still counts


def test_similar_texts_score_higher(minilm: MiniLMEmbedder) -> None:
    cat, kitten, tax = minilm.embed_batch(
        ["A cat sits on the mat", "A kitten is sitting on a rug", "Quarterly tax filing deadline"]
    )
    assert float(cat @ kitten) > float(cat @ tax) + 0.3


_RSS_AFTER_LARGE_BATCHES = """
from memoryd.embedding.onnx_minilm import MiniLMEmbedder

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

embedder = MiniLMEmbedder()
embedder.embed("hello")
before = rss_mb()
for n in (8, 16, 32):
    embedder.embed_batch([" ".join(f"word{i}{j}" for j in range(300)) for i in range(n)])
embedder.embed("hello")
print(rss_mb() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads Linux's /proc")
def test_large_batches_do_not_leave_their_memory_behind() -> None:
    # ONNX Runtime's default memory arena kept the largest batch's buffers for the
    # life of the process (+780 MB after these batches, a server growing with every
    # new maximum); without it the memory goes back (+60 MB here, glibc's own).
    out = subprocess.run(
        [sys.executable, "-c", _RSS_AFTER_LARGE_BATCHES],
        capture_output=True,
        text=True,
        check=True,
    )
    assert float(out.stdout.strip()) < 300


def test_a_text_encoded_again_is_not_run_again(minilm: MiniLMEmbedder) -> None:
    """An extraction job's readers ask for the same message one after another: the
    second ``encode`` of a text returns the first one's arrays (read-only, shared),
    and the vectors equal ``embed_batch``'s."""
    first = minilm.encode(["I moved to Leeds last spring", "my dog is called Biscuit"])
    again = minilm.encode(["my dog is called Biscuit", "a text not read before"])
    assert again[0][0] is first[1][0]
    assert again[0][1] is first[1][1]
    assert again[1][0] is not first[0][0]
    assert not first[0][1].flags.writeable
    assert not first[0][0].flags.writeable
    direct = minilm.embed_batch(["I moved to Leeds last spring", "my dog is called Biscuit"])
    assert np.allclose(direct, np.stack([first[0][0], first[1][0]]), atol=1e-5)


def test_the_texts_kept_read_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = MiniLMEmbedder()
    monkeypatch.setattr(onnx_minilm, "ENCODED_PIECES", 40)
    texts = [f"sentence number {i} about the weather in town" for i in range(12)]
    for text in texts:
        embedder.encode([text])
    kept = [t for t in texts if t in embedder._encoded]
    assert 0 < len(kept) < len(texts)
    assert kept == texts[-len(kept) :]  # the newest stay
    assert embedder._encoded_pieces <= 40
