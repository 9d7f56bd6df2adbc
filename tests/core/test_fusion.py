"""Hybrid ranking: score fusion, the neighbour and session priors, the date cue.

Pure units for ``core.fusion`` and ``core.temporal``, then the same features through
the engine (real SQLite, sqlite-vec and the deterministic hash embedder), each
compared with the feature switched off so that a broken feature fails here.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.core.fusion import ContextWeights, apply_context, score_fuse
from memoryd.core.temporal import mentioned_dates, overlaps
from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory, utcnow
from memoryd.storage.sql import memories as sql
from tests.conftest import add, make_engine
from tests.embedders import fixed_resolver

# -- score_fuse ------------------------------------------------------------------------


def test_score_fusion_keeps_margins_that_rrf_drops() -> None:
    fts = [("a", 10.0), ("b", 2.0)]
    vec = [("b", 0.9), ("a", 0.85)]
    fused = dict(score_fuse([fts, vec]))
    # a: (1 + 0.85/0.9) / 2; b: (0.2 + 1) / 2: a's big keyword lead wins
    assert fused["a"] == pytest.approx((1 + 0.85 / 0.9) / 2)
    assert fused["b"] == pytest.approx(0.6)
    assert next(iter(fused)) == "a"


def test_an_id_missing_from_a_leg_gets_that_legs_lowest_value() -> None:
    fused = dict(score_fuse([[("a", 4.0), ("b", 1.0)], [("c", 0.8)]]))
    assert fused["c"] == pytest.approx((0.25 + 1.0) / 2)
    assert fused["a"] == pytest.approx((1.0 + 1.0) / 2)


def test_leg_weights_and_unusable_legs() -> None:
    fused = dict(score_fuse([[("a", 2.0), ("b", 1.0)], [("b", 1.0), ("a", 0.5)]], [3.0, 1.0]))
    assert fused["a"] == pytest.approx((3 * 1.0 + 0.5) / 4)
    # a leg with no positive score has no scale: the other leg decides alone
    assert score_fuse([[("a", 0.0)], [("b", 0.5), ("a", 0.25)]]) == [("b", 1.0), ("a", 0.5)]
    assert score_fuse([[], []]) == []
    with pytest.raises(ValueError, match="one entry per leg"):
        score_fuse([[("a", 1.0)]], [1.0, 2.0])


def test_standardised_fusion_lets_a_bunched_leg_speak() -> None:
    """Cosine similarities bunch together (0.80 vs 0.78); divided by the best they barely
    differ, as z-scores they differ as much as the keyword leg's spread scores do."""
    fts = [("a", 9.0), ("b", 3.0), ("c", 2.0)]
    vec = [("b", 0.80), ("c", 0.79), ("a", 0.70)]
    by_max = [item for item, _ in score_fuse([fts, vec])]
    by_z = dict(score_fuse([fts, vec], standardise=True))
    assert by_max[0] == "a"  # the keyword lead wins once the cosines are squashed
    assert by_z["b"] > by_z["a"]  # b is first in one leg, close second in the other
    z = dict(score_fuse([fts], standardise=True))
    assert z["c"] == 0.0  # shifted: the weakest scores 0, the rest by their z distance
    assert z["a"] == pytest.approx((9 - 2) / statistics.pstdev([9 / 9, 3 / 9, 2 / 9]) / 9)
    assert score_fuse([[("a", 1.0), ("b", 1.0)]], standardise=True) == [("a", 0.0), ("b", 0.0)]


@given(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(-5, 50)), max_size=12),
    st.lists(st.tuples(st.sampled_from("defghijk"), st.floats(-1, 1)), max_size=12),
)
def test_score_fusion_is_a_sorted_ranking_of_every_id(
    fts: list[tuple[str, float]], vec: list[tuple[str, float]]
) -> None:
    fused = score_fuse([fts, vec])
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    ids = [i for i, _ in fused]
    assert len(ids) == len(set(ids))
    usable = [leg for leg in (fts, vec) if leg and max(s for _, s in leg) > 0]
    assert set(ids) == {i for leg in usable for i, _ in leg}


