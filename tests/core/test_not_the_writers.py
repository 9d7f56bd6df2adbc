"""What reads like the writer's facts and is someone else's, or no fact at all: lists
under another person's heading, role-play, questions put to the assistant; and a
statement led by "I should mention that" is the writer's own. Pure rules."""

from __future__ import annotations

import pytest

from memoryd.core.extraction import extract


@pytest.mark.parametrize(
    "message",
    [
        "Character sheet for my D&D campaign:\nName: Oren Vale\nAge: 52\nHome: Millbrook\n"
        "Allergies: horses\nCan you write his intro?",
        "Notes from my call with the client (Mrs Adeyemi):\n- Lives in Ibadan\n"
        "- Works at Crestview Foods\n- Allergic to peanuts\nTurn this into a profile?",
        "Today's status:\n- Mood: shattered\n- Location: stuck at Crewe station\n"
        "- Battery: 9%\nEntertain me",
        "Let's do a roleplay. You are a ticket inspector and I am a tourist named Piet "
        "from Utrecht who lost his pass. Start!",
        "ok rp time. im jade, 17, i just moved to a creepy town called Fogbury. ur my "
        "neighbour. go",
    ],
)
def test_someone_elses_facts_and_games_store_nothing(message: str) -> None:
    weak: list[str] = []
    facts, leftovers = extract(message, weak=weak)
    assert (facts, leftovers, weak) == ([], [], [])


def test_my_own_list_still_counts() -> None:
    facts, _ = extract("Quick backstory:\n- Name: Tobi\n- Live in Leeds\nAny advice?")
    assert [f.attribute for f in facts] == ["name", "home"]


def test_a_question_to_the_assistant_is_no_weak_statement() -> None:
    weak: list[str] = []
    extract("Weh yuh tink nicer fi a day trip, Negril or Ocho Rios?", weak=weak)
    assert weak == []
    extract("Ah'm drivin a wee Fiat Panda these days", weak=weak)
    assert weak  # a statement in the same dialect still reaches the tagger


@pytest.mark.parametrize(
    "message",
    [
        "I ought to mention that I have a long-standing allergy to shellfish.",
        "I should mention that I'm allergic to shellfish, prawns especially.",
    ],
)
def test_i_should_mention_leads_a_statement(message: str) -> None:
    facts, leftovers = extract(message)
    said = [f.content for f in facts] + leftovers
    assert [s for s in said if "shellfish" in s], said


@pytest.mark.parametrize(
    "message",
    ["cheap flights london to lisbon june", "Bravo secret zebra marmalade telescope launch plan"],
)
def test_a_message_that_is_a_search_query_states_nothing(message: str) -> None:
    weak: list[str] = []
    assert extract(message, weak=weak) == ([], [])
    assert weak == []


def test_a_terse_note_beside_other_sentences_still_reaches_the_tagger() -> None:
    weak: list[str] = []
    extract("Gear list for the trip. Trek mountain bike. Any tips on packing it?", weak=weak)
    assert any("Trek mountain bike" in c for c in weak), weak
