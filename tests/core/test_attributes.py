"""Attributes by meaning, how people type, precision, retraction, and the
attribute classifier backing the rules. Each miss class the issue names has a test;
engine tests run the real engine on a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.core.extraction import extract, extract_facts
from memoryd.core.extraction.attributes import ATTRIBUTES, attribute_of, by_name
from memoryd.core.extraction.typos import correct
from memoryd.core.llm_ops import SYSTEM_PROMPT, parse_operations
from memoryd.engine import MemoryEngine
from memoryd.engine.attribute_backing import back
from memoryd.engine.attribute_model import AttributeModel, shared_model
from memoryd.eval.extraction import current_contents


@pytest.fixture
def engine(eval_engine: MemoryEngine) -> MemoryEngine:
    return eval_engine


@pytest.fixture
def rules_alone(tmp_path: Path) -> Iterator[MemoryEngine]:
    """The eval's engine with capture left to the rules (no attribute classifier)."""
    from memoryd.eval import locomo

    eng = locomo.open_eval_engine(
        tmp_path / "rules", locomo.no_embedder(), attribute_classifier=False
    )
    try:
        yield eng
    finally:
        eng.close()


def _after(engine: MemoryEngine, *messages: str, owner: str = "k") -> list[str]:
    for message in messages:
        engine.extract_now(owner, message)
    return current_contents(engine, owner)


def _holding(contents: list[str], word: str) -> list[str]:
    return [c for c in contents if word.lower() in c.lower()]


# -- the schema ----------------------------------------------------------------------------


def test_every_attribute_has_a_cardinality_and_single_ones_a_slot_of_their_own() -> None:
    names = [a.name for a in ATTRIBUTES]
    assert len(names) == len(set(names))
    slots = [a.storage_slot for a in ATTRIBUTES if a.single]
    assert len(slots) == len(set(slots))
    for a in ATTRIBUTES:
        assert a.about
        if a.single:
            assert attribute_of(a.storage_slot) is a


@pytest.mark.parametrize(
    ("slot", "attribute"),
    [
        ("home_location", "home"),
        ("occupation", "job_title"),
        ("diet", "diet"),
        ("diet:avoid:sugar", "food_avoidance"),
        ("allergy:peanuts", "allergy"),
        ("health:medication:sertraline", "medication"),
        ("health:asthma", "health_condition"),
        ("pet:dog:name", "pet"),
        ("family:partner", "partner"),
        ("family:son:tom", "family_member"),
        ("tool:os", "os"),
        ("instruction:language", "answer_language"),
        ("instruction:ignore-this", "instruction"),
    ],
)
def test_rule_slots_name_their_attribute(slot: str, attribute: str) -> None:
    found = attribute_of(slot)
    assert found is not None
    assert found.name == attribute


def test_facts_carry_their_attribute() -> None:
    (fact,) = extract_facts("I work at Globex")
    assert (fact.attribute, fact.slot, fact.single) == ("employer", "employer", True)


# -- how people type -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("im alergic to penicilin", "allergic"),
        ("my girlfirend is called Ana", "girlfriend"),
        ("i dont eat meat, im vegeterian", "vegetarian"),
        ("we relocted to Austin", "relocated"),
        ("gonna visit my mum next wk", "going to"),
    ],
)
def test_slips_and_shorthand_are_read_as_meant(typed: str, meant: str) -> None:
    assert meant in correct(typed)


def test_real_words_near_a_rule_word_are_left_alone() -> None:
    text = "I have a master's in finance and I love free diving and old watches"
    assert correct(text) == text


def test_a_typo_still_stores_the_fact_in_the_users_spelling_of_the_value() -> None:
    (fact,) = extract_facts("im alergic to penicilin")
    assert fact.attribute == "allergy"
    assert fact.content == "User is allergic to penicilin"


