"""How people type, read as the rules spell it: chat shorthand ("gonna",
"gf", "rn") and one-slip misspellings of the words the rules key on ("alergic",
"vegeterian", "girlfirend", "relocted").

A word is corrected only when it is not itself a word the rules or lexicons know (read
from the rule table and lexicons, so a rule added later is covered), is lower case
(names keep their spelling), and is one slip (a letter dropped, doubled, swapped with
its neighbour, or, in a long word, replaced) from exactly one of ``TARGETS``. Values
keep the user's spelling: only the words around them change ("im alergic to penicilin" is stored as
"User is allergic to penicilin").
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["correct"]

_SHORTHAND = {
    "gonna": "going to",
    "wanna": "want to",
    "gotta": "have to",
    "gf": "girlfriend",
    "bf": "boyfriend",
    "hubby": "husband",
    "wifey": "wife",
    "rn": "right now",
    "atm": "at the moment",
    "bc": "because",
    "cuz": "because",
    "coz": "because",
    "b/c": "because",
    "w/": "with",
    "thru": "through",
    "tho": "though",
    "ppl": "people",
    "kiddo": "kid",
    "isnt": "is not",
    "arent": "are not",
    "wasnt": "was not",
    "werent": "were not",
    "couldnt": "could not",
    "wouldnt": "would not",
    "shouldnt": "should not",
    "hasnt": "has not",
    "hadnt": "had not",
    "aint": "am not",
    "thats": "that is",
    "whats": "what is",
    "theyre": "they are",
    "youre": "you are",
    "ur": "your",
    "u": "you",
    "r": "are",
    "n": "and",
    "abt": "about",
    "bday": "birthday",
    "b-day": "birthday",
    "fav": "favourite",
    "fave": "favourite",
    "fav.": "favourite",
    "yrs": "years",
    "yr": "year",
    "mos": "months",
    "mths": "months",
    "wk": "week",
    "wks": "weeks",
    "govt": "government",
}
_WORD = re.compile(r"(?<![\w'/-])[a-z][a-z/-]*(?![\w'])")


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


@functools.cache
def _vocabulary() -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """Every word the rules and lexicons know (never "corrected"), and an index from
    each one-letter deletion of a target word back to it (a symmetric-delete lookup)."""
    from memoryd.core.extraction import lexicon as lx
    from memoryd.core.extraction.table import _RULES

    words: set[str] = set(TARGETS)
    for _kind, pattern, _build in _RULES:
        words.update(re.findall(r"(?<![\\?])\b[a-z]{3,}\b", pattern))
    for name in dir(lx):
        value = getattr(lx, name)
        if isinstance(value, (frozenset, set, dict)):
            for item in value:
                if isinstance(item, str):
                    words.update(re.findall(r"[a-z]{3,}", item.lower()))
    index: dict[str, set[str]] = {}
    for word in TARGETS:
        for variant in _deletes(word) | {word}:
            index.setdefault(variant, set()).add(word)
    return frozenset(words), {k: frozenset(v) for k, v in index.items()}


#: The words a slip is corrected into: the long words the rules key on that people
#: misspell. Only these: without a dictionary of English, a slip toward any rule word
#: turned "finance" into "fiance" and "diving" into "driving".
TARGETS = frozenset(
    [
        "allergic",
        "allergies",
        "allergy",
        "intolerant",
        "intolerance",
        "lactose",
        "gluten",
        "vegetarian",
        "vegan",
        "pescatarian",
        "girlfriend",
        "boyfriend",
        "husband",
        "daughter",
        "daughters",
        "grandson",
        "granddaughter",
        "grandmother",
        "grandfather",
        "married",
        "engaged",
        "divorced",
        "widowed",
        "favourite",
        "favorite",
        "diagnosed",
        "diabetes",
        "diabetic",
        "asthma",
        "arthritis",
        "migraines",
        "medication",
        "prescribed",
        "pregnant",
        "relocated",
        "relocating",
        "currently",
        "recently",
        "apartment",
        "university",
        "college",
        "engineer",
        "developer",
        "software",
        "manager",
        "teacher",
        "student",
        "fluent",
        "employed",
        "retired",
        "unemployed",
        "freelance",
        "freelancing",
        "preference",
        "responses",
        "definitely",
        "neighbourhood",
        "neighborhood",
        "birthday",
        "anniversary",
        "wedding",
        "vacation",
        "holiday",
        "schedule",
        "appointment",
        "interview",
        "graduating",
        "graduated",
        "graduation",
        "bachelor",
        "masters",
        "degree",
        "nephew",
        "niece",
        "brother",
        "sister",
        "mother",
        "father",
        "partner",
        "cousin",
        "children",
        "toddler",
        "puppy",
        "kitten",
        "hobby",
        "hobbies",
        "gardening",
        "photography",
        "climbing",
        "knitting",
        "guitar",
        "piano",
        "language",
        "languages",
        "spanish",
        "french",
        "german",
        "english",
        "italian",
        "portuguese",
        "japanese",
        "chinese",
        "mandarin",
        "arabic",
        "hindi",
        "metric",
        "imperial",
        "celsius",
        "fahrenheit",
        "concise",
        "detailed",
    ]
)


def _candidates(token: str, index: dict[str, frozenset[str]]) -> set[str]:
    found: set[str] = set()
    found |= index.get(token, frozenset())  # a letter too few: "alergic"
    for variant in _deletes(token):  # a letter too many, or swapped/replaced
        found |= index.get(variant, frozenset())
    return found


def _one_slip(token: str, word: str) -> bool:
    """Whether ``token`` is one slip from ``word``: a letter dropped or added, two
    neighbours swapped, or (in a word of eight letters or more) one replaced."""
    if token == word:
        return False
    lt, lw = len(token), len(word)
    if lt == lw:
        diff = [i for i in range(lt) if token[i] != word[i]]
        if len(diff) == 2 and diff[1] == diff[0] + 1:
            i = diff[0]
            return token[i] == word[i + 1] and token[i + 1] == word[i]
        return len(diff) == 1 and lw >= 8
    if abs(lt - lw) != 1:
        return False
    short, long_ = (token, word) if lt < lw else (word, token)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


@functools.lru_cache(maxsize=1 << 16)
def _fix(token: str) -> str | None:
    """The spelling of one lower-case word, or None to keep it (cached: chat repeats
    its words, and most of them are kept)."""
    spelt = _SHORTHAND.get(token)
    if spelt is not None:
        return spelt
    known, index = _vocabulary()
    if len(token) < 5 or token in known or not token.isalpha():
        return None
    options = [w for w in _candidates(token, index) if _one_slip(token, w)]
    if len(options) != 1 or options[0].rstrip("s") == token.rstrip("s"):
        return None  # "preferences" is the plural of a target, not a slip of it
    return options[0]


def correct(text: str) -> str:
    """``text`` with chat shorthand spelt out, one-slip misspellings of the rules' words
    corrected, and regional or learner's grammar in the rules' shape; the rest as it
    was."""
    if any(_fix(t) for t in _WORD.findall(text)):
        text = _WORD.sub(lambda m: _fix(m[0]) or m[0], text)
    if _GRAMMAR_CUE.search(text):
        for pattern, replacement in _GRAMMAR:
            text = pattern.sub(replacement, text)
    return text


_IRREGULAR = {
    "getting": "got", "having": "had", "being": "been", "making": "made", "taking": "taken",
    "leaving": "left", "buying": "bought", "finding": "found", "selling": "sold",
    "breaking": "broken", "doing": "done", "going": "gone", "giving": "given",
    "coming": "come", "running": "run", "winning": "won", "losing": "lost",
    "meeting": "met", "putting": "put", "quitting": "quit", "setting": "set",
    "writing": "written", "beginning": "begun", "swimming": "swum", "seeing": "seen",
    "eating": "eaten", "driving": "driven", "flying": "flown", "hearing": "heard",
}  # fmt: skip


def _after(m: re.Match[str]) -> str:
    """Irish "I'm after starting" ("I have just started")."""
    verb = m["verb"].lower()
    done = _IRREGULAR.get(verb)
    if done is None:  # "moving" -> "moved", "starting" -> "started", "shopping" -> "shopped"
        done = verb[:-3] + "ed"
    have = "has" if m["be"].lower() == "is" else "have"
    return f"{m['who']} {have} {done}"


#: Learner's and regional grammar, read as the rules expect. Each is one shape people
#: use that the rules' English has no pattern for.
_GRAMMAR: tuple[tuple[re.Pattern[str], Any], ...] = (
    # Irish "I'm after moving" = "I have just moved"
    (
        re.compile(r"\b(?P<who>[A-Za-z]+)\s+(?P<be>am|are|is)\s+after\s+(?P<verb>[a-z]+ing)\b"),
        _after,
    ),
    # "I am having two kids" / "we are having one dog" = "have"
    (
        re.compile(
            r"\b(?P<who>I|[Ww]e)\s+(?:am|are)\s+having\s+(?=(?:a|an|one|two|three|four|\d+|my|our|"
            r"[A-Z])\b)"
        ),
        r"\g<who> have ",
    ),
    # "I have 42 years" = "I am 42"
    (re.compile(r"\bI\s+have\s+(?P<n>\d{1,3})\s+years(?:\s+old)?\b"), r"I am \g<n> years old"),
    # "I am born in Recife" = "I was born in"
    (re.compile(r"\bI\s+am\s+born\b"), "I was born"),
    # "I not like", "I no eat" = "I do not"
    (
        re.compile(
            r"\b(?P<who>I|[Ww]e)\s+(?:not|no)\s+(?=(?:like|love|eat|drink|have|want|use|live|work|"
            r"speak|smoke|enjoy|need|know|take|go)\b)"
        ),
        r"\g<who> do not ",
    ),
    # Irish and northern "me sister" = "my sister"
    (
        re.compile(
            r"\b(?P<me>[Mm]e)\s+(?=(?:sister|brother|mam|mum|ma|da|dad|husband|wife|fella|missus|"
            r"son|daughter|kids|lads|nan|granny|grandad|auntie|uncle|cousin|partner|boyfriend|"
            r"girlfriend|fiancee?|dog|cat)\b)"
        ),
        "my ",
    ),
    # "please not use emoji" = "please do not use"
    (re.compile(r"\b(?P<p>[Pp]lease|pls)\s+not\s+(?=[a-z]+)"), r"\g<p> do not "),
    # "Me and the girlfriend are off to Lisbon" = "we are off to Lisbon"
    (
        re.compile(
            r"\b(?:[Mm]e|[Mm]yself)\s+and\s+(?:my|the|me)\s+[a-z-]+\s+(?=(?:are|have|were|will)\b)"
        ),
        "we ",
    ),
    # "my husband he is doctor" = "my husband is doctor"
    (
        re.compile(
            r"\b(?P<who>[Mm]y\s+[a-z-]+)\s+(?:he|she|they)\s+(?=(?:is|are|was|works|lives|has)\b)"
        ),
        r"\g<who> ",
    ),
    # "I stop being vegan", "I stopped being a vegetarian" = "I am no longer vegan"
    (
        re.compile(
            r"\bI\s+(?:have\s+)?(?:stop|stopped|quit|gave\s+up|give\s+up)\s+being\s+(?:a\s+|an\s+)?"
        ),
        "I am no longer ",
    ),
)
_GRAMMAR_CUE = re.compile(
    r"\b(?:after\s+[a-z]+ing|having|have\s+\d+|am\s+born|(?:I|[Ww]e)\s+(?:not|no)|[Mm]e\s+\w+|"
    r"being|[Mm]y\s+[a-z-]+\s+(?:he|she|they)|(?:[Pp]lease|pls)\s+not|[Mm]e\s+and|[Mm]yself\s+and)\b"
)
