"""Regex fact extraction from conversation text (SPEC §5).

Pure and stdlib-only: it turns first-person statements ("I prefer dark mode") into
third-person facts ("User prefers dark mode") that the store upserts by key. The key
is the slug of the *object* only, so a later "I hate Python" replaces an earlier
"I like Python" instead of sitting next to it. Content always keeps the verb, so a
negation is never stored as a like.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "MAX_FACT_LENGTH",
    "MAX_INPUT_CHARS",
    "MIN_FACT_LENGTH",
    "Fact",
    "extract_facts",
    "fact_metadata",
    "slugify",
]

MAX_INPUT_CHARS = 64 * 1024
MIN_FACT_LENGTH = 3
MAX_FACT_LENGTH = 500


@dataclass(frozen=True, slots=True)
class Fact:
    """One extracted statement, ready to be stored as a memory."""

    category: str  # the kind: "identity", "location", "work", ..., "preference"
    type: str  # "factual", or "episodic" for decisions and plans
    key: str  # slot (or category) + ":" + slug of the value, so history rows differ
    content: str  # third-person statement that keeps polarity
    source: str  # "user" or "assistant"
    slot: str | None = None  # what the fact is about: "home_location", "pet:dog:name"
    single: bool = False  # a new value of a single-valued slot supersedes the old one
    replaces: tuple[str, ...] = ()  # further slots a new value supersedes

    @property
    def supersedes(self) -> tuple[str, ...]:
        """The slots whose other current memories this fact retires."""
        own = (self.slot,) if self.single and self.slot else ()
        return own + self.replaces


_TYPE_OF = {"preference": "factual", "decision": "episodic", "pattern": "factual"}

# Horizontal whitespace only, so a trigger never spans two lines.
_H = r"[^\S\r\n]+"
# Straight or curly apostrophe (escaped: a literal curly quote trips ruff RUF001).
_A = "['\u2019]"

# The object: anything up to . , ! ? ; (or their CJK full-width forms) or a line
# break, except that a dot between two word characters (Next.js, v2.1, example.com)
# is kept. It also stops before " and I " / " but I ", which start a new first-person
# clause. The lookahead consumes one whitespace character first so runs stay linear.
_OBJECT = (
    r"(?P<obj>(?:(?!\s(?:and|but)\s+I\b)"
    r"(?:[^.,!?;\r\n\u3002\uff0c\uff01\uff1f\uff1b]|(?<=\w)\.(?=\w)))+)"
)

# Lines memoryd itself injects; extracting from them would feed memories back in.
_GUARD = re.compile(r"^[ \t]*Memory context:.*$", re.MULTILINE)

Render = Callable[[re.Match[str]], str]


def _fixed(prefix: str) -> Render:
    """A renderer whose prefix does not depend on what matched."""
    return lambda _m: prefix


def _favorite(m: re.Match[str]) -> str:
    return f"User's {m['fav'].lower()} {m['be'].lower()}"


def _decided(m: re.Match[str]) -> str:
    has = "has " if m["have"] else ""
    to = " to" if m["to"] else ""
    return f"User {has}decided{to}"


def _going(m: re.Match[str]) -> str:
    verb = " ".join(m["verb"].lower().split())
    return f"User is going to {verb}"


def _habit(m: re.Match[str]) -> str:
    return f"User {m['adv'].lower()}"


def _rule(category: str, trigger: str, render: Render) -> tuple[str, re.Pattern[str], Render]:
    """Compile one trigger; every trigger is a whole phrase followed by its object."""
    pattern = re.compile(rf"\b{trigger}{_H}{_OBJECT}", re.IGNORECASE)
    return category, pattern, render


# Table order is category order (preference, decision, pattern), as SPEC §5 requires.
_RULES: tuple[tuple[str, re.Pattern[str], Render], ...] = (
    _rule("preference", rf"I{_H}prefer", _fixed("User prefers")),
    _rule("preference", rf"I{_H}really{_H}prefer", _fixed("User really prefers")),
    _rule("preference", rf"I{_H}like", _fixed("User likes")),
    _rule("preference", rf"I{_H}really{_H}like", _fixed("User really likes")),
    _rule("preference", rf"my{_H}(?P<fav>favou?rite){_H}(?P<be>is|are)", _favorite),
    _rule("preference", rf"I{_H}don{_A}t{_H}like", _fixed("User doesn't like")),
    _rule("preference", rf"I{_H}do{_H}not{_H}like", _fixed("User does not like")),
    _rule("preference", rf"I{_H}hate", _fixed("User hates")),
    _rule("preference", rf"I{_H}dislike", _fixed("User dislikes")),
    _rule("preference", rf"I{_H}avoid", _fixed("User avoids")),
    _rule("preference", rf"I{_H}enjoy", _fixed("User enjoys")),
    _rule("preference", rf"I{_H}love", _fixed("User loves")),
    _rule("decision", rf"I(?:{_A}ll|{_H}will){_H}use", _fixed("User will use")),
    _rule("decision", rf"I{_H}chose", _fixed("User chose")),
    _rule(
        "decision",
        rf"I(?P<have>{_H}have|{_A}ve)?{_H}decided(?:{_H}(?P<to>to)\b)?",
        _decided,
    ),
    _rule(
        "decision",
        rf"I(?:{_A}m|{_H}am){_H}going{_H}to{_H}(?P<verb>use|adopt|go{_H}with)",
        _going,
    ),
    _rule("decision", rf"I{_H}selected", _fixed("User selected")),
    _rule("decision", rf"I{_H}picked", _fixed("User picked")),
    _rule("decision", rf"I{_H}went{_H}with", _fixed("User went with")),
    _rule(
        "pattern",
        rf"I{_H}(?P<adv>usually|always|never|typically|often|frequently|regularly)",
        _habit,
    ),
    _rule("pattern", rf"I{_H}tend{_H}to", _fixed("User tends to")),
)


def _is_slug_char(char: str) -> bool:
    """Letters and digits of every script, plus combining marks (Devanagari, etc.)."""
    return char.isalnum() or unicodedata.category(char).startswith("M")


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


def _long_enough(obj: str) -> bool:
    """MIN_FACT_LENGTH characters, or one wide letter: a single ideograph (茶) is a word."""
    if len(obj) >= MIN_FACT_LENGTH:
        return True
    return any(char.isalnum() and unicodedata.east_asian_width(char) in {"W", "F"} for char in obj)


def _clip(content: str) -> str:
    """Cap content at MAX_FACT_LENGTH, cutting at a word boundary when one is near."""
    if len(content) <= MAX_FACT_LENGTH:
        return content
    cut = content[:MAX_FACT_LENGTH]
    space = cut.rfind(" ")
    if space >= MAX_FACT_LENGTH // 2:
        cut = cut[:space]
    return cut.rstrip()


def _prepare(text: str) -> str:
    """Keep the last MAX_INPUT_CHARS characters and drop memoryd's own context lines."""
    if len(text) > MAX_INPUT_CHARS:
        cut = len(text) - MAX_INPUT_CHARS
        # The cut may land inside an injected line whose "Memory context:" is now gone.
        line_start = text.rfind("\n", 0, cut) + 1
        head_is_guard = _GUARD.match(text, line_start) is not None
        text = text[cut:]
        if head_is_guard:
            newline = text.find("\n")
            text = "" if newline < 0 else text[newline:]
    return _GUARD.sub("", text)