@pytest.mark.parametrize(
    ("message", "value", "attribute"),
    [
        ("I am working in Wipro since 2020 as developer.", "Wipro", "employer"),  # Indian
        ("Just finished my first week at Auto Trader, proper buzzing", "Auto Trader", "employer"),
        ("I'm seeing a lad called Eoin now, he's a dote", "Eoin", "partner"),  # Irish
        ("We finally made the move up to Newcastle in spring", "Newcastle", "home"),  # AU
        ("Now you can talk casual with me, like a friend", "casual", "tone"),  # non-native
        ("Actually from now please reply me in English", "English", "answer_language"),
        ("the lads all call me Kiki", "Kiki", "preferred_name"),
    ],
)
def test_regional_and_non_native_phrasings(message: str, value: str, attribute: str) -> None:
    facts = [f for f in extract_facts(message) if value.lower() in f.content.lower()]
    assert facts, extract_facts(message)
    assert facts[0].attribute == attribute


def test_several_facts_in_one_message_and_a_fact_inside_a_long_one() -> None:
    facts = extract_facts("I'm Priya. I live in Pune, I'm vegetarian and I have a cat named Miso.")
    assert {f.attribute for f in facts} >= {"name", "home", "diet", "pet"}
    long = ("Ugh, long week. " * 40) + "By the way I'm allergic to shellfish. Anyway, thanks!"
    assert any(f.attribute == "allergy" for f in extract_facts(long))


# -- precision -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "moved my tabs to Chrome",
        "I switched to dark roast for this recipe?",
        "moved the meeting to Friday",
        "Where do I live again?",
        "If I moved to Lisbon, what would rent be?",
        "Translate: 'I am a doctor and I live in Rome.'",
        "My boss said I'm lazy.",
    ],
)
def test_words_that_only_look_like_facts_store_nothing(message: str) -> None:
    facts, _leftovers = extract(message)
    assert [f for f in facts if not f.is_retraction] == []
    assert not any(f.attribute == "home" for f in facts)


def test_a_switch_of_tool_is_not_a_home() -> None:
    facts = extract_facts("I moved to VS Code last year")
    assert all(f.attribute != "home" for f in facts)


# -- updates land on the same attribute whatever the words (the list) ---------------


@pytest.mark.parametrize(
    ("first", "second", "old", "new"),
    [
        ("I work at Aldi", "started at HSBC last week, loving it", "Aldi", "HSBC"),
        ("I work at Google", "I'm at Netflix now", "Google", "Netflix"),
        ("I live in Denver", "we relocated to Austin over the summer", "Denver", "Austin"),
        ("I use Android", "finally got an iPhone 15", "Android", "iPhone"),
        ("I prefer dark mode", "switch me to light mode", "dark mode", "light mode"),
        ("I'm vegetarian", "started eating meat again", "vegetarian", "meat"),
        ("Please reply in Italian", "actually reply in English from now on", "Italian", "English"),
        (
            "My boyfriend Cathal cooks",
            "We split up, I'm seeing a lad called Eoin now",
            "Cathal",
            "Eoin",
        ),
    ],
)
def test_a_new_value_retires_the_old_one_whatever_words_either_used(
    engine: MemoryEngine, first: str, second: str, old: str, new: str
) -> None:
    current = _after(engine, first, second)
    assert _holding(current, new), current
    assert not [c for c in current if old.lower() in c.lower() and new.lower() not in c.lower()]


def test_i_still_keeps_one_memory(engine: MemoryEngine) -> None:
    current = _after(engine, "I live in Leeds", "I still live in Leeds")
    assert len(_holding(current, "Leeds")) == 1


def test_not_anymore_leaves_a_negative_memory(engine: MemoryEngine) -> None:
    current = _after(engine, "I love jazz", "I don't like jazz anymore")
    assert _holding(current, "jazz")
    assert all("not" in c for c in _holding(current, "jazz"))


