"""Large owners' keyword postings in memory on PostgreSQL (``storage.postgres.keywords``):
the SQL search's ranking, fresh after writes from any server through the change feed,
filtered by SQL. A real PostgreSQL; the copies start at 60 memories here."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd import bootstrap
from memoryd.engine import MemoryEngine
from memoryd.models import MemoryPatch, NewMemory, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.postgres.keywords import ResidentKeywords, parse_tsvector
from tests.conftest import make_engine

TEXT = """anna lisbon coffee hiking painted sunrise lake dogs running marathon charity
    race sister brother guitar concert pottery museum recipe pasta garden tomatoes
    adoption agency counseling career violin kayak tango sushi"""
WORDS = TEXT.split()
OWNER = "big"


@pytest.fixture
def engines(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[MemoryEngine, MemoryEngine]]:
    """Two servers on one database, each with its own copies."""
    from tests.embedders import no_source

    monkeypatch.setattr(bootstrap, "PG_KEYWORD_MIN_ROWS", 60)
    env = {"MEMORYD_DATABASE_URL": pg_url, "MEMORY_RESIDENT_MIN_ROWS": "60"}
    one = make_engine(tmp_path / "one", env, resolver=no_source)
    two = make_engine(tmp_path / "two", env, resolver=no_source)
    try:
        yield one, two
    finally:
        one.close()
        two.close()


def _resident(engine: MemoryEngine) -> ResidentKeywords:
    keywords = getattr(engine.store, "keywords", None)
    assert isinstance(keywords, ResidentKeywords)
    return keywords


def _filter(user: str | None = None) -> Filter:
    return Filter(owners=(OWNER,), now=utcnow(), user_id=user)


def _search(engine: MemoryEngine, query: str, user: str | None = None) -> list[tuple[str, float]]:
    found = engine.store.read().keyword_search(query, _filter(user), 10)
    return [(h.memory.id, round(h.relevance, 6)) for h in found]


def _sql(engine: MemoryEngine, query: str) -> list[tuple[str, float]]:
    dialect: Any = engine.store.dialect  # type: ignore[attr-defined]
    kept, dialect.resident = dialect.resident, None
    try:
        return _search(engine, query)
    finally:
        dialect.resident = kept


def _fill(engine: MemoryEngine, n: int = 150) -> None:
    rng = random.Random(7)
    for i in range(n):  # no word twice in a memory: the SQL's ranking is then exact
        words = rng.sample(WORDS, rng.randint(3, 8))
        engine.create(NewMemory(OWNER, " ".join(words) + f" note{i}"))


def _built(engine: MemoryEngine) -> None:
    _search(engine, "coffee")  # the first search of a large owner schedules the build
    assert _resident(engine).wait_for_builds(120)
    assert _resident(engine).stats()["owners"] == 1


def _eventually(check: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_a_tsvector_is_read_as_sql_counts_it() -> None:
    length, terms = parse_tsvector("'anna':1A,4B 'café':2A 'it''s':3C 'strip'")
    assert length == 4  # length(tsv) counts lexemes, positions or not
    assert terms == {"anna": [1, 1, 0], "café": [1, 0, 0], "it's": [0, 0, 1]}


def test_a_large_owner_is_ranked_from_its_copy_as_sql_ranks_it(
    engines: tuple[MemoryEngine, MemoryEngine],
) -> None:
    one, _ = engines
    _fill(one)
    _built(one)
    answered = _resident(one).answered
    for query in ("coffee", "hiking lake sunrise", "Anna plays the guitar", "pasta recipe"):
        copied, sql = _search(one, query), _sql(one, query)
        assert [s for _, s in copied] == [s for _, s in sql], query  # the same scores
        last = sql[-1][1]  # and the same memories above the last score (ties cut either way)
        assert {i for i, s in copied if s > last} == {i for i, s in sql if s > last}
    assert _resident(one).answered >= answered + 4
    assert one.store.storage_status()["residentKeywords"]["rows"] == 150


def test_writes_from_another_server_reach_the_copy(
    engines: tuple[MemoryEngine, MemoryEngine],
) -> None:
    one, two = engines
    _fill(one)
    _built(one)
    added, _ = two.create(NewMemory(OWNER, "zebrafish aquarium"))
    assert _eventually(lambda: [i for i, _ in _search(one, "zebrafish")] == [added.id])
    two.update(added.id, MemoryPatch(content="goldfish aquarium"), owner=OWNER)
    assert _eventually(lambda: [i for i, _ in _search(one, "goldfish")] == [added.id])
    # the old words stay in the key (derived from the first content), as SQL reads it
    assert _search(one, "zebrafish") == _sql(one, "zebrafish")
    two.delete(added.id, owner=OWNER)
    assert _eventually(lambda: _search(one, "goldfish") == [])
    answered = _resident(one).answered
    assert _search(one, "aquarium") == _sql(one, "aquarium") == []
    assert _resident(one).answered == answered + 1  # the copy answered, not SQL


def test_the_filter_still_decides_who_sees_what(
    engines: tuple[MemoryEngine, MemoryEngine],
) -> None:
    one, _ = engines
    _fill(one)
    mine, _ = one.create(NewMemory(OWNER, "okapi sanctuary", user_id="u1"))
    theirs, _ = one.create(NewMemory(OWNER, "okapi documentary", user_id="u2"))
    _built(one)
    answered = _resident(one).answered
    assert [i for i, _ in _search(one, "okapi", user="u1")] == [mine.id]
    assert [i for i, _ in _search(one, "okapi", user="u2")] == [theirs.id]
    assert _resident(one).answered == answered + 2  # from the copy, through the filter
