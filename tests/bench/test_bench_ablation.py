"""The ablation bench stage on the tiny synthetic conversation of test_eval_locomo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoryd.embedding import EmbeddingResolution
from memoryd.eval import locomo
from tests.eval.test_eval_locomo import CONVERSATION

REPO = Path(__file__).resolve().parents[2]

from bench import ablation  # noqa: E402


@pytest.fixture
def conversations(tmp_path: Path) -> list[locomo.Conversation]:
    (tmp_path / "conv-1.json").write_text(json.dumps(CONVERSATION), encoding="utf-8")
    return locomo.load_conversations(tmp_path)


@pytest.fixture
def hash_embedder() -> locomo.EvalEmbedder:
    import tests.embedders as embedders  # noqa: F401  (registers the deterministic "hash" source)

    return locomo.EvalEmbedder("hash", EmbeddingResolution("hash", "hash-64", 64, "test"))


def test_every_row_names_a_real_content_form_and_config_field() -> None:
    fields = set(locomo.eval_config(Path("/nonexistent")).__dataclass_fields__)
    for row in ablation.ROWS:
        assert row.content in locomo.CONTENT_FNS
        assert set(row.overrides) <= fields, row.label
    labels = [row.label for row in ablation.ROWS]
    assert len(labels) == len(set(labels))
    # the last cumulative row is the shipped default: no overrides, default content
    last = [row for row in ablation.ROWS if row.kind == "cumulative"][-1]
    assert not last.overrides
    assert last.content == "date+previous"


def test_rows_run_through_the_engine_and_differ_where_they_should(
    conversations: list[locomo.Conversation], hash_embedder: locomo.EvalEmbedder
) -> None:
    by_label = {row.label: row for row in ablation.ROWS}
    chosen = (
        by_label["+ z-score fusion (the default)"],
        by_label["keyword leg only (FTS5 BM25, memory and context field), turn context"],
        by_label["hybrid RRF (k 60), bare turns"],
        by_label["default with the context vector (a third leg, off by default)"],
    )
    done: list[str] = []
    rows, info = ablation.run_ablation(
        None, done.append, chosen, conversations=conversations, embedder=hash_embedder
    )
    default, keyword, rrf_bare, with_vector = rows
    assert [r["row"] for r in rows] == [row.label for row in chosen]  # in the rows' order
    assert len(done) == 4
    assert set(info["ingest_s"]) == {"date+previous", "date+previous keyword", "none"}
    for out in rows:
        assert set(out) >= {"row", "kind", "R@5", "R@10", "S@10", "tok@10", "R@10 c1", "p50_ms"}
        assert all(0.0 <= out[f"R@{k}"] <= 1.0 for k in (5, 10, 25))
    assert default["served_by"] == "hybrid"
    assert with_vector["served_by"] == "hybrid"
    assert keyword["served_by"] == "keyword"  # no embedder: the FTS5 path
    # turn context makes every stored turn longer: more tokens for the same k
    assert default["tok@10"] > rrf_bare["tok@10"]