# -- retraction ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "gone"),
    [
        ("I like jazz", "forget that I said I like jazz", "jazz"),
        ("I work at Aldi as a cashier", "Please forget what I said about my job.", "Aldi"),
        ("Im moving to Perth in March", "scratch that, Im not moving to Perth after all", "Perth"),
        ("I have a cat named Luna", "I no longer have the cat, she passed away", "Luna"),
        ("we're getting married in June", "the wedding is off", "married"),
        ("i think i have ibs", "nvm about the ibs thing", "ibs"),
        ("I'm on 20mg of Adderall", "please don't keep anything about my medication", "Adderall"),
    ],
)
def test_a_retraction_removes_the_memory_and_stores_nothing(
    engine: MemoryEngine, first: str, second: str, gone: str
) -> None:
    current = _after(engine, first, second)
    assert not _holding(current, gone), current


def test_a_retraction_only_touches_its_owner(engine: MemoryEngine) -> None:
    engine.extract_now("a", "I like jazz")
    engine.extract_now("b", "I like jazz")
    engine.extract_now("a", "forget that I said I like jazz")
    assert current_contents(engine, "a") == []
    assert _holding(current_contents(engine, "b"), "jazz")


@pytest.mark.parametrize(
    ("first", "second", "gone"),
    [
        ("I play five-a-side on Thursdays", "gave up the five-a-side, my knees are done", "five"),
        ("I do kickboxing twice a week", "quit kickboxing lol too expensive", "kickboxing"),
        (
            "We keep a narrowboat at Braunston",
            "finally sold the narrowboat last spring",
            "narrowboat",
        ),
        (
            "I work at Harrow Logistics",
            "I resigned from Harrow Logistics, taking a break",
            "Harrow",
        ),
        ("i take sertraline every morning", "doctor has stopped the sertraline", "sertraline"),
        ("Our wedding is in May in Kilkenny", "Wedding is called off, long story", "wedding"),
    ],
)
def test_something_of_theirs_that_ended_is_retired_and_not_kept_as_news(
    engine: MemoryEngine, first: str, second: str, gone: str
) -> None:
    current = _after(engine, first, second)
    assert not _holding(current, gone), current


def test_what_they_gave_up_stays_as_their_habit() -> None:
    """ "I quit coffee" retires a memory of coffee and is itself a diet of theirs."""
    facts = extract_facts("I quit coffee in March, it was wrecking my sleep")
    assert any(f.is_retraction and "*~=coffee" in f.retracts for f in facts)
    assert [f.content for f in facts if not f.is_retraction] == ["User quit coffee in March"]


def test_an_end_that_names_the_next_value_keeps_it(engine: MemoryEngine) -> None:
    current = _after(engine, "I have a Huawei P30", "ditched the huawei, got a pixel 9 now")
    assert _holding(current, "pixel 9"), current
    assert not _holding(current, "P30"), current


@pytest.mark.parametrize(
    ("first", "second", "kept"),
    [
        ("I'm a nurse at St Marys", "I quit the work WhatsApp group, too much noise", "nurse"),
        ("I don't eat pork, I'm Muslim", "I gave up the keto diet, too hard", "pork"),
        ("I live in Mumbai", "I left Mum a voicemail", "Mumbai"),
        ("I live in Seattle", "I gave up my seat on the bus", "Seattle"),
        ("I love classical music", "I quit art class", "classical"),
        ("I work at Spotify", "I left Spotify open all night", "Spotify"),
        (
            "I play football on Saturdays",
            "I gave up my Saturday to help my brother move",
            "football",
        ),
        (
            "I have tickets for Glastonbury",
            "we sold out of tickets at the bake sale",
            "Glastonbury",
        ),
        ("I live in Leeds and I drive a Ford Focus", "the doctor stopped the IV", "Leeds"),
    ],
)
def test_an_end_of_something_else_retires_nothing_of_theirs(
    engine: MemoryEngine, first: str, second: str, kept: str
) -> None:
    """What ended is matched by its own words, whole: a word inside another ("seat" in
    Seattle), a topic word used as a modifier ("the work WhatsApp group"), a day."""
    current = _after(engine, first, second)
    assert _holding(current, kept), current


def test_an_end_said_after_a_new_fact_leaves_that_fact(engine: MemoryEngine) -> None:
    current = _after(
        engine, "I'm a nurse at St Marys", "I'm a nurse at St Marys now. Quit the choir though."
    )
    assert _holding(current, "nurse"), current


