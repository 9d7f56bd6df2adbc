"""Extractive summaries: the first few sentences of a memory.

Summaries feed compact context blocks and listings. Taking leading sentences is
model-free, deterministic and never invents text, which matters because a summary is
injected into prompts as if it were the stored memory.
"""

from __future__ import annotations

import re

# A sentence ends at a run of . ! ? that is followed by whitespace (or the end of the
# text). Requiring the whitespace keeps 3.14, v2.1, e.g. and URLs like a.b/c.d whole.
_BOUNDARY = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into stripped sentences, each keeping its end punctuation."""
    return [part.strip() for part in _BOUNDARY.split(text) if part.strip()]


def summarize_text(text: str, max_sentences: int = 3) -> str:
    """The first ``max_sentences`` sentences joined by a space.

    Short text is returned as-is (stripped) so original line breaks survive when there
    is nothing to cut. ``max_sentences`` below 1 is treated as 1: a summary of
    non-empty content should never be empty.
    """
    limit = max(1, max_sentences)
    sentences = split_sentences(text)
    if len(sentences) <= limit:
        return text.strip()
    return " ".join(sentences[:limit])


def summary_line(type_: str, key: str, content: str) -> str:
    """One listing line: ``[type] key: summary``."""
    return f"[{type_}] {key}: {summarize_text(content)}"
