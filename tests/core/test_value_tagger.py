"""The value tagger: it reads a value in its context, so a statement in a shape no rule
was written for is still kept, a rule's misfiled fact moves to the attribute its value
is of, and fact-free text stays fact-free. Engine tests run the real engine (rules, the
packaged classifier and tagger over the packaged MiniLM) on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memoryd.core.extraction import extract
from memoryd.embedding.onnx_minilm import MiniLMEmbedder
from memoryd.engine import MemoryEngine
from memoryd.engine.attribute_backing import GATE_AT, back
from memoryd.engine.attribute_model import AttributeModel, shared_model
from memoryd.engine.value_tagger import ValueTagger, runs, spans
from memoryd.eval.extraction import current_contents


@pytest.fixture
def engine(eval_engine: MemoryEngine) -> MemoryEngine:
    return eval_engine


def _after(engine: MemoryEngine, *messages: str, owner: str = "k") -> list[str]:
    for message in messages:
        engine.extract_now(owner, message)
    return current_contents(engine, owner)


def _holding(contents: list[str], value: str) -> list[str]:
    return [c for c in contents if value.lower() in c.lower()]


# -- decoding --------------------------------------------------------------------------

OUT, BEGIN, INSIDE = (0.9, 0.05, 0.05), (0.05, 0.9, 0.05), (0.05, 0.05, 0.9)


def test_a_run_is_a_value_and_a_b_piece_opens_the_next() -> None:
    text = "my dog Rex and Luna"
    offsets = [(0, 2), (3, 6), (7, 10), (11, 14), (15, 19)]
    probs = np.asarray([OUT, OUT, BEGIN, OUT, BEGIN])
    assert [text[a:b] for a, b, _ in spans(text, offsets, probs)] == ["Rex", "Luna"]
    # two values side by side stay two when the second opens with B
    offsets2 = [(0, 3), (4, 8)]
    assert len(runs(offsets2, np.asarray([BEGIN, BEGIN]))) == 2
    assert len(runs(offsets2, np.asarray([BEGIN, INSIDE]))) == 1


def test_a_word_split_into_pieces_is_read_whole() -> None:
    text = "allergic to penicilin"
    # "pen", "##ici", "##lin": the tagger may be sure of only part of the word
    offsets = [(0, 8), (9, 11), (12, 15), (15, 18), (18, 21)]
    probs = np.asarray([OUT, OUT, BEGIN, OUT, OUT])
    assert [text[a:b] for a, b, _ in spans(text, offsets, probs)] == ["penicilin"]


def test_token_states_give_each_piece_its_place_in_the_text() -> None:
    text = "im alergic to penicilin btw"
    [(states, offsets)] = MiniLMEmbedder().token_states([text])
    assert states.shape == (len(offsets), 384)
    assert offsets[0] == (0, 2)  # no [CLS]
    assert "".join(text[a:b] for a, b in offsets) == text.replace(" ", "")


def test_encode_reads_a_message_and_its_clauses_in_one_call_as_embed_would() -> None:
    embedder = MiniLMEmbedder()
    texts = ["My ol' coonhound Duke has been scratchin' his ears raw, any tips?", "Duke", "hi"]
    encoded = embedder.encode(texts)
    vectors = np.stack([vector for vector, _states, _offsets in encoded])
    assert np.allclose((vectors * embedder.embed_batch(texts)).sum(axis=1), 1.0, atol=1e-4)
    alone = embedder.encode(texts[:1])[0][1]
    assert np.allclose(alone, encoded[0][1], atol=1e-4)  # padding changes nothing


# -- the packaged model ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "value", "attribute"),
    [
        ("My old greyhound Biscuit hates the rain, any coat ideas?", "Biscuit", "pet"),
        ("Quick one, I teach maths at Fernhill Academy. Ideas for a fun starter?", "", ""),
        ("Been on metformin since the spring, can I still have a pint?", "metformin", "medication"),
        ("Finally got the keys to our flat in Dundee!! so happy", "Dundee", "home"),
    ],
)
def test_the_packaged_tagger_reads_values_in_context(
    message: str, value: str, attribute: str
) -> None:
    found = shared_model().tag([message])
    assert found is not None, shared_model().tagger.status
    read = {message[t.start : t.end]: t for t in found[0].values}
    assert read, "no value read"
    if value:
        assert value in read, read
        assert read[value].attribute == attribute, read[value]


def test_a_fact_free_message_has_no_sure_value() -> None:
    found = shared_model().tag(["Can you recommend a good thriller for a long flight?"])
    assert found is not None
    assert [t for t in found[0].values if t.p >= 0.5] == []


def test_the_tagger_tells_a_story_from_a_statement() -> None:
    story = (
        "For my novel, the narrator says: I live in Oslo, I work at a bakery and I am "
        "allergic to nuts. Continue the chapter."
    )
    statement = "My name is Ines, I'm 34 and I live in Rennes. Any good bakeries near me?"
    found = shared_model().tag([story, statement])
    assert found is not None
    assert found[0].fact_free >= GATE_AT
    assert found[1].fact_free < 0.5


def test_a_message_the_tagger_reads_as_fact_free_keeps_nothing(engine: MemoryEngine) -> None:
    play = (
        "Let's play: I'm a lighthouse keeper in 1890s Cornwall named Silas, "
        "you're the stranger at the door."
    )
    assert extract(play)[0]  # the rules alone read a job in it
    assert _after(engine, play) == []


def test_without_its_weights_the_tagger_says_so_and_the_rules_stand(tmp_path: Path) -> None:
    tagger = ValueTagger(embedder=MiniLMEmbedder(), path=tmp_path / "missing.npz")
    assert tagger.tag(["I live in Oslo"]) is None
    assert "rules only" in tagger.status
    model = AttributeModel()
    model.tagger = tagger
    facts, leftovers = extract("I live in Oslo")
    kept = back(facts, leftovers, model, "I live in Oslo")
    assert [f.content for f in kept] == [f.content for f in facts]


# -- through the engine ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "value"),
    [
        # dialect: no first-person word the rules know
        ("Ah'm drivin a wee Fiat Panda these days, whit tyres should Ah get?", "Fiat Panda"),
        # a pet named in passing, before the question
        ("My ol' beagle Copper keeps diggin under the fence. How do I stop him?", "Copper"),
        # an allergy said without "allergic"
        ("Please I react badly to cashew, even small small. Which snacks are safe?", "cashew"),
    ],
)
def test_a_statement_no_rule_reads_is_kept_when_the_tagger_reads_a_value(
    engine: MemoryEngine, message: str, value: str
) -> None:
    assert _holding(_after(engine, message), value)


@pytest.mark.parametrize(
    "message",
    [
        "wheres a good place to get pho near union station",
        "I wish I could just quit and live on a boat in Cornwall, what would that cost?",
        "Can you recommend a good thriller for a long flight to Lima?",
    ],
)
def test_fact_free_messages_still_store_nothing(engine: MemoryEngine, message: str) -> None:
    assert _after(engine, message) == []


@pytest.mark.parametrize(
    "message",
    [
        "tell me about violin and gardening",
        "Please tell me more about tennis and movies",
        "teach me a bit about sourdough",
        "fill me in on jazz history",
    ],
)
def test_asking_to_be_told_about_a_topic_is_no_taste_of_theirs(
    engine: MemoryEngine, message: str
) -> None:
    """The topic someone asks about is not their hobby ("User: tell them about violin
    and gardening" was stored as one), and such a message queues no job."""
    mine: list[str] = []
    extract(message, weak=mine)
    assert mine == []
    assert not engine.extraction.needs_job([(message, "user")], rules_only=True)
    assert _after(engine, message) == []


def test_a_request_that_names_a_taste_still_keeps_it(engine: MemoryEngine) -> None:
    assert _holding(_after(engine, "recommend me songs like Chappell Roan"), "Chappell Roan")


def test_a_rules_misfiled_update_moves_to_the_attribute_its_value_is_of(
    engine: MemoryEngine,
) -> None:
    # the rules read "I'm at <X> from Monday" as a school; the value is an employer
    current = _after(
        engine,
        "I work for Lloyds in their Leeds office.",
        "Handed my notice in at the bank. I'm at Deloitte from Monday.",
    )
    assert _holding(current, "Deloitte")
    assert not _holding(current, "Lloyds"), current


def test_a_statement_the_rules_pass_over_queues_a_job(engine: MemoryEngine) -> None:
    texts = [("Ah'm drivin a wee Fiat Panda these days", "user")]
    assert extract(texts[0][0]) == ([], [])  # the rules alone would queue nothing
    assert engine.extraction.needs_job(texts, rules_only=True)


def test_an_assistants_words_are_never_tagged() -> None:
    said = "Ah'm drivin a wee Fiat Panda these days"
    mine: list[str] = []
    extract(said, weak=mine)
    assert mine  # the person's own words reach the tagger
    theirs: list[str] = []
    extract(said, source="assistant", weak=theirs)
    assert theirs == []


def test_engine_status_says_whether_the_tagger_reads_the_message(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    engine.extract_now("k", "My old greyhound Biscuit hates the rain")  # loads it
    status = engine.status()["extraction"]["tagger"]
    assert status == {"available": True, "reason": "ready"}
    model = engine.extraction.attributes
    assert model is not None
    shipped = model.tagger  # the model may be the process's shared one: put it back
    model.tagger = ValueTagger(source=lambda: None, path=tmp_path / "gone.npz")
    try:
        engine.extract_now("k", "I live in Oslo")
        status = engine.status()["extraction"]["tagger"]
    finally:
        model.tagger = shipped
    assert status["available"] is False
    assert "rules only" in status["reason"]


@pytest.mark.parametrize(
    "said",
    [
        "My roommate is Jewish and keeps kosher, she never eats pork",
        "so my father-in-law is vegan and he's visiting all next week!!",
    ],
)
def test_a_relatives_constraint_stands_though_the_tagger_reads_no_fact_of_mine(
    engine: MemoryEngine, said: str
) -> None:
    # the tagger reads statements about other people as fact-free; a rule's reading of a
    # relative's diet or condition is what advice on cooking for them must not ignore
    assert _after(engine, said)


def test_a_story_keeps_no_constraint_of_its_character(engine: MemoryEngine) -> None:
    said = (
        "ok so lets do a story where im a vet called Jo and im allergic to cats which is a "
        "problem because the client has six of them"
    )
    assert not any("allergic" in c for c in _after(engine, said))


def test_a_constraint_of_mine_need_not_open_with_me(engine: MemoryEngine) -> None:
    # no rule reads it and the classifier is unsure; its words say it is a constraint
    # advice must not ignore, and "my" says whose
    stored = _after(engine, "Two stents were put in my heart after angioplasty in January")
    assert stored == ["Two stents were put in User's heart after angioplasty in January"]


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("the physio said I have tendonitis in my left knee", "tendonitis"),
        ("My GP says my cholesterol is too high", "cholesterol"),
        ("Doctor told me I'm pre-diabetic", "pre-diabetic"),
    ],
)
def test_a_clinicians_word_about_me_is_my_condition(
    engine: MemoryEngine, said: str, kept: str
) -> None:
    # someone else's words are not the person's facts, except how people tell their own
    # conditions: what a doctor found in them
    assert _holding(_after(engine, said), kept)