@pytest.mark.parametrize(
    ("first", "second", "kept"),
    [
        ("I'm going to Lisbon with Sarah in June", "I bumped into Sarah at the gym", "Lisbon"),
        ("I'm flying to Boston on June 5", "My sister Emma is now in Boston", "June 5"),
        (
            "i take sertraline every morning",
            "I switched my dog to a new flea medicine",
            "sertraline",
        ),
        ("Please call me Margaret.", "From now on, call my husband Bob Bobby instead", "Margaret"),
        ("I'm vegetarian", "I started eating more beans now", "vegetarian"),
    ],
)
def test_news_about_someone_else_or_an_amount_changes_nothing_of_theirs(
    engine: MemoryEngine, first: str, second: str, kept: str
) -> None:
    current = _after(engine, first, second)
    assert _holding(current, kept), current


@pytest.mark.parametrize(
    "second",
    [
        "my brother quit padel",
        "should I quit padel?",
        "if I gave up padel I'd be so bored",
        "I left my padel racket at the club",
    ],
)
def test_an_end_asked_about_imagined_or_someone_elses_retires_nothing(
    engine: MemoryEngine, second: str
) -> None:
    current = _after(engine, "I play padel with my mates", second)
    assert _holding(current, "plays padel"), current


@pytest.mark.parametrize(
    ("first", "second", "old", "new"),
    [
        ("I'm vegetarian", "gone fully vegan since March", "vegetarian", "vegan"),
        (
            "I use a ThinkPad for work",
            "my daughter set me up with a new Surface Laptop",
            "ThinkPad",
            "Surface",
        ),
        ("Im single", "got a boyfriend now, his name is Tomasz", "single", "boyfriend"),
        (
            "I drive a Ford Focus",
            "my dad handed me down his old Volvo estate now",
            "Focus",
            "Volvo",
        ),
    ],
)
def test_a_change_read_as_an_attribute_they_hold_retires_its_old_value(
    engine: MemoryEngine, first: str, second: str, old: str, new: str
) -> None:
    """Capture files the news where the classifier reads it, weighing what the person
    already told: the attribute they hold is the one that changed."""
    current = _after(engine, first, second)
    assert _holding(current, new), current
    assert not _holding(current, old), current


@pytest.mark.parametrize(
    ("first", "second", "kept"),
    [
        # the classifier's best single reading is an editor, which they never named
        ("Debian on servers, Fedora on my laptop.", "Switched to Emacs. Don't ask.", "Fedora"),
        ("I work at Aldi", "my wife works at Lidl now", "Aldi"),  # her change, not theirs
    ],
)
def test_a_change_is_not_filed_under_an_attribute_it_does_not_change(
    engine: MemoryEngine, first: str, second: str, kept: str
) -> None:
    current = _after(engine, first, second)
    assert _holding(current, kept), current


@pytest.mark.parametrize(
    ("first", "second", "old", "new"),
    [
        (
            "Reply in French please, I'm practising.",
            "actually, I'd rather have everything in Spanish from now on",
            "French",
            "Spanish",
        ),
        (
            "Please call me Margaret.",
            "actually all my friends call me Peggy these days, go with that instead",
            "Margaret",
            "Peggy",
        ),
        (
            "Keep it formal please, Im using these for work emails.",
            "no need to be so stiff anymore, talk to me casual like a mate",
            "formal",
            "casual",
        ),
    ],
)
def test_a_new_request_retires_the_preference_it_changes(
    engine: MemoryEngine, first: str, second: str, old: str, new: str
) -> None:
    """A request read in the person's own words (not by a rule) that changes how they
    are answered is filed under that preference, so the profile carries one."""
    current = _after(engine, first, second)
    assert _holding(current, new), current
    assert not _holding(current, old), current


def test_a_request_about_something_else_leaves_the_preference(engine: MemoryEngine) -> None:
    current = _after(engine, "Please call me Margaret.", "from now on answer in bullet points")
    assert _holding(current, "Margaret"), current
    assert _holding(current, "bullet"), current


