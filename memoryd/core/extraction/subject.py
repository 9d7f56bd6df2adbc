"""Casual statements leave out their subject: "Grew up in Lyon", "Vegan for ten years",
"Self-employed locksmith here", "Owner of a husky named Luka", "PhD in linguistics
from Leiden". Each is given back the "I" it implies, so the ordinary rules read it.
Only shapes that are statements about oneself are restored; imperatives ("Keep it
short") and fragments that could be anything are left as they are.
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx


def _words(words: frozenset[str] | dict[str, str] | tuple[str, ...]) -> str:
    return "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))


_I = re.compile(
    r"^(?:grew\s+up|live|lived|moved|relocated|work|worked|switched|started|joined|"
    r"studied|graduated|speak|love|hate|got|just\s+(?:got|moved|switched|started|bought|"
    r"adopted|joined|turned|finished)|bought|adopted|turned|own|drive|went|finished|"
    r"completed|did\s+my|cannot|can\s+not|never|have\s+been|had|am|trained|qualified|"
    r"take|quit|gave\s+up|wear|use\s+a\s+wheelchair|spent)\b",
    re.IGNORECASE,
)
_AM = re.compile(
    r"^(?:working|living|based|studying|doing|allergic|married|engaged|divorced|retired|"
    r"originally\s+from|vegan|vegetarian|pregnant|learning|training|planning|moving|"
    r"residing|staying|settled|located|recovering|enrolled|employed|pursuing|taking|"
    r"heading|flying|going|obsessed|fluent|conversational|bilingual|trilingual|not\s+a\s+fan|"
    r"not\s+into|not\s+big\s+on|into|currently\s+\w+ing|self-employed|freelance|"
    r"freelancing|new\s+to|from\s+(?-i:[A-Z])|"
    + _words(lx.DIETS)
    + "|"
    + _words(lx.HEALTH_STATES)
    + r"|(?:strictly|mostly|fully|pure|100%)\s+(?:"
    + _words(lx.DIETS)
    + r")|epileptic|postpartum|\w+[- ]intolerant)\b",
    re.IGNORECASE,
)
_AM_A = re.compile(
    r"^(?:(?:single|proud|stay-at-home|working|new|first-time|busy)\s+)?(?:mom|mum|dad|"
    r"mother|father|parent)\s+(?:of|to)\b"
    r"|^(?:first|second|third|fourth|final|last)-year\s+|^(?:freshman|sophomore|junior|"
    r"senior)\s+|^(?:native|heritage|fluent)\s+\w+\s+speaker\b"
    r"|^(?:big|huge|massive|die-hard|diehard|lifelong|longtime|proud)\s+.{1,40}?\s+"
    r"(?:fan|supporter|lover|nerd|enthusiast|geek)\b|^\d{1,3}[- ](?:year|yr)[- ]old\b",
    re.IGNORECASE,
)
_HAVE = re.compile(
    r"^(?:(?:dog|cat|pet|bunny|bird|plant)\s+(?:mom|mum|dad|parent|owner)\s+(?:to|of)|"
    r"owner\s+of|proud\s+owner\s+of)\s+",
    re.IGNORECASE,
)
_HAVE_A = re.compile(
    r"^(?:(?:a|an|my)\s+)?(?:phd|ph\.d\.|doctorate|msc|m\.sc\.|bsc|b\.sc\.|ba|ma|mba|master's|"
    r"masters|bachelor's|bachelors|degree|diploma|certificate)\s+(?:in|from)\b"
    r"|^(?:[\w-]+\s+){0,2}(?:allergy|allergies|intolerance)\b"
    r"|^(?:hay\s+fever|" + _words(tuple(c for c in lx.CONDITIONS if len(c) > 3)) + r")\b",
    re.IGNORECASE,
)
_DIET_NAME = re.compile(r"^(?P<v>(?:[\w-]+\s+){1,3}diet)\b", re.IGNORECASE)
_HERE = re.compile(r"^(?P<who>.{2,60}?)\s+(?:here|writing|speaking)(?:\s+again)?$", re.I)
_WAS = re.compile(r"^(?:born|raised|brought\s+up)\b", re.IGNORECASE)
_NOT_SOMEONE = frozenset(
    [
        "i",
        "me",
        "we",
        "you",
        "everyone",
        "someone",
        "anyone",
        "nobody",
        "all",
        "new",
        "back",
        "same",
        "this",
        "that",
        "it",
        "just",
        "still",
        "also",
        "hi",
        "hey",
        "hello",
        "question",
    ]
)


_JOINER = re.compile(
    r"^(?:so|and|but|then|now|plus|though|because|cause|cos|coz)\s+(?=(?:I|we|my|our)\b)", re.I
)


def _lower_first(part: str) -> str:
    return part[0].lower() + part[1:] if part[:1].isupper() and part[1:2].islower() else part


def restore(part: str) -> str:
    """``part`` with its implied "I" put back, or unchanged."""
    part = _JOINER.sub("", part, count=1)  # "so I have stopped the tablets"
    if re.match(r"(?:I|we|my|our)\b", part, re.IGNORECASE):
        return part
    here = _HERE.match(part)
    if here and here["who"].split()[0].lower() not in _NOT_SOMEONE:
        who = here["who"]
        if _HAVE_A.match(who):
            return f"I have a {_lower_first(who)}"
        words = who.split()
        named = len(words) == 1 or (all(w[:1].isupper() for w in words) and len(words) <= 3)
        if named and who.islower():
            who = who.capitalize()  # "freya here" is a name, written in a hurry
        return f"I am {who}" if named else f"I am a {_lower_first(who)}"
    if re.match(r"been\s", part, re.IGNORECASE):
        return "I have " + _lower_first(part)
    if _WAS.match(part):
        return "I was " + _lower_first(part)
    if _HAVE.match(part):
        return "I have " + part[_HAVE.match(part).end() :]  # type: ignore[union-attr]
    if _AM_A.match(part):
        return "I am a " + _lower_first(part)
    if _AM.match(part):
        return "I am " + _lower_first(part)
    if _HAVE_A.match(part):
        return "I have " + ("" if re.match(r"(?:a|an|my)\s", part, re.I) else "a ") + part
    diet = _DIET_NAME.match(part)
    if diet and len(part.split()) <= 12:
        return "I follow a " + part
    if _I.match(part):
        return "I " + _lower_first(part)
    return part
