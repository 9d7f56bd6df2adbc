"""The keyword index knows whose each memory is (migration 0011): FTS5 ranks only the
filter's owners and end user, whatever characters their ids hold."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sqlite.dialect import SqliteDialect, fts_search, scope_match, scope_token

ODD_IDS = ["plain", 'q"uote', "two words", "Ünïcode-ключ", "x" * 190, "u", "OR", "NEAR"]


def put(engine: MemoryEngine, owner: str, text: str, user: str = "") -> None:
    engine.create(NewMemory(api_key_id=owner, content=text, user_id=user))


def fts_rows(engine: MemoryEngine, match: str) -> int:
    conn = engine.store.db.read()
    return len(
        conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", [match]).fetchall()
    )


def test_the_index_itself_keeps_to_the_owner(engine: MemoryEngine) -> None:
    for i in range(30):
        put(engine, f"owner{i % 3}", f"row {i} about the orbit")
    flt = Filter(owners=("owner1",), now=utcnow())
    scope = scope_match(flt)
    assert scope
    # Without the SQL filter, FTS5 alone finds 10 of the 30 rows that match the word.
    assert fts_rows(engine, '"orbit"') == 30
    assert fts_rows(engine, f'{scope} AND {{content key context}} : ("orbit")') == 10
    found = fts_search(engine.store.db.read(), '"orbit"', flt, 50)
    assert len(found) == 10
    assert {h.memory.api_key_id for h in found} == {"owner1"}


@pytest.mark.parametrize("odd", ODD_IDS)
def test_odd_owner_and_end_user_ids_find_their_own_only(engine: MemoryEngine, odd: str) -> None:
    put(engine, odd, "the shared garden plan")
    put(engine, odd, "my garden has tomatoes", user=odd)
    put(engine, odd, "her garden has roses", user=odd + "-other")
    put(engine, odd + "2", "another key's garden")
    conn = engine.store.db.read()

    def contents(flt: Filter) -> set[str]:
        return {h.memory.content for h in fts_search(conn, '"garden"', flt, 50)}

    now = utcnow()
    assert contents(Filter(owners=(odd,), now=now, user_id=odd)) == {
        "the shared garden plan",
        "my garden has tomatoes",
    }
    assert contents(Filter(owners=(odd,), now=now, user_id="")) == {"the shared garden plan"}
    assert contents(Filter(owners=(odd,), now=now)) == {
        "the shared garden plan",
        "my garden has tomatoes",
        "her garden has roses",
    }
    assert contents(Filter(owners=(odd, odd + "2"), now=now, user_id="")) == {
        "the shared garden plan",
        "another key's garden",
    }
    assert contents(Filter(owners=(), now=now)) == set()


def test_query_words_never_match_the_scope_tokens(engine: MemoryEngine) -> None:
    """ "u" is the shared-memory token: a query saying "u" must not match every row."""
    put(engine, "k", "nothing to see")
    put(engine, "k", "u can call me Al")
    conn = engine.store.db.read()
    for weight in (0.0, 0.2):
        found = fts_search(conn, '"u"', Filter(owners=("k",), now=utcnow()), 10, weight)
        assert [h.memory.content for h in found] == ["u can call me Al"]


def test_an_owner_or_end_user_change_moves_the_row(engine: MemoryEngine) -> None:
    put(engine, "k", "the lighthouse keeper", user="ann")

    def change(conn: object) -> None:
        conn.execute("UPDATE memories SET user_id = 'bob', api_key_id = 'k2'")  # type: ignore[attr-defined]

    engine.store.db.write(change)
    conn = engine.store.db.read()
    now = utcnow()
    assert fts_search(conn, '"lighthouse"', Filter(owners=("k",), now=now, user_id="ann"), 5) == []
    moved = fts_search(conn, '"lighthouse"', Filter(owners=("k2",), now=now, user_id="bob"), 5)
    assert [h.memory.content for h in moved] == ["the lighthouse keeper"]
    old = scope_match(Filter(owners=("k",), now=now, user_id="ann"))
    assert fts_rows(engine, f'{old} AND "lighthouse"') == 0

    def check(conn: object) -> None:  # raises when the index disagrees with the rows
        conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")  # type: ignore[attr-defined]

    engine.store.db.write(check)


class Recording:
    """A read connection that remembers the MATCH expressions it was given."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.matches: list[str] = []

    def execute(self, statement: str, params: Any = ()) -> Any:
        if "MATCH ?" in statement:
            self.matches.append(next(p for p in params if isinstance(p, str) and " : " in p))
        return self.conn.execute(statement, params)


def search(engine: MemoryEngine, flt: Filter) -> tuple[list[str], str]:
    dialect = SqliteDialect(fts5=True)
    recorder = Recording(engine.store.db.read())
    found = dialect.keyword_search(recorder, "garden", flt, 50)
    return sorted(h.memory.content for h in found), recorder.matches[-1]