@pytest.mark.parametrize(
    ("first", "second", "old", "new"),
    [
        (
            "i take sertraline every morning",
            "my GP switched me over to fluoxetine last week",
            "sertraline",
            "fluoxetine",
        ),
        ("I take warfarin", "my cardiologist moved me onto apixaban", "warfarin", "apixaban"),
    ],
)
def test_a_switch_replaces_the_one_medicine_they_take(
    engine: MemoryEngine, first: str, second: str, old: str, new: str
) -> None:
    current = _after(engine, first, second)
    assert _holding(current, new), current
    assert not _holding(current, old), current


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I'm on metformin for my diabetes", "doctor added gliclazide as well"),  # one more
        ("I'm on metformin and ramipril", "doctor switched me to gliclazide"),  # which one?
    ],
)
def test_a_medicine_added_or_a_switch_that_names_no_one_keeps_the_old(
    engine: MemoryEngine, first: str, second: str
) -> None:
    current = _after(engine, first, second)
    assert _holding(current, "metformin"), current
    assert _holding(current, "gliclazide"), current


def test_a_plan_said_to_have_moved_replaces_the_plan_it_names(engine: MemoryEngine) -> None:
    current = _after(
        engine,
        "Flying to Lisbon on the 3rd of May for a hen do",
        "the Lisbon trip got pushed back to the 20th of June",
    )
    assert _holding(current, "20th of June"), current
    assert not _holding(current, "3rd of May"), current


def test_someone_elses_plan_moving_leaves_theirs(engine: MemoryEngine) -> None:
    current = _after(
        engine,
        "Flying to Lisbon on the 3rd of May for a hen do",
        "my sister's Lisbon trip got postponed",
    )
    assert _holding(current, "3rd of May"), current


# -- one memory per attribute ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "title", "employer"),
    [
        (
            "I'm a pharmacist at Boots in Leeds",
            "User is a pharmacist in Leeds",
            "User works at Boots",
        ),
        (
            "I work at Deloitte as an auditor, busy season is brutal",
            "User works as an auditor, busy season is brutal",
            "User works at Deloitte",
        ),
        (
            "senior dev at Monzo, based in Cardiff",
            "User is a senior dev, based in Cardiff",
            "User works at Monzo",
        ),
    ],
)
def test_a_job_said_with_its_workplace_is_a_title_and_an_employer(
    message: str, title: str, employer: str
) -> None:
    facts = {f.attribute: f.content for f in extract_facts(message)}
    assert facts.get("job_title") == title
    assert facts.get("employer") == employer


@pytest.mark.parametrize(
    "message",
    [
        "I'm a nurse at Christmas mostly",
        "I'm a member at Gold's Gym",
        "I work at Google",
        "I'm a client at Barclays too",
    ],
)
def test_what_is_not_a_job_at_a_workplace_stays_one_fact(message: str) -> None:
    assert len([f for f in extract_facts(message) if not f.is_retraction]) == 1


@pytest.mark.parametrize(
    ("first", "second", "old", "kept", "new"),
    [
        (
            "I'm a pharmacist at Boots in Leeds",
            "started at Lloyds Pharmacy last month, same job",
            "Boots",
            "pharmacist",
            "Lloyds",
        ),
        (
            "I'm a junior designer at Canva",
            "got promoted, I'm a senior designer now",
            "junior",
            "Canva",
            "senior designer",
        ),
        ("I work at Deloitte as an auditor", "I'm at KPMG now", "Deloitte", "auditor", "KPMG"),
    ],
)
def test_either_half_of_a_job_at_a_workplace_changes_alone(
    engine: MemoryEngine, first: str, second: str, old: str, kept: str, new: str
) -> None:
    current = _after(engine, first, second)
    assert _holding(current, new), current
    assert _holding(current, kept), current
    assert not _holding(current, old), current


