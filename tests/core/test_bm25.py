"""``core.bm25``: the ranking the PostgreSQL store re-scores keyword candidates with."""

from __future__ import annotations

import math

import pytest

from memoryd.core.bm25 import Collection, idf, parse_tsvector, score


def test_parse_tsvector_weighs_content_over_key() -> None:
    terms = parse_tsvector("'berlin':3A 'live':2A,5B 'o''neil':1 'lisbon':4A,6A")
    assert terms == {"berlin": 1.0, "live": 1.5, "o'neil": 0.5, "lisbon": 2.0}
    assert parse_tsvector("") == {}


def test_idf_is_fts5s_and_never_negative() -> None:
    assert idf(1000, 1) == pytest.approx(math.log(999.5 / 1.5))
    assert idf(10, 10) == pytest.approx(1e-6)  # in every document: no evidence
    # A cached total older than a fresh term count (the load run found this as a 500).
    assert idf(5, 30) == pytest.approx(1e-6)
    assert idf(0, 0) == pytest.approx(1e-6)


def test_rare_terms_outweigh_common_ones_and_long_documents_are_damped() -> None:
    stats = Collection(1000, 8.0, {"user": 900, "penicillin": 3})
    rare = score({"penicillin": 1.0}, ["user", "penicillin"], stats)
    common = score({"user": 1.0}, ["user", "penicillin"], stats)
    assert rare > common > 0
    short = score({"penicillin": 1.0, "x": 1.0}, ["penicillin"], stats)
    long = score({"penicillin": 1.0, **{f"w{i}": 1.0 for i in range(40)}}, ["penicillin"], stats)
    assert short > long
    assert score({"other": 1.0}, ["penicillin"], stats) == 0.0
