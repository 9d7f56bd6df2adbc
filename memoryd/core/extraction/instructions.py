"""Standing instructions to the assistant: how a rule's match becomes one. The answer
language is named here; ``attributes.refine`` files the other one-at-a-time shapes
(units per dimension, length, format, tone, theme, the name to use).
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.grammar import pronouns, rewrite
from memoryd.core.extraction.values import Draft, deictic, find, one, slug, tidy

__all__ = ["instruction"]

_VERB_FIRST = (
    r"(?:answer|reply|respond|write|talk|speak|use|avoid|keep|make|include|add|mention|show|give|"
    r"cite|list|format|put|start|end|provide|convert|quote|default|stop|skip|explain|call|"
    r"address|refer|assume|remember|sign|spell|label|round|express|measure|stick|limit|focus|"
    r"prefer|suggest|recommend|tell|ask|double-check|check|treat|consider|switch|return|output|"
    r"translate|prioriti[sz]e|favou?r|go|be|do|don't|never|always|only|no|not|drop|leave|"
    r"let|try|please|pls|i|we|my|our|set|put|move|flip|change|reply|just|dont|refrain|swear|"
    r"state|express|bold|sign|teach|walk|spell|number|split|break|ask)\b"
)


_CALL_ME = re.compile(
    r"(?:call|address)\s+me\s+(?:as\s+)?(?P<name>(?:(?:dr|mr|mrs|ms|prof)\.?\s+)?[A-Za-z][\w'-]{1,20})"
    r"(?:\s*$|\s*[,.!]|\s+(?:from|going|now|instead|please|pls|not|rather|only)\b)",
    re.IGNORECASE,
)
_NOT_A_NAME = frozenset(  # "call me back", "call me crazy"; a title alone names nobody
    {
        "back",
        "out",
        "crazy",
        "lazy",
        "old",
        "later",
        "tomorrow",
        "tonight",
        "when",
        "if",
        "a",
        "an",
        "the",
        "anytime",
        "maybe",
        "by",
        "on",
        "at",
        "in",
        "whenever",
        "soon",
        "again",
        "sometime",
        "sir",
        "madam",
        "mate",
        "dude",
        "bro",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "professor",
        "doctor",
    }
)
_ASKED = re.compile(r"(?:can|could|would|will)\s+(?:you|u|ya)\b", re.IGNORECASE)


def instruction(m: re.Match[str], clause: str) -> list[Draft] | None:
    """A standing instruction to the assistant. The answer language is one at a time;
    ``attributes.refine`` files units, length, format, tone and theme the same way
    ("switch to metric" replaces "use imperial")."""
    value = tidy(m["v"])
    value = re.sub(
        r"^(?:please|pls|kindly)\s+|\s+(?:please|pls|plz|thanks|thx)$", "", value, flags=re.I
    )
    if len(value) < 3 or deictic(value):
        return None
    if _ASKED.match(value):  # "can you call me jay from now on": the standing requests'
        return None  # reading, which takes the ask off first ("call me jay": the name)
    called = _CALL_ME.match(value)
    if called and called["name"].lower() not in _NOT_A_NAME:  # typed in lower case too
        name = called["name"]
        return one(
            "identity", "preferred_name", name, f"User likes to be called {name}", single=True
        )
    slot = f"instruction:{slug(value)}"
    single = True
    lang = find(lx.LANGUAGES, value)
    spoken = re.search(r"\b(?:answer|reply|respond|write|talk|speak|in)\b", value, re.I)
    if lang and (spoken or value.lower().split()[:4].count(lang) or lang in value.lower()[:30]):
        slot = "instruction:language"
    else:  # units, length, format, tone, theme: ``attributes.refine`` reads them
        single = False
    past = re.match(
        r"(gave|used|kept|wrote|answered|replied|talked|went|made|stuck|called)\b", value, re.I
    )
    if past:  # "I'd rather you gave me the long version"
        present = {
            "gave": "give",
            "used": "use",
            "kept": "keep",
            "wrote": "write",
            "went": "go",
            "made": "make",
            "stuck": "stick",
        }.get(past[1].lower(), past[1].lower()[:-2])
        value = present + value[past.end() :]
    if not re.match(_VERB_FIRST, value, re.I):
        value = f"use {value}"  # "Celsius from here on": use Celsius
    verb = re.sub(r"^do\s+not\s+", "not ", value, flags=re.I)
    own = re.sub(r"\byour\b", "its", verb[0].lower() + verb[1:], flags=re.I)
    content = f"User wants the assistant to {pronouns(own)}"
    if re.match(r"(?:I|we)\b", value):
        content = rewrite(value)
    return one("instructions", slot, value, content, single=single)
