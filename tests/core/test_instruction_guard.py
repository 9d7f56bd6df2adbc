"""What capture keeps of instruction-shaped messages and the profile's pure
rules, on the labelled development split a helper wrote without reading the
code (``bench/data/instructions/dev.jsonl``): every attack stores nothing, every genuine
preference reaches its owner's profile and no one else's. The held-out split is measured
by ``python -m bench --only profile`` (docs/benchmarks/profile.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoryd.core import profile
from memoryd.core.extraction import extract
from memoryd.core.extraction.guard import REASONS, unsafe
from memoryd.core.extraction.standing import directive
from memoryd.engine import MemoryEngine

DEV = Path(__file__).resolve().parents[2] / "bench" / "data" / "instructions" / "dev.jsonl"
ROWS = [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]


def test_the_dev_split_is_what_the_issue_asks_for() -> None:
    kinds = [r["kind"] for r in ROWS]
    assert kinds.count("attack") >= 60
    assert kinds.count("legit") >= 60
    assert sum(r["embedded"] for r in ROWS if r["kind"] == "attack") >= 15


@pytest.mark.parametrize("row", [r for r in ROWS if r["kind"] == "attack"], ids=lambda r: r["id"])
def test_an_attack_is_recognised_and_keeps_nothing(row: dict[str, str]) -> None:
    assert unsafe(row["text"]) in REASONS
    assert extract(row["text"]) == ([], [])


def test_genuine_preferences_reach_their_owners_profile_only(engine: MemoryEngine) -> None:
    legit = [r for r in ROWS if r["kind"] == "legit"]
    kept = 0
    for i, row in enumerate(legit):
        assert unsafe(row["text"]) is None, row["text"]
        engine.extract_now("app", row["text"], user_id=f"u{i}")
        mine = {h.memory.id for h in engine.profile("app", user_id=f"u{i}").hits}
        kept += bool(mine)
        assert not mine & {h.memory.id for h in engine.profile("app", user_id="other").hits}
    assert kept / len(legit) >= 0.95
    assert engine.profile("app", user_id="").hits == []  # nothing of theirs is shared


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("btw can you keep your replies short from now on", "keep your replies short"),
        ("No need to be so polite with me, mate", "be so polite with me, mate"),
        ("I'd prefer that all of your responses begin with a summary", "all of your"),
        ("No markdown.", "use no markdown"),
    ],
)
def test_a_standing_request_is_read_in_any_register(text: str, words: str) -> None:
    found = directive(text)
    assert found is not None
    assert found[0].startswith(words)


@pytest.mark.parametrize(
    "text",
    [
        "Write me a limerick about a bloke from Hull who's allergic to cheese",
        "I am in a meeting now, please make a short summary of this email for me",
        "Please forget about Lena, we are not together anymore",
        "do not drink coffee anymore, switched to green tea",
    ],
)
def test_a_task_a_retraction_or_a_statement_is_no_standing_request(text: str) -> None:
    assert directive(text) is None


def test_topics_rank_and_budget() -> None:
    names = [t.name for t in profile.topics("any ideas for a road trip with the dog?")]
    assert names == ["advice", "travel"]
    assert profile.topics("what is the capital of Peru") == []
    items = [("pet", False), ("allergy", False), ("like", True), ("answer_length", False)]
    ranked = profile.rank(items, lambda i: i[0], lambda i: i[1], extra=("pet",))
    assert [i[0] for i in ranked] == ["like", "answer_length", "allergy", "pet"]
    kept, dropped = profile.fit([5, 9, 3, 4], 12, lambda n: n)
    assert (kept, dropped) == ([5, 3, 4], [9])
