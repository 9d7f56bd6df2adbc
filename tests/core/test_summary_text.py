"""Extractive summaries: sentence boundaries and truncation."""

from __future__ import annotations

import pytest

from memoryd.core.summary import split_sentences, summarize_text, summary_line

TRICKY = "Pi is 3.14 today. See https://example.com/x.y now. A. B."


def test_split_basic() -> None:
    assert split_sentences("Alpha. Beta. Gamma. Delta.") == ["Alpha.", "Beta.", "Gamma.", "Delta."]


def test_split_keeps_decimals_urls_and_versions_whole() -> None:
    assert split_sentences(TRICKY) == [
        "Pi is 3.14 today.",
        "See https://example.com/x.y now.",
        "A.",
        "B.",
    ]
    assert split_sentences("Upgrade to v2.1 first. Then run e.g.this") == [
        "Upgrade to v2.1 first.",
        "Then run e.g.this",
    ]


def test_split_punctuation_runs() -> None:
    assert split_sentences("Wow!! Really? Yes.") == ["Wow!!", "Really?", "Yes."]
    assert split_sentences("What?! No...   Fine") == ["What?!", "No...", "Fine"]


def test_split_newlines_and_empties() -> None:
    assert split_sentences("  One.\n\nTwo!\tThree  ") == ["One.", "Two!", "Three"]
    assert split_sentences("") == []
    assert split_sentences("   ") == []
    assert split_sentences("no punctuation at all") == ["no punctuation at all"]


def test_summarize_truncates_to_max_sentences() -> None:
    assert summarize_text("Alpha. Beta. Gamma. Delta.") == "Alpha. Beta. Gamma."
    assert summarize_text("Alpha. Beta. Gamma. Delta.", max_sentences=1) == "Alpha."
    assert summarize_text(TRICKY) == "Pi is 3.14 today. See https://example.com/x.y now. A."


def test_summarize_short_text_unchanged() -> None:
    assert summarize_text("One. Two. Three.") == "One. Two. Three."
    # Short text keeps its own whitespace (only the ends are stripped).
    assert summarize_text("  One.\nTwo.  ") == "One.\nTwo."


def test_summarize_long_text_joins_with_single_spaces() -> None:
    assert summarize_text("A.\n\nB.\tC.   D.") == "A. B. C."


@pytest.mark.parametrize("limit", [0, -3])
def test_summarize_non_positive_limit_keeps_one(limit: int) -> None:
    assert summarize_text("A. B.", max_sentences=limit) == "A."


def test_summary_line() -> None:
    assert summary_line("factual", "editor", "Uses vim. Likes tabs. Hates emacs. Loves C.") == (
        "[factual] editor: Uses vim. Likes tabs. Hates emacs."
    )
    assert summary_line("episodic", "k", "Short.") == "[episodic] k: Short."