# -- apply_context ---------------------------------------------------------------------


def test_a_neighbour_of_a_strong_hit_gains_and_an_isolated_one_does_not() -> None:
    ranked = [("strong", 1.0), ("lonely", 0.5), ("next", 0.5), ("weak", 0.0)]
    neighbours = {"next": ("strong",), "strong": ("next",)}
    sessions = dict.fromkeys(("strong", "lonely", "next", "weak"), "s")
    out = dict(apply_context(ranked, neighbours, sessions, ContextWeights(0.3, 0.0)))
    assert out["next"] == pytest.approx(0.5 + 0.3 * 1.0)
    assert out["lonely"] == pytest.approx(0.5)
    assert out["strong"] == pytest.approx(1.0 + 0.3 * 0.5)
    assert list(out)[:2] == ["strong", "next"]


def test_the_strongest_session_lifts_its_members() -> None:
    ranked = [("a1", 1.0), ("b1", 0.9), ("a2", 0.8), ("b2", 0.1), ("floor", 0.0)]
    sessions = {"a1": "A", "a2": "A", "b1": "B", "b2": "B", "floor": "C"}
    out = dict(apply_context(ranked, {}, sessions, ContextWeights(0.0, 0.5, session_top=2)))
    # A's strength (1.0 + 0.8) / 2 = 0.9 is the best: its members gain the full 0.5
    assert out["a2"] == pytest.approx(0.8 + 0.5)
    assert out["b1"] == pytest.approx(0.9 + 0.5 * 0.5 / 0.9)
    assert out["floor"] == pytest.approx(0.0)
    assert list(out)[:3] == ["a1", "a2", "b1"]


def test_context_off_or_trivial_input_changes_nothing() -> None:
    ranked = [("a", 0.7), ("b", 0.2)]
    assert apply_context(ranked, {"a": ("b",)}, {}, ContextWeights(0.0, 0.0)) == ranked
    assert apply_context([], {}, {}, ContextWeights()) == []


# -- temporal --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did Nate do on 9 October, 2022?", [(date(2022, 10, 9), date(2022, 10, 9))]),
        ("recreation on March 16, 2022 or so", [(date(2022, 3, 16), date(2022, 3, 16))]),
        ("the 3rd of Sept 2021", [(date(2021, 9, 3), date(2021, 9, 3))]),
        ("stored 2024-02-29 at noon", [(date(2024, 2, 29), date(2024, 2, 29))]),
        ("anything in May 2023?", [(date(2023, 5, 1), date(2023, 5, 31))]),
        ("December, 1999 was cold", [(date(1999, 12, 1), date(1999, 12, 31))]),
        ("31 February, 2023 and 2023-13-01 are not days", [(date(2023, 2, 1), date(2023, 2, 28))]),
        ("I may go there 2023 or not, last week", []),
    ],
)
def test_mentioned_dates(text: str, expected: list[tuple[date, date]]) -> None:
    assert mentioned_dates(text) == expected


def test_repeated_texts_get_their_own_copy_of_the_cached_dates() -> None:
    """The scan is cached per text; a caller changing its list changes no later answer."""
    first = mentioned_dates("met on 9 October, 2022")
    first.clear()
    assert mentioned_dates("met on 9 October, 2022") == [(date(2022, 10, 9), date(2022, 10, 9))]


def test_overlap_allows_a_few_days_of_slack() -> None:
    asked = mentioned_dates("on March 16, 2022")
    assert overlaps(asked, mentioned_dates("[17 March, 2022] yesterday I went bowling"))
    assert not overlaps(asked, mentioned_dates("[25 March, 2022] bowling again"))
    assert overlaps(mentioned_dates("in March 2022"), mentioned_dates("25 March, 2022"))
    assert not overlaps(asked, [])


@given(st.text(max_size=300))
def test_no_text_breaks_date_parsing(text: str) -> None:
    for start, end in mentioned_dates(text):
        assert start <= end


