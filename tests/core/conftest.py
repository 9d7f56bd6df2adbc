"""The stdlib core: extraction rules, scoring, fusion, injection, the subjects and
look-alike tables. Most tests here are pure functions; the extraction ones that score a
labelled split go through ``eval_engine``, the engine the extraction eval uses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.engine import MemoryEngine


@pytest.fixture
def eval_engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    """The engine the extraction eval scores through: rules and the packaged attribute
    classifier, keyword retrieval, a real SQLite file."""
    from memoryd.eval import locomo

    eng = locomo.open_eval_engine(tmp_path / "data", locomo.no_embedder())
    try:
        yield eng
    finally:
        eng.close()
