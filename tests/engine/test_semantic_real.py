"""The default install's local embedder (all-MiniLM-L6-v2 on ONNX Runtime), for real.

No resolver override here: the engine picks its source from the settings exactly as
`memoryd serve` does on a fresh install, with no network.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.core.fts_query import build_fts_query
from memoryd.engine import MemoryEngine
from memoryd.models import utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sqlite.dialect import fts_search
from tests.conftest import add

PARAPHRASES = [
    ("I drink coffee every morning", "what do I have for breakfast"),
    ("I adopted a golden retriever last spring", "do I have any pets?"),
    ("My sister moved to Berlin for her new job", "where does my sibling live"),
]
DISTRACTORS = [
    "The Eiffel tower is in Paris",
    "Quarterly revenue grew by eight percent",
    "I play tennis on Sundays",
    "The meeting was moved to Thursday afternoon",
]


def _engine(tmp_path: Path, **env: str) -> MemoryEngine:
    data = tmp_path / "data"
    full = {"MEMORYD_DATA_DIR": str(data), **env}
    return build_engine(EngineConfig.from_env(full, data_dir=data), full)


@pytest.fixture
def local_engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    engine = _engine(tmp_path)
    try:
        yield engine
    finally:
        engine.close()


def test_fresh_install_uses_the_local_model(local_engine: MemoryEngine) -> None:
    settings = local_engine.settings.get()
    assert settings.transformers_enabled is True  # default when the model is installed
    status = local_engine.status()["embedding"]
    assert status["source"] == "transformers"
    assert status["model"] == "all-MiniLM-L6-v2"
    assert status["dimensions"] == 384
    assert status["available"] is True
    add(local_engine, "alice", "I prefer dark mode")
    assert local_engine.drain(timeout=60)
    vector_store = local_engine.status()["vectorStore"]
    assert vector_store["rowCount"] == 1
    assert vector_store["signature"] == "transformers:all-MiniLM-L6-v2:384"


def test_semantic_retrieval_finds_paraphrases_keyword_search_misses(
    local_engine: MemoryEngine,
) -> None:
    for fact, _ in PARAPHRASES:
        add(local_engine, "alice", fact)
    for text in DISTRACTORS:
        add(local_engine, "alice", text)
    assert local_engine.drain(timeout=60)
    for fact, question in PARAPHRASES:
        semantic = local_engine.preview("alice", question, strategy="semantic", limit=3)
        assert semantic.hits[0].memory.content == fact, question
        assert semantic.hits[0].tier == "vector"
        hybrid = local_engine.preview("alice", question, strategy="hybrid", limit=3)
        assert fact in [h.memory.content for h in hybrid.hits[:2]], question
        # the FTS5 keyword tier alone does not find it (no shared content words)
        match = build_fts_query(question)
        assert match is not None
        flt = Filter(owners=("alice",), now=utcnow())
        keyword = fts_search(local_engine.store.db.read(), match, flt, 10)
        assert fact not in [h.memory.content for h in keyword], question


def test_missing_model_is_a_clear_message_and_keyword_search(tmp_path: Path) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    engine = _engine(tmp_path, MEMORY_TRANSFORMERS_MODEL_DIR=str(empty))
    try:
        assert engine.settings.get().transformers_enabled is False
        status = engine.status()["embedding"]
        assert status["available"] is False
        assert status["source"] is None
        add(engine, "alice", "I prefer dark mode in every editor")
        preview = engine.preview("alice", "dark mode", strategy="hybrid")
        assert [h.memory.content for h in preview.hits] == ["I prefer dark mode in every editor"]
        assert preview.hits[0].tier == "fts5"
        assert preview.resolution.fallback_reason
        # explicitly asking for transformers names the fix
        engine.settings.update({"embeddingSource": "transformers", "transformersEnabled": True})
        reason = engine.status()["embedding"]["reason"]
        assert "memoryd[local]" in reason or "not installed" in reason
    finally:
        engine.close()
