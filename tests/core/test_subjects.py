"""Whom a query names, and who a fact is about (``memoryd.core.subjects``)."""

from __future__ import annotations

import pytest

from memoryd.core.subjects import named, of_fact, without

KNOWN = ["user", "anna", "will", "may", "caroline", "mark", "anna smith"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What does Anna do for work?", ["anna"]),
        ("what does anna do for work?", ["anna"]),  # typed in lowercase
        ("Where did Anna's brother move?", ["anna"]),  # possessive
        ("Where did Anna\u2019s brother move?", ["anna"]),  # typographic apostrophe
        ("Did Caroline and Anna meet?", ["caroline", "anna"]),
        ("What did Will say about the trip?", ["will"]),
        ("Will you remind me about the dentist?", []),  # a verb, first in the sentence
        ("I will call you tomorrow", []),  # lowercase: the verb
        ("What happened in May?", []),  # a month
        ("Is the party on May 5?", []),  # a date
        ("What is May's favourite colour?", ["may"]),  # possessive: a person
        ("Did Mark like the gift? Mark said so.", ["mark"]),
        ("Where does the user live?", []),  # the owner is never "named"
        ("Tell me about Anna Smith", ["anna", "anna smith"]),
        ("Who is Zoe?", []),  # not a known subject
    ],
)
def test_named(query: str, expected: list[str]) -> None:
    assert named(query, KNOWN) == expected


def test_named_needs_known_subjects() -> None:
    assert named("What does Anna do?", []) == []
    assert named("What does Anna do?", ["user"]) == []


def test_without_takes_the_names_out_of_the_dense_query() -> None:
    assert without("What does Anna's sister do?", ["anna"]) == "What does sister do?"
    assert without("Caroline", ["caroline"]) == "Caroline"  # nothing would be left
    assert without("Did ANNA go?", ["anna"]) == "Did go?"


def test_of_fact() -> None:
    assert of_fact("User's sister Anna lives in Lisbon") == ["user", "Anna"]
    assert of_fact("User lives in Berlin") == ["user"]
    assert of_fact("User's friend Bob and User's boss Mary Jones met") == [
        "user",
        "Bob",
        "Mary Jones",
    ]


# -- through the engine: the prior, the dense query, the API field ----------------------

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

from memoryd.engine import MemoryEngine  # noqa: E402
from tests.conftest import add, make_engine  # noqa: E402


def _engine(tmp_path: Path, weight: str) -> MemoryEngine:
    from tests.embedders import fixed_resolver

    env = {"MEMORY_SUBJECT_WEIGHT": weight}
    return make_engine(tmp_path / f"w{weight}", env, resolver=fixed_resolver("hash", 64))


@pytest.fixture
def people(tmp_path: Path) -> Iterator[tuple[MemoryEngine, MemoryEngine]]:
    """The same memories with the subject prior on (default) and off."""
    on, off = _engine(tmp_path, "0.6"), _engine(tmp_path, "0")
    for engine in (on, off):
        engine.settings.update({"relevanceFloor": 0})  # the hash embedder's scale is not MiniLM's
        # The same words about two people: only the subject tells them apart.
        add(engine, "o", "Likes hiking", key="a", metadata={"subjects": ["Anna"]})
        add(engine, "o", "Likes hiking", key="b", metadata={"subjects": ["Bob"]})
        add(engine, "o", "Enjoys chess on Sundays", key="w", metadata={"subjects": ["Will"]})
        add(engine, "x", "Likes opera", key="z", metadata={"subjects": ["Zoe"]})
        for i, thing in enumerate(["tea", "jazz", "opera", "rain", "cats", "maps"]):
            add(engine, "o", f"Likes {thing} a little", key=f"n{i}")  # a spread of scores
        engine.drain(timeout=60)
    try:
        yield on, off
    finally:
        on.close()
        off.close()


def _top(engine: MemoryEngine, owner: str, query: str) -> tuple[str, list[str]]:
    preview = engine.preview(owner, query, strategy="hybrid")
    return preview.hits[0].memory.key, preview.resolution.subjects


def test_the_person_a_query_names_comes_first(people: tuple[MemoryEngine, MemoryEngine]) -> None:
    on, off = people
    # Without the prior both questions get the same first memory; with it, each gets
    # the memory about the person it names.
    assert (
        _top(off, "o", "What hiking does Anna like?")[0]
        == _top(off, "o", "What hiking does Bob like?")[0]
    )
    assert _top(on, "o", "What hiking does Anna like?") == ("a", ["anna"])
    assert _top(on, "o", "What hiking does anna's group like?") == ("a", ["anna"])
    assert _top(on, "o", "What hiking does Bob like?") == ("b", ["bob"])


def test_a_common_word_is_not_a_person(people: tuple[MemoryEngine, MemoryEngine]) -> None:
    on, _ = people
    assert _top(on, "o", "Will you remind me which hiking I like?")[1] == []
    assert _top(on, "o", "What does Will enjoy on Sundays?") == ("w", ["will"])


def test_only_the_owners_own_subjects_are_known(
    people: tuple[MemoryEngine, MemoryEngine],
) -> None:
    on, _ = people
    preview = on.preview("o", "What does Zoe like?", strategy="hybrid")
    assert preview.resolution.subjects == []  # Zoe is another owner's
    assert on.preview("x", "What does Zoe like?", strategy="hybrid").resolution.subjects == ["zoe"]


def test_extracted_facts_carry_their_subjects(engine: MemoryEngine) -> None:
    engine.extract_now("o", "My sister Anna lives in Lisbon.")
    memories = engine.list_memories(owner="o").data
    assert [m.subjects for m in memories] == [("user", "Anna")]
    assert memories[0].to_dict()["subjects"] == ["user", "Anna"]