def extract_facts(text: object, *, source: str = "user") -> list[Fact]:
    """Every fact the trigger table finds in `text`; pure and never raises.

    Order is preference, then decision, then pattern; within a category by position.
    Duplicate keys keep the first occurrence.
    """
    if not isinstance(text, str) or not text:
        return []
    # An exact str copy, so a str subclass cannot override the methods used below.
    body = _prepare(str.__str__(text))
    facts: list[Fact] = []
    seen: set[str] = set()
    for category in _TYPE_OF:
        found: list[tuple[int, str, str]] = []
        for rule_category, pattern, render in _RULES:
            if rule_category != category:
                continue
            for match in pattern.finditer(body):
                obj = " ".join(match["obj"].split())
                if _long_enough(obj):
                    found.append((match.start(), render(match), obj))
        for _, prefix, obj in sorted(found, key=lambda item: item[0]):
            slug = slugify(obj)
            key = f"{category}:{slug}"
            if not slug or key in seen:
                continue
            seen.add(key)
            content = _clip(f"{prefix} {obj}")
            facts.append(Fact(category, _TYPE_OF[category], key, content, source))
    return facts


def fact_metadata(fact: Fact, extracted_at: str) -> dict[str, str]:
    """The metadata stored with an extracted memory (camelCase, as on the wire)."""
    meta = {"category": fact.category, "extractedAt": extracted_at, "source": fact.source}
    if fact.slot:
        meta["slot"] = fact.slot
    return meta