def test_an_assistant_message_cannot_retract() -> None:
    facts = extract_facts("Forget that I said I like jazz", source="assistant")
    assert not any(f.is_retraction for f in facts)


# -- the classifier ------------------------------------------------------------------------


def test_the_packaged_classifier_reads_attributes_by_meaning() -> None:
    model = shared_model()
    labels = model.classify(
        ["I'm allergic to shellfish", "my wife and I live in Cork", "im so tired today"]
    )
    assert labels is not None, model.status
    assert [a for a, _ in labels] == ["allergy", "home", "none"]
    assert model.status.startswith("ready")


@pytest.mark.parametrize(
    "message", ["I am part of the team at Infosys now", "I have been loving my new job at Infosys"]
)
def test_a_catch_all_fact_moves_to_the_single_attribute_it_means(message: str) -> None:
    facts, leftovers = extract(message)
    assert facts
    assert facts[0].attribute in ("hobby", "like")
    out = back(facts, leftovers, shared_model())
    assert [(f.attribute, f.slot, f.single) for f in out] == [("employer", "employer", True)]


def test_without_minilm_extraction_is_the_rules_alone(tmp_path: Path) -> None:
    missing = AttributeModel(path=tmp_path / "absent.npz")
    assert missing.classify(["I work at Globex"]) is None
    assert "rules only" in missing.status
    facts, leftovers = extract("I work at Globex")
    assert back(facts, leftovers, missing) == facts


# -- both modes share the schema -----------------------------------------------------------


def test_the_llm_prompt_lists_the_schemas_single_slots() -> None:
    for attribute in ATTRIBUTES:
        if attribute.single:
            assert f'"{attribute.storage_slot}"' in SYSTEM_PROMPT


def test_an_llm_slot_given_as_an_attribute_name_is_stored_as_its_slot() -> None:
    raw = '{"operations": [{"op": "ADD", "content": "User is a nurse", "slot": "job_title"}]}'
    (op,) = parse_operations(raw, set())
    target = by_name("job_title")
    assert target is not None
    assert op.slot == target.storage_slot == "occupation"


# -- lists, learner's grammar, units, restatements -------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "About me: 34, live in Seoul, originally from Daegu, work for a shipping company.",
            {"age", "home", "hometown", "employer"},
        ),
        (
            "My gear: iPhone 13, HP EliteBook, and a 2012 Toyota Corolla.",
            {"phone", "computer", "vehicle"},
        ),
        ("Likes: cold brew, Murakami. Dislikes: podcasts.", {"like"}),
        (
            "Few rules for you: 1) British spelling 2) no bullet points",
            {"instruction", "answer_format"},
        ),
        ("Upcoming: dentist 4 Feb, Anna's hen do 15 March", {"plan"}),
    ],
)
def test_a_labelled_list_is_read_item_by_item(message: str, expected: set[str]) -> None:
    facts = extract_facts(message)
    assert {f.attribute for f in facts} == expected
    assert len(facts) >= 2


def test_a_field_is_not_a_list() -> None:
    assert [f.content for f in extract_facts("Name: Wayra Quispe")] == [
        "User's name is Wayra Quispe"
    ]


@pytest.mark.parametrize(
    ("said", "means"),
    [
        ("I am after starting a new job with Apple", "I have started a new job with Apple"),
        ("We are having one Indie dog", "We have one Indie dog"),
        ("I have 42 years", "I am 42 years old"),
        ("I am born in Recife", "I was born in Recife"),
        ("I not like reggaeton", "I do not like reggaeton"),
        ("Me sister Orla", "my sister Orla"),
        ("My husband he is doctor", "My husband is doctor"),
        ("I stop being vegan", "I am no longer vegan"),
    ],
)
def test_learners_and_regional_grammar_is_read_in_the_rules_shape(said: str, means: str) -> None:
    assert correct(said) == means


def test_units_are_one_value_per_dimension(engine: MemoryEngine) -> None:
    current = _after(
        engine, "Preferences: Celsius, km, 24-hour clock.", "distances in miles please"
    )
    assert _holding(current, "Celsius")
    assert _holding(current, "24-hour")
    assert _holding(current, "miles")
    assert not _holding(current, "km")


