"""The FTS5 query builder must never produce a MATCH syntax error, nor lose results."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.core.fts_query import STOPWORDS, build_fts_query, query_tokens

ROWS = [
    "I love C++ programming",
    "my favorite editor is vim",
    "NEAR the station",
    "quoted phrase here",
    "Café déjà vu",
    "北京 天气",
]


@pytest.fixture(scope="module")
def conn() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, key, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.executemany("INSERT INTO t(rowid, content, key) VALUES (?, ?, '')", enumerate(ROWS, 1))
    yield db
    db.close()


def search(db: sqlite3.Connection, text: object) -> list[int]:
    query = build_fts_query(text)
    if query is None:
        return []
    return [row[0] for row in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,))]


def rowid_of(content: str) -> int:
    return ROWS.index(content) + 1


HOSTILE = [
    "what is C++?",
    "what's my favorite editor",
    '"quoted',
    "a OR",
    "NEAR(",
    "NEAR",
    "*",
    "-x",
    "AND",
    "NOT",
    "OR",
    "col:val",
    "content:vim",
    "^start",
    "(",
    ")",
    "{}",
    "''",
    '""',
    '"a" OR "b',
    "vim*",
    "+",
    "🙂🎉 emoji",
    "🙂",
    "北京天气怎么样",
    "snake_case_name",
    "___",
    "\x00\x01",
    "x" * 5000,
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_inputs_never_raise(conn: sqlite3.Connection, text: str) -> None:
    search(conn, text)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_arbitrary_text_never_raises(conn: sqlite3.Connection, text: str) -> None:
    search(conn, text)


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("what is C++?", "I love C++ programming"),
        ("what's my favorite editor", "my favorite editor is vim"),
        ('"quoted', "quoted phrase here"),
        ("what's near the STATION?", "NEAR the station"),
        ("cafe", "Café déjà vu"),
        ("programs", "I love C++ programming"),  # porter stemming applies to quoted terms
        ("北京", "北京 天气"),
    ],
)
def test_results_are_not_lost(conn: sqlite3.Connection, text: str, content: str) -> None:
    assert rowid_of(content) in search(conn, text)


def test_or_semantics_match_any_term(conn: sqlite3.Connection) -> None:
    found = search(conn, "vim station")
    assert rowid_of("my favorite editor is vim") in found
    assert rowid_of("NEAR the station") in found


def test_build_fts_query_shape() -> None:
    assert build_fts_query("what is C++?") == '"c"'
    assert build_fts_query("Favorite EDITOR editor") == '"favorite" OR "editor"'
    assert build_fts_query("NEAR( col:val") == '"col" OR "val"'


@pytest.mark.parametrize("text", [None, 42, b"vim", "", "   ", "what is the", "?!*", "___"])
def test_build_fts_query_none_when_no_tokens(text: object) -> None:
    assert build_fts_query(text) is None


def test_query_tokens_drops_stopwords_and_dedupes() -> None:
    assert query_tokens("What's my favorite editor? Editor!") == ["favorite", "editor"]
    assert query_tokens("the The THE") == []


def test_query_tokens_keep_stopwords() -> None:
    assert query_tokens("What's the editor", keep_stopwords=True) == ["what", "s", "the", "editor"]


def test_query_tokens_unicode_and_underscores() -> None:
    assert query_tokens("Straße café 北京 42") == ["strasse", "café", "北京", "42"]
    assert query_tokens("snake_case __x__") == ["snake", "case", "x"]


def test_query_tokens_cap() -> None:
    words = [f"w{i}" for i in range(50)]
    assert query_tokens(" ".join(words)) == words[:32]
    # The cap counts distinct kept tokens, not raw words.
    assert query_tokens("the " * 40 + "a1 a1 a2") == ["a1", "a2"]


def test_stopwords_cover_contractions_and_operators() -> None:
    for word in ("s", "t", "re", "ll", "ve", "d", "m", "whats", "near", "not", "and", "or"):
        assert word in STOPWORDS
    assert all(word == word.casefold() for word in STOPWORDS)
    assert len(STOPWORDS) >= 120