def test_scope_tokens_are_used_only_where_they_narrow(engine: MemoryEngine) -> None:
    """One key, no end users: the tokens would cover every row and only cost time."""
    for i in range(4):
        put(engine, "solo", f"garden note {i}")
    now = utcnow()
    found, match = search(engine, Filter(owners=("solo",), now=now, user_id=""))
    assert len(found) == 4
    assert "fts_scope" not in match
    # Other keys arrive: the owner token narrows; the end user, with no end users, not.
    for i in range(12):
        put(engine, f"other{i % 3}", f"garden row {i}")
    found, match = search(engine, Filter(owners=("solo",), now=now, user_id=""))
    assert len(found) == 4
    assert scope_token("solo") in match
    assert '"u"' not in match
    # Many end users of one key: the end-user token narrows too.
    for i in range(8):
        put(engine, "solo", f"garden of user {i}", user=f"user{i}")
    found, match = search(engine, Filter(owners=("solo",), now=now, user_id="user3"))
    assert found == [*(f"garden note {i}" for i in range(4)), "garden of user 3"]
    assert scope_token("user3") in match


# -- terms in half of the file or more: nothing to BM25, all the cost of ranking ---------


def keyword(conn: Any, query: str, flt: Filter) -> list[str]:
    return [h.memory.content for h in SqliteDialect(fts5=True).keyword_search(conn, query, flt, 50)]


def test_a_term_in_half_the_rows_is_left_out(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "user" in every extracted fact: FTS5 floors its IDF (the score does not move),
    yet ranking it walked every row that has it."""
    import memoryd.storage.sqlite.dialect as dialect

    monkeypatch.setattr(dialect, "SPARSE_MIN_ROWS", 20)
    for i in range(37):
        put(engine, "k", f"User note {i} about the weather")
    put(engine, "k", "User plays the piano every day")
    put(engine, "k", "User sold the old piano, piano lessons ended")
    put(engine, "k", "a piano tuner came by")
    conn = engine.store.db.read()
    flt = Filter(owners=("k",), now=utcnow())
    only = keyword(conn, "does the user play piano", flt)
    # The piano rows, in BM25 order of the full query, and no row that has only "user".
    full = [h.memory.content for h in fts_search(conn, '"user" OR "play" OR "piano"', flt, 50)]
    assert only == [c for c in full if "piano" in c]
    assert len(only) == 3
    assert len(full) == 40
    # Every term that common: the rarest is kept, the search still answers.
    assert len(keyword(conn, "user", flt)) == 39
    # A small file keeps every term.
    monkeypatch.setattr(dialect, "SPARSE_MIN_ROWS", 1000)
    assert len(keyword(conn, "does the user play piano", flt)) == 40


# -- the index's best matches first, the filter on those only ---------------------------


def test_ranking_by_the_index_first_answers_what_the_join_answers(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fts_search`` ranks by the index alone, then filters the best 4 x limit; when too
    few of those pass (here: the end user's own rows are the worst matches) the full
    join answers. Either way, the same memories in the same order as the join alone."""
    import memoryd.storage.sqlite.dialect as dialect

    for i in range(60):  # strong matches, another end user's
        put(engine, "k", f"orbit orbit orbit report {i}", user="other")
    for i in range(12):  # weaker matches, this end user's
        put(engine, "k", f"an orbit note {i} with many more words in it", user="me")
    for i in range(30):  # strong matches, shared with every end user
        put(engine, "k", f"orbit orbit shared {i}")
    conn = engine.store.db.read()
    calls: list[bool] = []
    original = dialect._best_first

    def counted(*args: Any) -> Any:
        found = original(*args)
        calls.append(found is not None)
        return found

    def both(flt: Filter, limit: int) -> tuple[list[Any], list[Any]]:
        monkeypatch.setattr(dialect, "_best_first", counted)
        first = fts_search(conn, '"orbit"', flt, limit, scoped=(False, False))
        monkeypatch.setattr(dialect, "_best_first", lambda *a: None)
        joined = fts_search(conn, '"orbit"', flt, limit, scoped=(False, False))
        return first, joined

    now = utcnow()
    for limit in (1, 5, 20, 40):
        for flt in (Filter(owners=("k",), now=now), Filter(owners=("k",), now=now, user_id="me")):
            first, joined = both(flt, limit)
            assert [(h.memory.id, round(h.relevance, 9)) for h in first] == [
                (h.memory.id, round(h.relevance, 9)) for h in joined
            ]
            assert len(first) == min(limit, 102 if flt.user_id is None else 42)
    assert True in calls  # the best matches answered
    assert False in calls  # and the join, when the end user's rows ranked low
