"""A denial retires what it denies whatever slot either statement landed in, and only
the person's own memories: the real engine (rules and the packaged classifier) on a real
SQLite file."""

from __future__ import annotations

import pytest

from memoryd.core.extraction.denial import denied
from memoryd.engine import MemoryEngine
from memoryd.eval.extraction import current_contents


@pytest.mark.parametrize(
    ("first", "second", "gone", "kept"),
    [
        # read as a dislike, the employer was stored as the employer
        (
            "I am working in Bosch, in Stuttgart.",
            "I don't work in Bosch anymore, my contract is finished.",
            "working in Bosch",
            "does not work in Bosch",
        ),
        # a many-valued allergy kept by the classifier under a slot of its own words
        (
            "im allergic to strawberries i think",
            "lol turns out im not allergic to strawberries, it was the stuff they spray",
            "allergic to strawberries they think",
            "not allergic to strawberries",
        ),
        (
            "I really like K-drama, I watch every evening.",
            "Now I don't like K-drama anymore, the story is too long always.",
            "really like",
            "does not like K-drama",
        ),
    ],
)
def test_a_denial_retires_the_statement_it_denies(
    eval_engine: MemoryEngine, first: str, second: str, gone: str, kept: str
) -> None:
    owner = "deny"
    eval_engine.extract_now(owner, first)
    assert any(gone in c for c in current_contents(eval_engine, owner))
    eval_engine.extract_now(owner, second)
    now = current_contents(eval_engine, owner)
    assert not any(gone in c for c in now), now
    assert any(kept in c for c in now), now


def test_a_relatives_denial_leaves_the_persons_own(eval_engine: MemoryEngine) -> None:
    owner = "deny-son"
    eval_engine.extract_now(owner, "I love hiking in the Alps.")
    eval_engine.extract_now(owner, "My son is not a fan of hiking.")
    now = current_contents(eval_engine, owner)
    assert any("loves hiking" in c for c in now), now


def test_a_denial_leaves_other_peoples_memories(eval_engine: MemoryEngine) -> None:
    owner = "deny-family"
    eval_engine.extract_now(owner, "My sister Aoife is a vegetarian.")
    before = current_contents(eval_engine, owner)
    assert any("vegetarian" in c for c in before), before
    eval_engine.extract_now(owner, "I'm not vegetarian anymore, I eat chicken again.")
    now = current_contents(eval_engine, owner)
    assert any("Aoife" in c and "vegetarian" in c for c in now), now


@pytest.mark.parametrize(
    ("content", "thing"),
    [
        ("User is not allergic to strawberries", "strawberr"),
        ("User quit smoking", "smok"),
        ("User sold the pontoon boat, too much upkeep", "pontoon"),
        ("User is no longer vegetarian since March", "vegetarian"),
        ("User never misses a Liverpool game", None),  # not a denial of a thing
        ("User is not sure about the move", None),
        ("User does not have a car", None),  # too short to say safely
        ("User is not moving away from Lisbon", None),  # staying, not leaving
        ("User quit their job to travel around Japan", None),  # the job, not Japan
    ],
)
def test_what_a_denial_names(content: str, thing: str | None) -> None:
    targets = denied(content)
    if thing is None:
        assert targets == ()
    else:
        assert targets
        assert all(t.endswith("~" + thing) for t in targets)
        assert not any(t.startswith(("family", "pet")) for t in targets)
