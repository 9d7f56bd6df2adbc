"""Pins the ranking arithmetic shared by all retrieval tiers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryd.core.scoring import (
    budget_walk,
    confidence,
    estimate_tokens,
    parse_metadata,
    passes_min_score,
    relevance_score,
    rrf_fuse,
)
from memoryd.models import Hit, Memory, MemoryType

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_hit(
    score: float = 0.0, vec_score: float | None = None, fts_score: float | None = None
) -> Hit:
    memory = Memory(
        id="m1",
        api_key_id="k",
        session_id="",
        type=MemoryType.FACTUAL,
        key="key",
        content="content",
        metadata={},
        created_at=T0,
        updated_at=T0,
    )
    return Hit(
        memory=memory,
        score=score,
        tier="fts5",
        tokens=2,
        vec_score=vec_score,
        fts_score=fts_score,
    )


# --- estimate_tokens -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        (None, 0),
        (42, 0),
        ("abc", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("12345678", 2),
        ("123456789", 3),
        ("a" * 100, 25),
    ],
)
def test_estimate_tokens(text: object, expected: int) -> None:
    assert estimate_tokens(text) == expected


# --- parse_metadata --------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, "", "   ", "not json", "{invalid json", "[1,2]", "5", 7])
def test_parse_metadata_rejects_non_objects(raw: object) -> None:
    assert parse_metadata(raw) == {}


def test_parse_metadata_json_object() -> None:
    assert parse_metadata('{"a":1,"b":"x"}') == {"a": 1, "b": "x"}


def test_parse_metadata_dict_is_copied() -> None:
    source = {"a": 1}
    result = parse_metadata(source)
    assert result == {"a": 1}
    result["b"] = 2
    assert source == {"a": 1}


# --- relevance_score -------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [("hello", 23), ("greeting", 23), ("zzz", 0), ("", 0), ("   ", 0), ("HELLO", 23)],
)
def test_relevance_score_reference_examples(query: str, expected: int) -> None:
    assert relevance_score("hello world", "", {"topic": "greeting"}, query) == expected


def test_relevance_score_counts_each_occurrence_in_content() -> None:
    # whole query +20, then 3 per occurrence of each token: hello x2, world x1.
    assert relevance_score("hello world hello", "", {}, "hello world") == 20 + 6 + 3


def test_relevance_score_counts_non_overlapping_occurrences() -> None:
    # "aaaa" holds "aa" twice without overlap (three times with overlap).
    assert relevance_score("aaaa", "", {}, "aa") == 20 + 6


def test_relevance_score_key_gets_flat_six_per_token() -> None:
    assert relevance_score("", "tooling:typescript", {}, "typescript") == 26
    # Repeats in the key do not add more than the flat 6.
    assert relevance_score("", "ts ts ts", {}, "ts") == 26


def test_relevance_score_key_tokens_without_whole_query() -> None:
    # Neither haystack holds "alpha beta" as a phrase; the key gets 6 per token.
    assert relevance_score("", "beta-alpha", {}, "alpha beta") == 12


def test_relevance_score_content_equal_to_key_is_not_the_key() -> None:
    # Content: 20 + 3*3 = 29 (a value-comparison bug would give it the key's 20 + 6).
    # Key: 20 + 6 = 26. Metadata "{}": 0.
    assert relevance_score("foo foo foo", "foo foo foo", {}, "foo") == 55


def test_relevance_score_metadata_uses_compact_unicode_json() -> None:
    # Compact separators make '"k":"v"' a contiguous phrase; ensure_ascii=False keeps é.
    assert relevance_score("", "", {"k": "v"}, '"k":"v"') == 23
    assert relevance_score("", "", {"city": "Zürich"}, "zürich") == 23


# --- rrf_fuse --------------------------------------------------------------------


def test_rrf_fuse_scores() -> None:
    fused = dict(rrf_fuse([["a", "b"], ["a", "c", "d"]], k=60))
    assert fused["a"] == pytest.approx(2 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 62)
    assert fused["d"] == pytest.approx(1 / 63)


def test_rrf_fuse_custom_k() -> None:
    assert dict(rrf_fuse([["a"]], k=1))["a"] == pytest.approx(1 / 2)


def test_rrf_fuse_weights() -> None:
    fused = dict(rrf_fuse([["a", "b"], ["b", "a"]], k=60, weights=[2.0, 0.5]))
    assert fused["a"] == pytest.approx(2.0 / 61 + 0.5 / 62)
    assert fused["b"] == pytest.approx(2.0 / 62 + 0.5 / 61)
    assert [i for i, _ in rrf_fuse([["a", "b"], ["b", "a"]], weights=[2.0, 0.5])] == ["a", "b"]
    assert [i for i, _ in rrf_fuse([["a", "b"], ["b", "a"]], weights=[0.5, 2.0])] == ["b", "a"]


def test_rrf_fuse_orders_by_score() -> None:
    ids = [i for i, _ in rrf_fuse([["x", "y", "z"], ["z", "y"]])]
    # y: 1/62 + 1/62, z: 1/63 + 1/61 (slightly more), x: 1/61.
    assert ids == ["z", "y", "x"]


def test_rrf_fuse_ties_by_first_appearance() -> None:
    # Same rank in lists of equal weight: exact ties, broken by first appearance.
    ids = [i for i, _ in rrf_fuse([["p", "q"], ["r", "s"]])]
    assert ids == ["p", "r", "q", "s"]


def test_rrf_fuse_ties_by_best_rank_before_first_appearance() -> None:
    # k=0: x = 2/1, b = 2/2 = 1, a = 1/1 = 1. b appears before a, but a's best rank
    # (1) beats b's (2), so a comes first.
    fused = rrf_fuse([["x", "b"], ["a"]], k=0, weights=[2.0, 1.0])
    assert dict(fused) == {"x": 2.0, "b": 1.0, "a": 1.0}
    assert [i for i, _ in fused] == ["x", "a", "b"]


def test_rrf_fuse_duplicate_in_one_list_counts_once() -> None:
    assert dict(rrf_fuse([["a", "a"]]))["a"] == pytest.approx(1 / 61)


def test_rrf_fuse_empty_and_bad_weights() -> None:
    assert rrf_fuse([]) == []
    assert rrf_fuse([[], []]) == []
    with pytest.raises(ValueError, match="weights"):
        rrf_fuse([["a"]], weights=[1.0, 1.0])


# --- budget_walk -----------------------------------------------------------------


def ident(n: int) -> int:
    return n


def test_budget_walk_fills_budget() -> None:
    taken = budget_walk([25] * 10, 60, ident)
    assert taken == [25, 25]
    assert sum(taken) <= 60


def test_budget_walk_skips_instead_of_stopping() -> None:
    assert budget_walk([50, 30, 10], 45, ident) == [30, 10]


def test_budget_walk_oversized_first_item_fallback() -> None:
    assert budget_walk([100], 60, ident) == [100]
    assert budget_walk([100, 70], 60, ident) == [100]
    assert budget_walk([120], 60, ident) == [120]  # exactly 2x still allowed


def test_budget_walk_fallback_only_considers_first_item() -> None:
    assert budget_walk([130], 60, ident) == []
    # The second item would fit the 2x rule, but only the top one is eligible.
    assert budget_walk([130, 100], 60, ident) == []


def test_budget_walk_limit() -> None:
    assert budget_walk([1, 1, 1, 1], 100, ident, limit=2) == [1, 1]
    assert budget_walk([50, 1, 1], 10, ident, limit=1) == [1]
    assert budget_walk([1, 1], 100, ident, limit=0) == []


def test_budget_walk_clamps_budget() -> None:
    assert budget_walk([1, 1], 0, ident) == [1]
    assert budget_walk([1, 1], -5, ident) == [1]
    assert budget_walk([2], 0, ident) == [2]  # 2 <= 2 x 1
    assert budget_walk([3], 0, ident) == []
    assert budget_walk([16000, 1], 10**9, ident) == [16000]


def test_budget_walk_empty_and_generic_items() -> None:
    assert budget_walk([], 100, ident) == []
    words = ["aaaa", "bbbbbbbbbbbb", "cc"]
    assert budget_walk(words, 2, estimate_tokens) == ["aaaa", "cc"]


# --- confidence / passes_min_score ----------------------------------------------


def test_confidence_prefers_vector_score() -> None:
    assert confidence(make_hit(score=100, vec_score=0.42, fts_score=9.0)) == pytest.approx(0.42)
    assert confidence(make_hit(vec_score=1.7)) == 1.0
    assert confidence(make_hit(vec_score=-0.3)) == 0.0


def test_confidence_from_fts_score() -> None:
    assert confidence(make_hit(score=100, fts_score=3.0)) == pytest.approx(0.75)
    assert confidence(make_hit(fts_score=0.0)) == 0.0
    assert confidence(make_hit(fts_score=-2.0)) == 0.0


def test_confidence_from_keyword_score() -> None:
    assert confidence(make_hit(score=20)) == pytest.approx(0.5)
    assert confidence(make_hit(score=60)) == pytest.approx(0.75)
    assert confidence(make_hit(score=0)) == 0.0
    assert confidence(make_hit(score=-5)) == 0.0


def test_confidence_is_within_unit_interval() -> None:
    for hit in (make_hit(score=1e300), make_hit(fts_score=1e300), make_hit(vec_score=0.5)):
        assert 0.0 <= confidence(hit) <= 1.0


def test_passes_min_score() -> None:
    strong = make_hit(vec_score=0.8)
    weak = make_hit(vec_score=0.2)
    assert passes_min_score([weak], None) is True
    assert passes_min_score([], 0.9) is True
    assert passes_min_score([strong], 0.5) is True
    assert passes_min_score([strong], 0.8) is True  # inclusive
    assert passes_min_score([weak], 0.5) is False
    # Only the top hit is judged.
    assert passes_min_score([weak, strong], 0.5) is False
    assert passes_min_score([strong, weak], 0.5) is True
