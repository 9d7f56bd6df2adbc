"""Regex fact extraction (SPEC §5): the reference suite ported, plus memoryd's rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.core.extraction import (
    MAX_FACT_LENGTH,
    MAX_INPUT_CHARS,
    MIN_FACT_LENGTH,
    Fact,
    extract_facts,
    fact_metadata,
    slugify,
)

CURLY = "\u2019"


def only(text: str, category: str | None = None) -> Fact:
    """The single fact extracted from `text` (optionally of one category)."""
    facts = [f for f in extract_facts(text) if category is None or f.category == category]
    assert len(facts) == 1, facts
    return facts[0]


def contents(text: str) -> list[str]:
    return [f.content for f in extract_facts(text)]


# --- the reference suite ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "category", "needle", "kind"),
    [
        ("I prefer dark mode in my editor.", "preference", "dark mode", "factual"),
        ("I like TypeScript over JavaScript.", "preference", "typescript", "factual"),
        ("My favorite is VS Code for editing.", "preference", "vs code", "factual"),
        ("I'll use PostgreSQL for this project.", "decision", "postgresql", "episodic"),
        ("I chose React for the frontend.", "decision", "react", "episodic"),
        ("I decided to migrate to Docker.", "decision", "migrate to docker", "episodic"),
        ("I went with Tailwind for styling.", "decision", "tailwind", "episodic"),
        ("I usually start with tests first.", "pattern", "start with tests", "factual"),
        ("I always use ESLint in my projects.", "pattern", "eslint", "factual"),
        ("I never commit directly to main.", "pattern", "commit directly to main", "factual"),
        ("I tend to use functional components.", "pattern", "functional components", "factual"),
    ],
)
def test_reference_triggers(text: str, category: str, needle: str, kind: str) -> None:
    fact = only(text)
    assert fact.category == category
    assert fact.type == kind
    assert needle in fact.content.lower()


def test_negated_preference_keeps_its_negation() -> None:
    fact = only("I don't like JavaScript callbacks.")
    assert fact.category == "preference"
    assert "javascript callbacks" in fact.content.lower()
    assert fact.content == "User doesn't like JavaScript callbacks"
    assert "likes" not in fact.content.lower()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I don't like Python", "User doesn't like Python"),
        (f"I don{CURLY}t like Python", "User doesn't like Python"),
        ("I do not like Python", "User does not like Python"),
        ("I DON'T LIKE Python", "User doesn't like Python"),
    ],
)
def test_negation_is_never_stored_as_a_like(text: str, expected: str) -> None:
    assert contents(text) == [expected]
    assert "User likes Python" not in contents(text)
    assert "Python" not in contents(text)


def test_mixed_text_yields_every_category() -> None:
    text = "I prefer TypeScript. I'll use Next.js for this project. I usually write tests first."
    facts = extract_facts(text)
    assert len(facts) >= 3
    assert [f.category for f in facts] == ["preference", "decision", "pattern"]
    decision = next(f for f in facts if f.category == "decision")
    # SPEC differs from the reference here: a dot inside a word does not end the object.
    assert "Next.js for this project" in decision.content


def test_duplicates_within_a_call_collapse() -> None:
    facts = extract_facts("I prefer vim. I prefer vim.")
    assert len(facts) == 1
    assert facts[0].content == "User prefers vim"


@pytest.mark.parametrize("text", ["", None, 42, b"I prefer vim", ["I prefer vim"]])
def test_non_text_or_empty_gives_nothing(text: object) -> None:
    assert extract_facts(text) == []


def test_plain_statements_give_nothing() -> None:
    assert extract_facts("The sky is blue. Water is wet. 2 + 2 = 4.") == []


def test_key_is_category_and_object_slug() -> None:
    assert only("I prefer dark mode.").key == "preference:dark_mode"


def test_content_is_capped() -> None:
    facts = extract_facts("I prefer " + "a" * 600 + ".")
    assert facts
    assert all(len(f.content) <= MAX_FACT_LENGTH for f in facts)


def test_content_is_cut_at_a_word_boundary() -> None:
    fact = only("I prefer " + "word " * 200)
    assert len(fact.content) <= MAX_FACT_LENGTH
    assert fact.content.endswith(" word")


def test_only_the_last_64_kib_is_read() -> None:
    text = "I prefer prefix-only-editor. " + "x" * 70 * 1024 + " I prefer tail-only-editor."
    assert len(text) > MAX_INPUT_CHARS
    found = contents(text)
    assert not any("prefix-only-editor" in c for c in found)
    assert sum("tail-only-editor" in c for c in found) == 1


# --- the capture boundaries -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I prefer v2.1 of the tool.", "User prefers v2.1 of the tool"),
        ("I prefer example.com for docs.", "User prefers example.com for docs"),
        ("I prefer tea! Then more", "User prefers tea"),
        ("I prefer tea? Then more", "User prefers tea"),
        ("I prefer tea; then more", "User prefers tea"),
        ("I prefer tea, then more", "User prefers tea"),
        ("I prefer tea\nthen more", "User prefers tea"),
        ("I prefer tea\r\nthen more", "User prefers tea"),
        ("I prefer  green \t  tea  .", "User prefers green tea"),
        ("I prefer 咖啡。然后", "User prefers 咖啡"),
    ],
)
def test_object_boundaries(text: str, expected: str) -> None:
    assert contents(text) == [expected]


def test_new_first_person_clause_splits_the_object() -> None:
    assert contents("I like tea and I hate coffee") == ["User likes tea", "User hates coffee"]
    assert contents("I like tea but I'll use coffee") == ["User likes tea", "User will use coffee"]
    # "and" without a new "I" clause stays inside the object.
    assert contents("I like tea and biscuits") == ["User likes tea and biscuits"]
    assert contents("I like tea and Ivan") == ["User likes tea and Ivan"]


def test_trigger_does_not_span_lines() -> None:
    assert extract_facts("I\nprefer vim") == []


def test_short_objects_are_dropped() -> None:
    assert MIN_FACT_LENGTH == 3
    assert extract_facts("I like Go.") == []
    assert extract_facts("I prefer  a  .") == []
    assert contents("I like Rust.") == ["User likes Rust"]


def test_objects_without_a_slug_are_dropped() -> None:
    assert extract_facts("I prefer @@@ ###.") == []


# --- content wording and polarity ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I prefer dark mode", "User prefers dark mode"),
        ("I really prefer dark mode", "User really prefers dark mode"),
        ("I like dark mode", "User likes dark mode"),
        ("I really like dark mode", "User really likes dark mode"),
        ("My favorite is VS Code", "User's favorite is VS Code"),
        ("my favourite are cats", "User's favourite are cats"),
        ("I hate semicolons", "User hates semicolons"),
        ("I dislike semicolons", "User dislikes semicolons"),
        ("I avoid semicolons", "User avoids semicolons"),
        ("I enjoy pairing", "User enjoys pairing"),
        ("I love pairing", "User loves pairing"),
        ("I'll use PostgreSQL", "User will use PostgreSQL"),
        ("I will use PostgreSQL", "User will use PostgreSQL"),
        (f"I{CURLY}ll use Rust", "User will use Rust"),
        ("I chose React", "User chose React"),
        ("I decided to migrate to Docker", "User decided to migrate to Docker"),
        ("I have decided to migrate to Docker", "User has decided to migrate to Docker"),
        ("I decided against Kubernetes", "User decided against Kubernetes"),
        ("I'm going to use Vite", "User is going to use Vite"),
        ("I'm going to adopt Vite", "User is going to adopt Vite"),
        ("I'm going to go with Vite", "User is going to go with Vite"),
        ("I selected Vite", "User selected Vite"),
        ("I picked Vite", "User picked Vite"),
        ("I went with Vite", "User went with Vite"),
        ("I usually start with tests first", "User usually start with tests first"),
        ("I typically rebase", "User typically rebase"),
        ("I often rebase", "User often rebase"),
        ("I frequently rebase", "User frequently rebase"),
        ("I regularly rebase", "User regularly rebase"),
        ("I never rebase", "User never rebase"),
        ("I tend to rebase", "User tends to rebase"),
        ("i PREFER dark mode", "User prefers dark mode"),
    ],
)
def test_content_wording(text: str, expected: str) -> None:
    assert contents(text) == [expected]


def test_negation_is_not_also_matched_as_a_like() -> None:
    assert len(extract_facts("I don't like X-Men")) == 1
    assert len(extract_facts("I do not like X-Men")) == 1


def test_really_like_is_matched_once() -> None:
    assert contents("I really like Python") == ["User really likes Python"]


def test_polarity_change_overwrites_by_key() -> None:
    liked, hated = only("I like Python"), only("I hate Python")
    assert liked.key == hated.key == "preference:python"
    assert liked.content != hated.content


def test_key_slugs_the_object_not_the_verb() -> None:
    assert only("I'll use PostgreSQL").key == only("I went with PostgreSQL").key


# --- ordering and dedupe --------------------------------------------------------------


def test_categories_come_in_table_order_and_text_order_within() -> None:
    facts = extract_facts("I usually rebase. I chose React. I love tea. I prefer vim.")
    assert [f.content for f in facts] == [
        "User loves tea",
        "User prefers vim",
        "User chose React",
        "User usually rebase",
    ]


def test_first_occurrence_of_a_key_wins() -> None:
    assert contents("I hate Python. I like Python.") == ["User hates Python"]
    # Same object in two categories is two keys.
    assert len(extract_facts("I prefer vim. I chose vim.")) == 2


# --- non-English keys -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "first_key"),
    [
        ("咖啡", "茶", "preference:咖啡"),
        ("чай", "кофе", "preference:чай"),
        ("café", "crème", "preference:café"),
    ],
)
def test_non_english_objects_get_distinct_keys(first: str, second: str, first_key: str) -> None:
    a, b = only(f"I prefer {first}"), only(f"I prefer {second}")
    assert a.key == first_key
    assert b.key == f"preference:{second}"
    assert a.key != b.key


def test_combining_marks_stay_inside_the_slug() -> None:
    # Devanagari vowel signs are marks, not letters; splitting on them would mangle keys.
    assert only("I prefer हिन्दी").key == "preference:हिन्दी"


def test_decomposed_accents_slug_like_precomposed() -> None:
    assert only("I prefer cafe\u0301").key == "preference:café"


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


def test_slugify_limit_then_strip() -> None:
    assert slugify("abc def", limit=4) == "abc"
    assert slugify("abcdef", limit=3) == "abc"
    assert slugify("abc", limit=0) == ""


# --- self-feedback guard, source and metadata ------------------------------------------


def test_injected_memory_context_is_ignored() -> None:
    text = "Memory context: I prefer emacs\nI prefer vim"
    assert contents(text) == ["User prefers vim"]
    assert contents("  Memory context: I prefer emacs\nI prefer vim") == ["User prefers vim"]


def test_guard_survives_the_input_cap() -> None:
    # The cap cuts the "Memory context:" prefix off; the rest of that line is still ignored.
    text = "Memory context: " + "y " * MAX_INPUT_CHARS + "I prefer emacs\nI prefer vim"
    assert contents(text) == ["User prefers vim"]


def test_source_and_metadata() -> None:
    fact = only("I prefer vim", "preference")
    assert fact.source == "user"
    said = extract_facts("I prefer vim", source="assistant")[0]
    assert said.source == "assistant"
    meta = fact_metadata(said, "2024-01-01T00:00:00.000Z")
    assert meta == {
        "category": "preference",
        "extractedAt": "2024-01-01T00:00:00.000Z",
        "source": "assistant",
    }


def test_str_subclass_is_accepted() -> None:
    class Text(str):
        __slots__ = ()

    assert contents(Text("I prefer vim")) == ["User prefers vim"]


# --- properties ---------------------------------------------------------------------------

TRIGGERS = [
    "I prefer",
    "I really like",
    "I like",
    "my favorite is",
    "I don't like",
    f"I don{CURLY}t like",
    "I do not like",
    "I hate",
    "I love",
    "I'll use",
    f"I{CURLY}ll use",
    "I have decided to",
    "I'm going to go with",
    "I went with",
    "I usually",
    "I tend to",
    "Memory context:",
    "and I",
    "but I",
]
PUNCT = [".", ",", "!", "?", ";", "\n", "\r\n", " ", "  ", "\t", "_", "-", "。", "a.b"]

mixed_text = st.lists(
    st.one_of(st.sampled_from(TRIGGERS), st.sampled_from(PUNCT), st.text(max_size=30)),
    max_size=30,
).map(" ".join)


def check_invariants(facts: list[Fact]) -> None:
    expected_type = {"preference": "factual", "decision": "episodic", "pattern": "factual"}
    keys = [f.key for f in facts]
    assert len(keys) == len(set(keys))
    for fact in facts:
        assert MIN_FACT_LENGTH <= len(fact.content) <= MAX_FACT_LENGTH
        assert fact.key.startswith(f"{fact.category}:")
        assert len(fact.key) > len(fact.category) + 1
        assert not fact.key.endswith("_")
        assert fact.type == expected_type[fact.category]


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    check_invariants(extract_facts(text))


@settings(max_examples=200, deadline=None)
@given(mixed_text)
def test_trigger_soup_never_raises(text: str) -> None:
    check_invariants(extract_facts(text, source="assistant"))


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(TRIGGERS[:16]), st.text(min_size=1, max_size=2000))
def test_long_objects_stay_within_bounds(trigger: str, tail: str) -> None:
    check_invariants(extract_facts(f"{trigger} {tail}"))


def test_surrogates_do_not_raise() -> None:
    check_invariants(extract_facts("I prefer \ud800\udfff thing"))