def test_what_someone_else_says_of_themselves_stays_theirs(engine: MemoryEngine) -> None:
    assert _after(engine, "My sister says she has a nut allergy") == []


def _attributes(engine: MemoryEngine, message: str, owner: str) -> dict[str, str]:
    engine.extract_now(owner, message)
    rows = engine.list_memories(owner=owner).data
    return {m.content: str((m.metadata or {}).get("attribute")) for m in rows}


@pytest.mark.parametrize(
    ("said", "kept", "attribute"),
    [
        # a relative or an animal named bare, as people name their own
        ("Nan's got dementia and can't be left on her own", "dementia", "family_member"),
        ("the wife is coeliac so everything has to be gluten free", "coeliac", "family_member"),
        ("Dad's diabetic now", "diabetic", "family_member"),
        ("dog is 13 with bad hips", "hips", None),
        ("Mam has Parkinson's", "Parkinson", None),
        ("the twins came at 30 weeks", "30 weeks", "family_member"),
        # an "if" inside a statement is no hedge of it
        ("my hip dislocates if I sit cross-legged", "dislocates", "health_condition"),
        # a legal status: what a border or an employer asks about
        ("I'm on an electronic tag till June, curfew 7pm", "tag", "legal_status"),
        ("got a DUI back in 2019", "DUI", "legal_status"),
        # how many children and their ages, with no "I have"
        ("3 kids, 2, 5 and 9", "3 kids", "family_member"),
        # the household with an age, whatever the classifier read
        ("We're fostering a girl of 12 at the moment", "girl of 12", "family_member"),
        # a medicine as people are given it
        ("GP put me on statins last month", "statins", "medication"),
        # a rule that reads and then declines ("I got RA" is no possession) leaves it
        ("Got RA, on methotrexate now", "methotrexate", None),
        # a fear is a constraint, not a thing owned
        ("I'm really scared of deep water", "deep water", "health_condition"),
        # "in one day" is no daydream
        ("I get migraines, sometimes three in one day", "migraines", "health_condition"),
        # a dropped "I" before what they run
        ("Run my own plumbing firm", "plumbing firm", None),
        # pregnancy told in weeks, a contract's restriction, a cat called the moggy
        ("also im 19 weeks now, bump is finally showing", "19 weeks", "health_condition"),
        ("I signed a 12-month non-compete", "non-compete", "legal_status"),
        ("the moggy's on steroids for her asthma", "steroids", None),
    ],
)
def test_a_constraint_in_the_shapes_people_tell_it_is_kept(
    engine: MemoryEngine, said: str, kept: str, attribute: str | None
) -> None:
    stored = _attributes(engine, said, owner=f"shape-{abs(hash(said))}")
    held = {c: a for c, a in stored.items() if kept.lower() in c.lower()}
    assert held, stored
    if attribute is not None:
        assert attribute in held.values(), held