# -- through the engine ------------------------------------------------------------------


def _engine(tmp_path: Path, name: str, env: Mapping[str, str]) -> MemoryEngine:
    data = tmp_path / name
    return make_engine(data, env, resolver=fixed_resolver("hash", 64))


OFF = {"MEMORY_NEIGHBOUR_WEIGHT": "0", "MEMORY_SESSION_WEIGHT": "0", "MEMORY_DATE_BOOST": "0"}


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[dict[str, MemoryEngine]]:
    engines = {"on": _engine(tmp_path, "on", {}), "off": _engine(tmp_path, "off", OFF)}
    try:
        yield engines
    finally:
        for eng in engines.values():
            eng.close()


def _scores(eng: MemoryEngine, query: str) -> dict[str, float]:
    preview = eng.preview("alice", query, strategy="hybrid", limit=50)
    assert preview.resolution.strategy_used == "hybrid"
    return {h.memory.key: h.score for h in preview.hits}


def test_neighbours_are_the_adjacent_writes_of_the_same_owner_and_session(
    engine: MemoryEngine,
) -> None:
    ids = {}
    for owner, session, key in [
        ("alice", "s1", "a1"),
        ("bob", "s1", "b1"),  # interleaved writes of another owner do not break adjacency
        ("alice", "s2", "x1"),
        ("alice", "s1", "a2"),
        ("alice", "s1", "a3"),
    ]:
        memory, _ = engine.create(NewMemory(owner, f"content {key}", key=key, session_id=session))
        ids[key] = memory.id
    found = sql.neighbours(engine.store.db.read(), list(ids.values()))
    assert found[ids["a1"]] == (ids["a2"],)
    assert found[ids["a2"]] == (ids["a1"], ids["a3"])
    assert found[ids["a3"]] == (ids["a2"],)
    assert found[ids["b1"]] == ()
    assert found[ids["x1"]] == ()


def test_the_context_priors_lift_a_memory_told_beside_a_strong_match(
    pair: dict[str, MemoryEngine],
) -> None:
    for eng in pair.values():
        for key, session, text in [
            ("isolated", "s0", "we argued about the kayak trip budget"),
            ("filler", "s0", "the weather was grey all week"),
            ("strong", "s1", "the kayak trip to the lake was booked for june"),
            ("beside", "s1", "we argued about the kayak trip packing list"),
        ]:
            add(eng, "alice", text, key=key, session_id=session)
        eng.drain()
    on, off = (_scores(pair[k], "kayak trip booked") for k in ("on", "off"))
    # both "beside" and "isolated" match the same words; only "beside" was told next to
    # (and in the session of) the strong match
    assert on["beside"] - on["isolated"] > off["beside"] - off["isolated"] + 0.2


def test_a_date_named_in_the_query_lifts_memories_of_that_day(tmp_path: Path) -> None:
    engines = {
        "date": _engine(tmp_path, "date", {**OFF, "MEMORY_DATE_BOOST": "0.1"}),
        "off": _engine(tmp_path, "off", OFF),
    }
    try:
        for eng in engines.values():
            add(eng, "alice", "On 2022-10-09 we played a board game at the convention", key="dated")
            add(eng, "alice", "we played a board game at the cafe last spring", key="undated")
            eng.drain()

        def lift(query: str) -> dict[str, float]:
            on, off = (_scores(engines[k], query) for k in ("date", "off"))
            return {key: on[key] - off[key] for key in off}

        assert lift("which board game did we play on 9 October, 2022?") == pytest.approx(
            {"dated": 0.1, "undated": 0.0}
        )
        # the day a memory was stored counts as one of its dates
        today = utcnow().strftime("%d %B, %Y")
        assert lift(f"what board game did we play on {today}?") == pytest.approx(
            {"dated": 0.1, "undated": 0.1}
        )
        assert lift("what board game did we play?") == pytest.approx({"dated": 0.0, "undated": 0.0})
    finally:
        for eng in engines.values():
            eng.close()
