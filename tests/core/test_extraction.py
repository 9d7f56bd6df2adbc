"""Rule extraction: what people state about themselves, as third-person
facts with slots, and nothing from questions, tasks, fiction or other people's words.

The labelled sets in bench/data/extraction are scored by tests/eval/test_eval_extraction.py;
these tests pin the behaviour of each part with phrasings of their own.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.core.extraction import (
    MAX_FACT_LENGTH,
    MAX_INPUT_CHARS,
    Fact,
    extract_facts,
    fact_metadata,
    slugify,
)
from memoryd.core.extraction.grammar import rewrite

CURLY = "\u2019"


def contents(text: str) -> list[str]:
    return [f.content for f in extract_facts(text)]


def only(text: str) -> Fact:
    facts = extract_facts(text)
    assert len(facts) == 1, facts
    return facts[0]


def stored(text: str, *values: str) -> None:
    """Every value appears in some fact extracted from ``text``."""
    found = " | ".join(contents(text)).lower()
    for value in values:
        assert value.lower() in found, (text, contents(text))


# --- what is remembered, per kind -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values", "slot"),
    [
        ("My name is Ingrid Larsen.", ["Ingrid Larsen"], "name"),
        ("Please call me Teo.", ["Teo"], "preferred_name"),
        ("I'm 52 years old.", ["52"], "age"),
        ("My birthday is on March 9.", ["March 9"], "birthday"),
        ("My pronouns are she/they.", ["she/they"], "pronouns"),
        ("I live in Rotterdam with my husband.", ["Rotterdam"], "home_location"),
        ("I moved to Kyoto in the spring.", ["Kyoto"], "home_location"),
        ("I'm originally from Tbilisi.", ["Tbilisi"], "hometown"),
        ("I work at Siemens Healthineers.", ["Siemens Healthineers"], "employer"),
        ("I'm a structural engineer.", ["structural engineer"], "occupation"),
        ("I work in logistics.", ["logistics"], "industry"),
        ("I studied marine biology at the University of Bergen.", ["marine biology"], None),
        ("My wife's name is Leila.", ["Leila"], "family:partner"),
        ("My brother Piotr lives in Gdansk.", ["Piotr", "Gdansk"], None),
        ("I have two daughters.", ["two daughters"], None),
        ("My dog is called Biscuit.", ["Biscuit"], "pet:dog:name"),
        ("We adopted a tabby named Miso.", ["Miso"], "pet:cat:name"),
        ("I have asthma.", ["asthma"], None),
        ("I'm pescatarian.", ["pescatarian"], "diet"),
        ("I'm allergic to shellfish.", ["shellfish"], "allergy:shellfish"),
        ("I'm lactose intolerant.", ["lactose"], None),
        ("I speak Dutch and a bit of Farsi.", ["Dutch"], None),
        ("I'm learning Korean.", ["Korean"], "learning:korean"),
        ("I use Neovim on Arch Linux.", ["Neovim"], "tool:editor"),
        ("Our backend is written in Elixir.", ["Elixir"], None),
        ("I drive a Subaru Outback.", ["Subaru Outback"], "vehicle"),
        ("I play the trumpet in a brass band.", ["trumpet"], None),
        ("Every morning I swim at the lido.", ["swim"], None),
        ("I'm running the Berlin half marathon in April.", ["Berlin", "April"], "plan:marathon"),
        ("I can't stand olives.", ["olives"], "opinion:olives"),
        ("I love board games.", ["board games"], "opinion:board_games"),
        ("Always answer in Portuguese.", ["Portuguese"], "instruction:language"),
        ("Keep recipes low-carb.", ["low-carb"], None),
        ("Avoid red/green charts please.", ["red/green"], None),
    ],
)
def test_a_statement_of_each_kind_is_remembered(
    text: str, values: list[str], slot: str | None
) -> None:
    stored(text, *values)
    if slot is not None:
        assert slot in {f.slot for f in extract_facts(text)}


def test_facts_are_third_person_statements() -> None:
    assert contents("I live in Rotterdam with my husband.") == [
        "User lives in Rotterdam with their husband"
    ]
    assert contents("My dog is called Biscuit.") == ["User's dog is called Biscuit"]
    assert contents("I usually start with tests first.") == ["User usually starts with tests first"]
    assert contents("Keep recipes low-carb.") == [
        "User wants the assistant to keep recipes low-carb"
    ]


def test_a_statement_inside_a_longer_message_or_next_to_a_question() -> None:
    stored("Any dinner ideas? I'm gluten-intolerant.", "gluten-intolerant")
    stored("I'm vegan, can you suggest a lasagna?", "vegan")
    stored("Quick one: I use Emacs on macOS. How do I bind a key?", "Emacs")
    text = "I prefer TypeScript and I use Postgres for this project. My dog is called Rex."
    stored(text, "TypeScript", "Postgres", "Rex")
    assert len(extract_facts(text)) == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I don't like Python", "User does not like Python"),
        (f"I don{CURLY}t like Python", "User does not like Python"),
        ("I do not like Python", "User does not like Python"),
        ("I DON'T LIKE Python", "User does not like Python"),
        ("i dont eat pork", "User does not eat pork"),
    ],
)
def test_negation_is_kept(text: str, expected: str) -> None:
    assert contents(text) == [expected]


def test_abbreviations_do_not_end_a_sentence() -> None:
    assert contents("Greetings. I am Mr. Chukwuemeka Obi. I need help.") == [
        "User's name is Chukwuemeka Obi"
    ]
    assert contents("I live in St. Louis.") == ["User lives in St. Louis"]


def test_dots_inside_words_stay() -> None:
    stored("I build with Next.js and deploy to fly.io.", "Next.js")
    stored("I'm on Python 3.12 at work.", "3.12")


# --- what is not remembered ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # questions, including questions about the user
        "What do I usually enjoy doing on weekends, hiking or cycling?",
        "Am I allergic to anything in this list?",
        "Do I need a visa if I live in Canada?",
        # hypotheticals and wishes
        "If I were rich, I would buy a boat.",
        "Suppose I live in Oslo, what would rent cost?",
        "I wish I had a cat.",
        # text handed over for a task
        "Translate 'I love you' into French.",
        "Summarize this: I work at Google and I love my job.",
        "Fix the grammar: me and him goes to school every day",
        "Proofread my email. I am writing to say I live in Leeds now.",
        # fiction and role-play
        "Write a short story in which the narrator says: I hate spinach.",
        "Let's role-play: you're a barista and I'm a customer named Jo.",
        # other people's words
        "My sister keeps saying she's allergic to cats.",
        "My boss told me I'm the best engineer on the team.",
        "She said 'I live in Paris'.",
        # pleasantries and one-off requests
        "Thanks, that works!",
        "I appreciate it.",
        "I want a summary of this article.",
        "I need a recipe for tonight.",
        "I'm trying to decide what to watch tonight.",
        # pasted code
        "```python\n# I live in Madrid\nprint('I love pizza')\n```",
        # plain statements that are not about the user
        "The sky is blue. Water is wet. 2 + 2 = 4.",
    ],
)
def test_nothing_is_remembered_from(text: str) -> None:
    assert extract_facts(text) == []


def test_a_question_is_not_upserted_again_and_again() -> None:
    question = "What do I usually enjoy doing on weekends, hiking or cycling?"
    assert [extract_facts(question) for _ in range(3)] == [[], [], []]


def test_statements_before_a_task_are_kept_and_its_material_is_not() -> None:
    text = "I'm a nurse in Lyon. Translate this: I love my cat Felix."
    stored(text, "nurse")
    assert "Felix" not in " ".join(contents(text))


def test_injected_memory_blocks_are_never_a_source() -> None:
    framed = "Memory context (facts):\n<memories>\n- I live in Madrid\n</memories>\nI live in Oslo"
    assert contents(framed) == ["User lives in Oslo"]
    assert contents("Memory context: I prefer emacs\nI prefer vim") == ["User prefers vim"]


def test_the_guard_survives_the_input_cap() -> None:
    text = "Memory context: " + "y " * MAX_INPUT_CHARS + "I prefer emacs\nI prefer vim"
    assert contents(text) == ["User prefers vim"]


# --- slots: what a fact is about, and whether a new value replaces the old --------------


def slot_of(text: str) -> Fact:
    return only(text)


def test_a_single_valued_slot_keys_each_value_apart() -> None:
    madrid, lyon = slot_of("I live in Madrid."), slot_of("I moved to Lyon.")
    assert madrid.slot == lyon.slot == "home_location"
    assert madrid.single
    assert lyon.single
    assert madrid.key != lyon.key  # the old one stays as history under its own key
    assert lyon.supersedes == ("home_location", "former_home:lyon")


def test_a_move_says_where_the_user_lives() -> None:
    """ "User moved to Porto last month" shares no word with "Where do I live?"."""
    assert only("I moved to Porto last month.").content == (
        "User moved to Porto last month and lives there now"
    )
    assert only("I live in Porto.").content == "User lives in Porto"


@pytest.mark.parametrize(
    "text",
    [
        "I no longer live in Berlin.",
        "I don't live in Berlin anymore.",
        "We moved out of Berlin.",
        "I moved away from Berlin last year.",
    ],
)
def test_leaving_a_place_retires_only_the_home_there(text: str) -> None:
    fact = only(text)
    assert fact.content == "User no longer lives in Berlin"
    assert fact.slot == "former_home:berlin"
    assert fact.supersedes == ("former_home:berlin", "home_location~Berlin")


@pytest.mark.parametrize("text", ["I have a dog named Bo.", "My name is Al.", "My wife is Li."])
def test_two_letter_names_are_names(text: str) -> None:
    assert only(text).content.endswith(text.rstrip(".").split()[-1])


@pytest.mark.parametrize("text", ["I am OK.", "I like it.", "I am up."])
def test_two_letters_that_are_not_names_store_nothing(text: str) -> None:
    assert extract_facts(text) == []


def test_a_repeated_statement_has_the_same_key() -> None:
    assert slot_of("I live in Madrid.").key == slot_of("As I said, I live in Madrid!").key


def test_a_new_preference_of_the_same_kind_of_tool_replaces_the_old() -> None:
    ts, js = slot_of("I prefer TypeScript"), slot_of("Actually, I prefer JavaScript now.")
    assert ts.slot == js.slot == "preference:language"
    assert js.content == "User prefers JavaScript"


def test_a_switch_retires_the_category() -> None:
    vim, emacs = slot_of("I use Vim."), slot_of("Actually, I've switched to Emacs.")
    assert emacs.slot == vim.slot == "tool:editor"
    mysql, pg = slot_of("We use MySQL."), slot_of("We migrated to PostgreSQL.")
    assert mysql.slot == "tool:database:mysql"
    assert "tool:database:*" in pg.supersedes


def test_a_negation_takes_the_slot_of_its_positive() -> None:
    like, dislike = slot_of("I love mushrooms."), slot_of("I don't like mushrooms anymore.")
    assert like.slot == dislike.slot == "opinion:mushrooms"
    assert like.key != dislike.key
    assert dislike.single


def test_multi_valued_slots_add() -> None:
    spanish, portuguese = slot_of("I speak Spanish."), slot_of("I also speak Portuguese.")
    assert not spanish.single
    assert spanish.key != portuguese.key
    peanuts, shellfish = slot_of("I'm allergic to peanuts."), slot_of("I'm allergic to shellfish.")
    assert not peanuts.supersedes
    assert peanuts.key != shellfish.key


def test_follow_up_clauses_name_what_the_previous_one_introduced() -> None:
    stored("I have a hamster. His name is Gizmo.", "Gizmo")
    assert "pet:hamster:name" in {
        f.slot for f in extract_facts("I have a hamster. Her name is Dot.")
    }
    renamed = extract_facts("I legally changed my name last month, it's Rowan now.")
    assert [(f.slot, f.content) for f in renamed] == [("name", "User's name is Rowan")]


# --- keys and slugs ---------------------------------------------------------------------


def test_non_english_values_get_distinct_keys() -> None:
    coffee, tea = only("I prefer 咖啡"), only("I prefer 茶。然后")
    assert coffee.key == "preference:咖啡"
    assert tea.key == "preference:茶"


def test_decomposed_accents_slug_like_precomposed() -> None:
    assert only("I prefer cafe\u0301").key == only("I prefer caf\u00e9").key


def test_combining_marks_stay_inside_the_slug() -> None:
    assert only("I prefer हिन्दी").key == "preference:हिन्दी"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", "hello_world"),
        ("snake_case__name", "snake_case_name"),
        ("  --lead and trail--  ", "lead_and_trail"),
        ("Next.js", "next_js"),
        ("a" * 50, "a" * 40),
        ("!!!", ""),
        ("", ""),
    ],
)
def test_slugify(text: str, expected: str) -> None:
    assert slugify(text) == expected


def test_source_and_metadata() -> None:
    fact = extract_facts("I live in Oslo", source="assistant")[0]
    assert fact.source == "assistant"
    assert fact_metadata(fact, "2024-01-01T00:00:00.000Z") == {
        "category": "location",
        "extractedAt": "2024-01-01T00:00:00.000Z",
        "source": "assistant",
        "subjects": ["user"],
        "slot": "home_location",
        "attribute": "home",
    }
    assert only("I'm getting married on June 3rd.").type == "episodic"
    assert only("I live in Oslo").type == "factual"


@pytest.mark.parametrize("text", ["", None, 42, b"I prefer vim", ["I prefer vim"]])
def test_non_text_gives_nothing(text: object) -> None:
    assert extract_facts(text) == []


def test_str_subclass_is_accepted() -> None:
    class Text(str):
        __slots__ = ()

    assert contents(Text("I prefer vim")) == ["User prefers vim"]


def test_duplicates_within_a_call_collapse() -> None:
    assert contents("I prefer vim. I prefer vim.") == ["User prefers vim"]


# --- bounds -----------------------------------------------------------------------------


def test_only_the_last_64_kib_is_read_and_long_messages_by_their_ends() -> None:
    text = "I prefer prefix-only-editor. " + "x" * 70 * 1024 + " I prefer tail-only-editor."
    found = contents(text)
    assert not any("prefix-only-editor" in c for c in found)
    assert ["tail-only-editor" in c for c in found] == [True]
    pasted = "I'm a chef in Lima. " + "Lorem ipsum dolor sit amet. " * 2000 + "I speak Quechua."
    stored(pasted, "chef", "Quechua")


def test_content_is_capped() -> None:
    text = "I prefer " + " ".join(["words"] * 200)
    assert all(len(c) <= MAX_FACT_LENGTH for c in contents(text))


ADVERSARIAL = [
    "I " * 32768,
    "my " * 21845,
    "I like " * 9362,
    "I am a " * 9362,
    "'" * 65536,
    "I really " + "really " * 9000 + "like tea",
    "I live in " + "x " * 32000,
    "and I " * 10922,
    "Memory context: " * 4000,
    '"I ' * 21845,
    "I like" + " " * 65530,
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_64_kib_inputs_stay_linear(text: str) -> None:
    """A bound on the regexes, not a speed test: catastrophic backtracking would take
    seconds to minutes here; the benchmark measures the real cost (~20-30 ms)."""
    start = time.perf_counter()
    extract_facts(text[:MAX_INPUT_CHARS])
    assert time.perf_counter() - start < 5.0


TRIGGERS = [
    "I prefer",
    "I like",
    "I'm",
    "I am a",
    "my dog",
    "my name is",
    "I live in",
    "I work at",
    "call me",
    "always",
    "Memory context:",
    "<memories>",
    "```",
    "and I",
    "but I",
    "?",
    "'",
    '"',
]
PUNCT = [".", ",", "!", "?", ";", ":", "\n", " ", "\t", "-", "。", "a.b", "(", ")"]
mixed_text = st.lists(
    st.one_of(st.sampled_from(TRIGGERS), st.sampled_from(PUNCT), st.text(max_size=30)),
    max_size=40,
).map(" ".join)


def check_invariants(facts: list[Fact]) -> None:
    keys = [f.key for f in facts]
    assert len(keys) == len(set(keys))
    for fact in facts:
        assert 3 <= len(fact.content) <= MAX_FACT_LENGTH
        assert fact.content.startswith("User") or "User" in fact.content
        fact.content.encode("utf-8")  # storable
        assert fact.slot
        assert fact.key.startswith(fact.slot)
        assert not fact.key.endswith(("_", ":"))
        assert fact.type in ("factual", "episodic")
        assert set(fact.supersedes) >= ({fact.slot} if fact.single else set())


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    check_invariants(extract_facts(text))


@settings(max_examples=300, deadline=None)
@given(mixed_text)
def test_trigger_soup_keeps_the_invariants(text: str) -> None:
    check_invariants(extract_facts(text, source="assistant"))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(TRIGGERS), st.sampled_from(TRIGGERS + PUNCT), st.integers(100, 4000))
def test_repeated_fragments_stay_linear(first: str, second: str, times: int) -> None:
    start = time.perf_counter()
    check_invariants(extract_facts(((first + " " + second + " ") * times)[:MAX_INPUT_CHARS]))
    assert time.perf_counter() - start < 5.0


def test_letters_whose_lower_case_is_longer_do_not_raise() -> None:
    """Found by hypothesis: "İ" matches the case-insensitive "i" but lowers to two chars."""
    check_invariants(extract_facts("\u0130"))
    check_invariants(extract_facts("\u0130 live in Oslo. I live in Bergen."))


def test_surrogates_do_not_raise() -> None:
    check_invariants(extract_facts("I prefer \ud800\udfff thing"))
    check_invariants(extract_facts("I live in Oslo \ud800"))


def test_the_rule_union_matches_exactly_where_some_rule_does() -> None:
    """``any_rule`` only skips clauses no rule matches: checked on every clause of the
    labelled extraction sets (facts, questions, small talk) and their lower-cased forms."""
    import json
    from pathlib import Path

    from memoryd.core.extraction.segment import clauses, prepare, windows
    from memoryd.core.extraction.table import any_rule, compiled_rules

    union = any_rule()
    assert union is not None
    root = Path(__file__).resolve().parents[2] / "bench" / "data" / "extraction"
    texts = [
        json.loads(line)["text"]
        for path in sorted(root.glob("*/*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and "text" in json.loads(line)
    ]
    checked = matched = 0
    for text in texts:
        for window in windows(text):
            for clause in clauses(prepare(window)):
                for form in (clause.text, clause.text.lower()):
                    some = any(p.match(form) for _, p, _ in compiled_rules())
                    assert (union.match(form) is not None) == some, form
                    checked += 1
                    matched += some
    assert checked > 500
    assert 0 < matched < checked  # both outcomes exercised


@pytest.mark.parametrize(
    ("said", "content"),
    [
        ("im on a zero hours contract at a warehouse", "User is on a zero hours contract"),
        ("I'm FIFO, two weeks on one off", "User is FIFO, two weeks on one off"),  # no name
    ],
)
def test_how_and_where_someone_works_in_their_words(said: str, content: str) -> None:
    facts = extract_facts(said)
    assert [f.content for f in facts if f.content.startswith(content)], facts
    assert all(f.attribute != "name" for f in facts)


def test_a_mine_after_an_article_is_the_noun() -> None:
    assert rewrite("I work at a gold mine") == "User works at a gold mine"
    assert rewrite("I drive trucks at the mine") == "User drives trucks at the mine"
    assert rewrite("I said the blue one is mine") == "User said the blue one is theirs"


@pytest.mark.parametrize(
    "said",
    [
        "ok so lets do a story where im a vet called Jo and im allergic to cats",
        "lets do a roleplay where you're my landlord and I'm three months behind on rent",
    ],
)
def test_the_set_up_of_a_make_believe_is_no_standing_rule_nor_a_fact(said: str) -> None:
    # an instruction would go into every later request of the person
    assert extract_facts(said) == []
