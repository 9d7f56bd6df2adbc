"""What no rule reads still reaches the attribute classifier when it is about
the person, and requests, questions and other people's subjects do not. Engine tests run
the real engine (rules and the packaged classifier) on a real SQLite file."""

from __future__ import annotations

import pytest

from memoryd.core.extraction import extract
from memoryd.engine import MemoryEngine
from memoryd.engine.attribute_backing import KEEP_AT, KEEP_SINGLE_AT, back
from memoryd.engine.attribute_model import shared_model
from memoryd.eval.extraction import current_contents


@pytest.fixture
def engine(eval_engine: MemoryEngine) -> MemoryEngine:
    return eval_engine


@pytest.mark.parametrize(
    ("message", "clause"),
    [
        # a statement before the question of its sentence
        ("My old Hilux needs new tyres, what should I look for?", "My old Hilux needs new tyres"),
        # typed fast, a dropped "I", a hedge before the speaker
        ("ive been doing crochet to chill out after work", "I have been doing crochet"),
        ("Gone pescatarian since the start of the year. Good salmon marinade?", "Gone pesc"),
        ("Reckon I've caught the bouldering bug, three arvos a week", "Reckon I have caught"),
    ],
)
def test_a_statement_no_rule_reads_reaches_the_classifier(message: str, clause: str) -> None:
    facts, leftovers = extract(message)
    assert not facts
    assert [c for c in leftovers if c.startswith(clause)], leftovers


@pytest.mark.parametrize(
    "message",
    [
        "this time just give me a table, not bullets",
        "Compare for me: Pixel 9 vs iPhone 16 vs Galaxy S24, camera, battery life",
        "Only for this answer use Fahrenheit please",
        "What's a good hike near Denver?",
        "Can you recommend a good hike near Denver",
        "It is raining in Hobart again",
    ],
)
def test_requests_questions_and_other_subjects_are_not_candidates(message: str) -> None:
    assert extract(message) == ([], [])


def test_a_place_after_i_am_is_not_a_job_ending_in_er() -> None:
    facts, leftovers = extract("im in denver")
    assert not [f for f in facts if f.attribute == "job_title"]
    assert leftovers == ["I am in denver"]


def test_a_single_valued_leftover_needs_less_confidence_than_a_many_valued_one() -> None:
    # a single attribute's slot is retired by the next value; a many-valued one is not
    assert KEEP_SINGLE_AT < KEEP_AT
    facts, leftovers = extract("im in wellington")
    labels = shared_model().classify(leftovers)
    assert labels is not None
    attribute, p = labels[0]
    assert attribute == "home"
    assert p >= KEEP_SINGLE_AT  # kept, though the classifier is not sure of it
    kept = back(facts, leftovers, shared_model())
    assert [(f.attribute, f.slot, f.single) for f in kept] == [("home", "home_location", True)]


def test_a_lowercase_home_is_remembered_through_the_engine(engine: MemoryEngine) -> None:
    engine.extract_now("k", "im in wellington, whats the best way to get to the airport")
    assert current_contents(engine, "k") == ["User is in wellington"]


def test_a_statement_before_its_question_is_remembered(engine: MemoryEngine) -> None:
    engine.extract_now("k", "My old Hilux needs new tyres, what should I look for?")
    assert [c for c in current_contents(engine, "k") if "Hilux" in c]


def test_a_field_of_a_list_about_the_person_is_read(engine: MemoryEngine) -> None:
    note = "Health notes to keep in mind:\n- Condition: coeliac disease\n- Meds: none"
    engine.extract_now("k", note)
    stored = current_contents(engine, "k")
    assert "User's condition: coeliac disease" in stored
    assert not [c for c in stored if "none" in c.lower()]  # an empty field is no fact


def test_the_shipped_classifier_has_a_hidden_layer() -> None:
    # one ReLU layer names the attribute of unseen statements 3 points more often
    model = shared_model()
    assert model.classify(["I have two budgies, Mithu and Chiku"]) is not None
    assert model._hidden is not None
    assert model._hidden[0].shape[0] == 384