def test_a_system_of_units_replaces_every_dimension_it_decides_but_not_the_currency(
    engine: MemoryEngine,
) -> None:
    current = _after(
        engine,
        "Imperial units for me please.",
        "always give me prices in euros please",
        "back home in Lyon now, please use metric again, kilograms and centimetres",
    )
    assert _holding(current, "metric")
    assert not _holding(current, "Imperial")
    assert _holding(current, "euros")


@pytest.mark.parametrize(
    "renamed", ["can u call me jay from now on", "could you call me Jay from now on please"]
)
def test_a_new_name_asked_for_replaces_the_old_one(engine: MemoryEngine, renamed: str) -> None:
    current = _after(engine, "call me jess btw", renamed)
    assert _holding(current, "called jay") or _holding(current, "called Jay")
    assert not _holding(current, "jess")


def test_two_facts_of_one_single_attribute_in_one_message_are_one_memory(
    engine: MemoryEngine,
) -> None:
    current = _after(engine, "I am vegan", "I stop being vegan, now I eat fish and egg again.")
    (diet,) = _holding(current, "vegan")
    assert "no longer vegan" in diet
    assert "fish" in diet


def test_a_restated_fact_is_one_memory(engine: MemoryEngine) -> None:
    current = _after(
        engine,
        "I've been learning the tabla for a few years.",
        "Still playing the tabla most evenings.",
    )
    assert len(_holding(current, "tabla")) == 1


def test_a_second_pet_is_added_not_renamed(engine: MemoryEngine) -> None:
    current = _after(
        engine, "I've got a greyhound called Dot.", "We've adopted a second greyhound, Pickle."
    )
    assert _holding(current, "Dot")
    assert _holding(current, "Pickle")


@pytest.mark.parametrize(
    "message",
    [
        "Today I have headache, I think because no sleep.",
        "Right now I'm sitting in a café in Rome and the wifi is awful.",
        "Now I am in the airport, my flight is delayed 2 hours.",
        "My sister keeps telling everyone that I'm the irresponsible one.",
        "I'm not sure whether I'm an introvert or just tired.",
        "Would you always pick the cheapest option if you were me?",
    ],
)
def test_moments_hedges_and_other_peoples_words_store_nothing(message: str) -> None:
    assert extract_facts(message) == []


def test_a_polite_standing_request_is_an_instruction() -> None:
    (fact,) = extract_facts("Can you always give temperatures in Celsius please?")
    assert fact.attribute == "units"
    assert extract_facts("Can you help me with my essay?") == []


def test_engine_status_says_whether_the_classifier_backs_the_rules(
    engine: MemoryEngine, rules_alone: MemoryEngine
) -> None:
    engine.extract_now("k", "I am part of the team at Infosys now")  # loads it
    status = engine.status()["extraction"]["classifier"]
    assert status == {"available": True, "reason": status["reason"]}
    assert status["reason"].startswith("ready")
    assert rules_alone.status()["extraction"]["classifier"]["available"] is False


def test_the_schema_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "extraction.md").read_text()
    for attribute in ATTRIBUTES:
        assert f"| `{attribute.name}` | {'one' if attribute.single else 'many'} |" in doc


def test_a_statement_only_the_classifier_reads_is_queued_and_kept(
    engine: MemoryEngine, rules_alone: MemoryEngine
) -> None:
    """The gateway's path (``worth_extracting``, then a queued job) keeps what
    ``extract_now`` keeps: a turn whose only statement no rule reads is still worth a
    job when the classifier is at hand, and not with the rules alone."""
    said = "I keep light mode on."
    assert extract_facts(said) == []
    assert engine.worth_extracting(said)
    assert engine.submit_extraction("k", user_text=said, session_id="s") is not None
    assert engine.drain()
    (memory,) = engine.list_memories(owner="k").data
    assert memory.metadata["attribute"] == "ui_theme"
    assert not rules_alone.worth_extracting(said)
