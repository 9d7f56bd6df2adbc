"""The fast query encoder: a new question lands in the packaged MiniLM's space without
running the model, and every way it can be off falls back to the model."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from memoryd.cache import TTLCache
from memoryd.embedding import (
    CachedEmbedder,
    EmbeddingContext,
    EmbeddingResolution,
    create,
    local_model_files,
)
from memoryd.embedding.onnx_minilm import MiniLMEmbedder
from memoryd.embedding.query_encoder import MODEL_PATH, QueryEncoder, quantize

FILES = local_model_files()
pytestmark = pytest.mark.skipif(FILES is None, reason="pip install 'memoryd[local]'")

#: Questions in the registers people type, none of them in the encoder's training data.
QUESTIONS = [
    "whats a good pasta recipe for tonight",
    "Where do I work again?",
    "can u remind me what my dog is called",
    "How should I train for a half marathon with a dodgy knee?",
    "recommend a restaurant near the office, nothing too pricey",
    "what did i say my budget for the new laptop was",
]


def _embedder(**env: str) -> MiniLMEmbedder:
    embedder = create(
        EmbeddingResolution("transformers", "all-MiniLM-L6-v2", 384, "t"),
        EmbeddingContext(env=env),
    )
    assert isinstance(embedder, MiniLMEmbedder)
    return embedder


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return _embedder()


def test_the_encoder_ships_with_the_package() -> None:
    assert MODEL_PATH.is_file()
    with np.load(MODEL_PATH) as data:
        assert data["table"].dtype == np.int8
        assert data["table"].shape[0] == 30522  # MiniLM's word-piece vocabulary
        assert data["proj"].shape[1] == 384


def test_a_new_question_lands_near_the_models_own_vector(minilm: MiniLMEmbedder) -> None:
    assert minilm.query_path == "fast"
    model = minilm.embed_batch(QUESTIONS)
    fast = np.stack([minilm.fast_query(q) for q in QUESTIONS])  # type: ignore[misc]
    assert fast.shape == (len(QUESTIONS), 384)
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-4)
    cosines = (fast * model).sum(axis=1)
    assert cosines.min() > 0.7, cosines
    # and it keeps the model's order: each question is nearest its own model vector
    assert (np.argmax(fast @ model.T, axis=1) == np.arange(len(QUESTIONS))).all()


def test_the_model_can_be_asked_for_every_question() -> None:
    embedder = _embedder(MEMORY_QUERY_ENCODER="model")
    assert embedder.query_path == "model"
    assert embedder.fast_query("where do I work?") is None


def test_a_directory_of_the_users_own_gets_no_fast_queries(tmp_path: Path) -> None:
    assert FILES is not None
    for src in FILES:
        shutil.copy(src, tmp_path / src.name)
    embedder = MiniLMEmbedder(env={"MEMORY_TRANSFORMERS_MODEL_DIR": str(tmp_path)})
    assert embedder.query_path == "model"  # trained on the packaged model, not on this one
    assert embedder.fast_query("where do I work?") is None
    assert embedder.embed("where do I work?").shape == (384,)


def test_a_text_without_word_pieces_falls_back_to_the_model(minilm: MiniLMEmbedder) -> None:
    assert minilm.fast_query("") is None
    cache = CachedEmbedder(minilm, TTLCache(100, 60.0))
    vector, fast = cache.embed_query("")
    assert vector.shape == (384,)
    assert not fast


def test_questions_are_never_cached_beside_documents(minilm: MiniLMEmbedder) -> None:
    cache = CachedEmbedder(minilm, TTLCache(100, 60.0))
    fast, was_fast = cache.embed_query("what's my partner allergic to?")
    assert was_fast
    assert cache.stats()["size"] == 0  # a fast vector must never answer a document
    document = "User's partner is allergic to peanuts"
    stored = cache.embed(document)
    again, was_fast = cache.embed_query(document)  # embedded before: the model's own
    assert not was_fast
    assert np.allclose(again, stored)
    assert not np.allclose(fast, stored)


def test_a_missing_file_is_no_encoder(tmp_path: Path) -> None:
    assert FILES is not None
    encoder = QueryEncoder(FILES[1], tmp_path / "absent.npz")
    assert not encoder.available


def test_quantize_keeps_the_rows() -> None:
    rng = np.random.default_rng(0)
    params = {
        "table": rng.standard_normal((50, 8)).astype(np.float32),
        "proj": rng.standard_normal((8, 384)).astype(np.float32),
        "bias": np.zeros(384, dtype=np.float32),
    }
    params["table"][3] = 0  # an all-zero row keeps a usable scale
    out = quantize(params)
    back = out["table"].astype(np.float32) * out["scale"].astype(np.float32)[:, None]
    assert np.abs(back - params["table"]).max() < 0.02 * np.abs(params["table"]).max()
    assert (back[3] == 0).all()
