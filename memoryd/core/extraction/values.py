"""The pieces every rule shares: the ``Draft`` a rule returns, pattern fragments, and
how a captured value is trimmed, slugged and checked before it becomes a fact.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.grammar import rewrite


@dataclass(frozen=True, slots=True)
class Draft:
    kind: str
    slot: str
    value: str
    content: str
    single: bool = False
    episodic: bool = False
    replaces: tuple[str, ...] = ()


Build = Callable[[re.Match[str], str], list[Draft] | None]

# -- pieces of patterns ----------------------------------------------------------------
AM = r"I(?:'m|\s+am|m|\s+m)"
HAVE = r"I(?:'ve|\s+have)"
ADV = (
    r"(?:(?:really|also|just|currently|still|now|actually|mostly|usually|always|"
    r"generally|recently|finally|only|even|absolutely|totally|definitely|primarily|"
    r"mainly|basically|officially|already|kind\s+of|sort\s+of|pretty\s+much|"
    r"personally|honestly|literally|truly|genuinely|seriously|secretly|happily|"
    r"proudly|exclusively|newly|currently|mostly|fairly|quite|pretty|very|somewhat|"
    r"reasonably|reasonably|natively|pure|strictly|nearly|almost|also\s+still|still)\s+)*"
)
NOT = r"(?:don't|do\s+not|dont|never|no\s+longer|can't|cannot|can\s+not|won't|didn't)"
V = r"(?P<v>.+)"
_CAP = r"(?-i:[A-Z\u00c0-\u024f][\w\u00c0-\u024f'.-]*)"
NAME = rf"(?P<v>{_CAP}(?:\s+{_CAP}){{0,2}})"

_CUT = re.compile(
    r"\s+(?:last|this|next)\s+(?:year|month|week|summer|winter|spring|fall|autumn|weekend)\b.*$"
    r"|\s+(?:in|since|from)\s+(?:19|20)\d\d\b.*$|\s+(?:\w+\s+){1,2}ago\b.*$"
    r"|\s+for\s+(?:the\s+(?:past|last)\s+)?(?:\d+|a|an|two|three|four|five|six|seven|eight|nine|"
    r"ten|several|many|a\s+few|a\s+couple\s+of)\s+(?:years?|months?|weeks?|days?|decades?)\b.*$"
    r"|\s+I\s+(?:only|also|just|really|am|have|do|get|find|need|want|think)\b.*$"
    r"|\s+(?:because|since|which|who|whom|that's|so\s+that|so|but|though|although|when|"
    r"whenever|while|where|if|until|unless|and\s+(?:I|I'm|I've|my|we)|as\s+well\s+as|"
    r"and\s+it|and\s+that|and\s+want|and\s+need|and\s+would|cause|cuz|coz|haha|lol|"
    r"thanks|thank\s+you|btw|though)\b.*$|\s+[-\u2013\u2014]+\s.*$|\s*\u2014.*$",
    re.IGNORECASE | re.DOTALL,
)
_TAIL = re.compile(
    r"(?:\s+(?:now|anymore|any\s+more|these\s+days|nowadays|at\s+the\s+moment|atm|"
    r"right\s+now|currently|too|as\s+well|lol|haha|btw|by\s+the\s+way|fyi|though|"
    r"either|also|still|again|instead|for\s+now|by\s+now|actually|honestly|"
    r"really|tbh|though|ok|okay|originally|here|haha|by\s+the\s+way|myself|personally|"
    r"to\s+be\s+honest|from\s+now\s+on))+\s*$"
    r"|[\s,;:!.\u2026~*\"']+$",
    re.IGNORECASE,
)


def trim(value: str) -> str:
    """The value without what follows it in the clause and without filler at its end."""
    value = _CUT.sub("", value.strip())
    for _ in range(3):
        shorter = _TAIL.sub("", value).strip()
        if shorter == value:
            break
        value = shorter
    return value.strip(" ,;:!\"'").rstrip(".")


def _is_slug_char(char: str) -> bool:
    """Letters and digits of every script, plus combining marks (Devanagari, etc.)."""
    return char.isalnum() or unicodedata.category(char).startswith("M")


@functools.lru_cache(maxsize=1 << 14)
def slugify(text: str, limit: int = 40) -> str:
    """Lower-case, non-alphanumeric runs to "_", first `limit` chars, "_" trimmed.

    Letters of every script count, so 咖啡 and 茶 get distinct keys; NFC first so a
    decomposed "café" slugs the same as a precomposed one.
    """
    limit = max(limit, 0)
    out: list[str] = []
    for char in unicodedata.normalize("NFC", text.lower()):
        if len(out) >= limit:
            break
        if _is_slug_char(char):
            out.append(char)
        elif not out or out[-1] != "_":
            out.append("_")
    return "".join(out[:limit]).strip("_")


def slug(text: str) -> str:
    return slugify(text)


def too_short(value: str) -> bool:
    """Under two characters, unless one wide letter (茶 is a word) or a number."""
    value = value.strip()
    if len(value) >= 2 or value.isdigit():
        return False
    return not any(c.isalnum() and unicodedata.east_asian_width(c) in "WF" for c in value)


def deictic(value: str) -> bool:
    """A value that points at the conversation ("it", "your answer"), not at a thing."""
    low = value.lower()
    words = low.split()
    if not words or low in lx.DEICTIC:
        return True
    return words[0] in _POINTERS or (words[0] in lx.DEICTIC and len(words) <= 2)


_POINTERS = frozenset(
    ["it", "this", "that", "these", "those", "them", "you", "your", "here", "there"]
)


def first(words: dict[str, str] | frozenset[str], text: str) -> str | None:
    """The first lexicon phrase in ``text`` (the longest one starting there)."""
    tokens = re.sub(r"[^\w+#.!'/-]+", " ", text.lower()).split()
    for i in range(len(tokens)):
        for size in (3, 2, 1):
            phrase = " ".join(tokens[i : i + size]).rstrip(".,'!")
            if phrase in words:
                return phrase
    return None


def find(words: dict[str, str] | frozenset[str], text: str) -> str | None:
    """The longest lexicon phrase in ``text`` (whole words), or None."""
    low = " " + re.sub(r"[^\w+#.!'/-]+", " ", text.lower()) + " "
    best: str | None = None
    for size in (3, 2, 1):
        tokens = low.split()
        for i in range(len(tokens) - size + 1):
            phrase = " ".join(tokens[i : i + size]).rstrip(".,'!")
            if phrase in words and (best is None or len(phrase) > len(best)):
                best = phrase
        if best:
            return best
    return best


def tidy(clause: str) -> str:
    """The clause as a memory's text: filler and trailing punctuation dropped."""
    text = clause.strip()
    for _ in range(3):
        shorter = _TAIL.sub("", text).strip()
        if shorter == text:
            break
        text = shorter
    return text.strip(" ,;:!.\"'")


def said(m: re.Match[str], value: str = "", *, team: bool = False) -> str:
    """The whole clause in the third person: more context than the bare value, and
    every detail the user gave next to it ("a 6-year-old boy named Eli")."""
    return rewrite(tidy(m.string), team=team)


def one(kind: str, slot: str, value: str, content: str, **kw: object) -> list[Draft]:
    return [Draft(kind, slot, value, content, **kw)]  # type: ignore[arg-type]