@pytest.mark.parametrize(
    "said",
    [
        "Dad walked in and laughed at the telly",  # a relative named bare, no constraint
        "the kids love the beach",
        "one day I'd love to own a farm",  # a daydream
        "Run my script again please",  # a request, not a business
        "Best toys for 2 year old kids?",  # a question
    ],
)
def test_a_bare_name_or_a_shape_alone_keeps_nothing(engine: MemoryEngine, said: str) -> None:
    assert _attributes(engine, said, owner=f"none-{abs(hash(said))}") == {}


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("Veteran. Service dog for PTSD.", "PTSD"),
        ("fled abusive ex, new address is secret", "abusive"),
    ],
)
def test_a_terse_note_of_a_constraint_passes_the_fact_free_gate(
    engine: MemoryEngine, said: str, kept: str
) -> None:
    # the tagger reads sentences and takes a note for nothing lasting; its own words say
    # it is a constraint
    assert _holding(_after(engine, said, owner=f"note-{kept}"), kept)


def test_someone_elses_news_told_tersely_stays_theirs(engine: MemoryEngine) -> None:
    said = "my flatmate says hes allergic to shellfish, can i still cook prawns if i clean the pan"
    assert not _holding(_after(engine, said, owner="hearsay"), "shellfish")


def test_weeks_into_a_course_is_no_pregnancy(engine: MemoryEngine) -> None:
    stored = _attributes(engine, "I am 30 weeks into my degree", owner="weeks-course")
    assert "health_condition" not in stored.values()
