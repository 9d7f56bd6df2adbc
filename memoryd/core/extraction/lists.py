"""Facts given as a labelled list: "About me: 34, live in Seoul, originally from
Daegu", "My gear: iPhone 13, HP EliteBook, and a 2012 Corolla", "Few rules for you:
1) British spelling 2) no bullet points", "Likes: cold brew, Murakami. Dislikes:
podcasts".

``statements`` turns one such sentence into the plain statements it lists, each read
by the same rules as any other clause ("I live in Seoul", "I have an iPhone 13", "use
British spelling"); ``fallback`` gives an item no rule reads a fact of the label's
attribute, so a listed like or plan is not lost for want of a verb. A sentence whose
label is not a known kind of list is left alone (the field rules read "Name: Wayra").
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.values import Draft, slug

__all__ = ["Listed", "fallback", "is_label", "parse", "statements"]

_LABEL = re.compile(
    r"^\s*(?P<label>[A-Za-z][\w ',/&-]{1,40}?)\s*[:\u2013\u2014-]\s+(?P<items>\S.*)$"
)

#: label words -> what the list holds
_KINDS: dict[str, tuple[str, ...]] = {
    "self": (
        "about me", "me", "profile", "quick profile", "bits about me", "me in a nutshell",
        "nutshell", "updated nutshell", "context", "background", "intro", "a bit about me",
        "some context", "about myself", "info", "details", "my details", "personal",
        "same as before", "recap", "summary", "stats", "quick intro",
        "bio", "my bio", "who i am", "basics", "the basics", "facts about me", "me stuff",
    ),
    "likes": (
        "likes", "loves", "love", "favourites", "favorites", "faves", "favs", "into",
        "things i like", "things i love", "i like", "i love", "fave things",
    ),
    "dislikes": (
        "dislikes", "hates", "hate", "not into", "pet peeves", "cannot stand", "can't stand",
        "things i hate", "things i dislike", "no thanks", "i hate", "i dislike",
    ),
    "things": (
        "gear", "devices", "my devices", "kit", "tech", "setup", "things", "my things",
        "stuff", "hardware", "equipment", "updated devices", "my gear", "my kit", "my tech",
        "my setup", "what i own", "i own", "i have", "current devices", "gear i own",
        "stuff i own", "things i own", "tech i use",
    ),
    "stack": (
        "stack", "tech stack", "our stack", "infra stack", "our infra stack", "tools",
        "tooling", "tech", "our tech", "dev setup", "dev stack", "my stack", "the stack",
        "infra", "infrastructure",
    ),
    "languages": ("languages", "language", "languages i speak", "i speak", "spoken languages"),
    "health": (
        "health", "health info", "health stuff", "health stuff you should know", "medical",
        "medical info", "medical stuff", "conditions", "medical history", "health info for you",
    ),
    "allergies": (
        "allergies", "allergy", "my allergy", "my allergies", "allergic to", "intolerances",
        "food allergies", "allergies and intolerances",
    ),
    "family": (
        "family", "family stuff", "household", "the family", "fam", "my family", "home life",
    ),
    "hobbies": (
        "hobbies", "things i do for fun", "for fun", "interests", "free time", "pastimes",
        "stuff i do for fun", "what i do in my free time",
        "weekends", "spare time", "what i do for fun", "my hobbies", "hobby",
    ),
    "plans": (
        "upcoming", "coming up", "plans", "schedule", "this month", "next week", "diary",
        "agenda", "calendar", "this week", "next month", "this year", "dates", "my plans",
    ),
    "diet": (
        "dietary stuff", "diet", "dietary", "food", "eating", "dietary needs",
        "restrictions", "dietary restrictions", "food stuff", "food wise", "foodwise",
    ),
    "rules": (
        "rules", "preferences", "few rules for you", "rules for you", "a few rules",
        "house rules", "instructions", "formatting", "style", "settings", "my preferences",
        "update to my preferences", "ground rules", "some rules", "how i like answers",
        "prefs", "few prefs", "my prefs", "a few prefs", "preferences for you", "changes",
        "new rules", "rule changes", "a few changes", "some changes",
    ),
}  # fmt: skip
_BY_LABEL = {label: kind for kind, labels in _KINDS.items() for label in labels}
_LEAD = re.compile(r"^(?:quick|some|a\s+few|few|my|the|updated|new|current|for\s+context)\s+", re.I)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)
_ASKS = re.compile(
    r"^(?:how|what|why|when|where|who|which|can|could|is|are|do|does|should|would|will|any)\b", re.I
)
_NUMBERED_ITEM = re.compile(r"(?:^|\s)\(?\d{1,2}[).]\s")
_NUMBERED = re.compile(r"(?:^|\s)(?:\(?\d{1,2}[).]|[-\u2022*])\s+")
_RELATION = re.compile(
    r"^(?:(?:two|three|four|one|\d+)\s+)?(?:"
    + "|".join(sorted((re.escape(w) for w in lx.RELATIONS), key=len, reverse=True))
    + r"|boys|girls|kids|children|sons|daughters)\b",
    re.I,
)


_TRAIL = re.compile(
    r"\s+(?:for\s+context|for\s+you|wise|info|stuff|list|so\s+far|now)$|-wise$", re.I
)


def _kind(label: str) -> str | None:
    low = " ".join(label.lower().split())
    for _ in range(4):
        if low in _BY_LABEL:
            return _BY_LABEL[low]
        shorter = _TRAIL.sub("", _LEAD.sub("", low))
        if shorter == low:
            break
        low = shorter
    if _SELF_WORDS.search(low) and len(low.split()) <= 8:  # "quick context so you get it"
        return "self"
    return _BY_LABEL.get(low)


_SELF_WORDS = re.compile(r"\b(?:about\s+me|context|profile|background|nutshell|bio|intro)\b")


def _items(text: str) -> list[str]:
    """Comma, semicolon, "and" and numbered items; commas inside brackets stay."""
    text = _NUMBERED.sub(" ; ", text)
    out: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char in ",;" and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    items: list[str] = []
    for part in out:
        part = re.sub(r"^(?:and|&|plus|also)\s+", "", part.strip(), flags=re.I)
        # "two sons (Tomás and Iker)" is one item: "and" splits only outside brackets
        items.extend([part] if "(" in part else re.split(r"\s+(?:and|&)\s+(?=\S)", part))
    return [i.strip(" .!") for i in items if i.strip(" .!")]


class Listed:
    """One labelled list: its kind and the statements its items make."""

    __slots__ = ("items", "kind", "label")

    def __init__(self, label: str, kind: str, items: list[str]) -> None:
        self.label, self.kind, self.items = label, kind, items


def is_label(text: str) -> bool:
    """Whether ``text`` (a sentence that ended in ":") names a known kind of list."""
    return len(text.split()) <= 6 and _kind(text.strip(" :")) is not None


def parse(sentence: str) -> Listed | None:
    m = _LABEL.match(sentence)
    if m is None:
        return None
    kind = _kind(m["label"])
    if kind is None and len(_NUMBERED_ITEM.findall(m["items"])) >= 2:
        kind = "plain"  # "life admin update: 1. we moved out to ... 2. ..."
    if kind is None:
        return None
    items = [i for i in _items(m["items"]) if not _ASKS.match(i)]  # "2) can you freeze rice"
    if len(items) < 2 and kind not in ("rules", "likes", "dislikes", "plans"):
        return None  # one item after a label is a field ("Diet: vegan"): the field rules
    return Listed(m["label"].strip(), kind, items)


_SELF_VERB = re.compile(
    r"^(?:live|living|work|working|love|have|speak|study|studying|based|originally|from|"
    r"married|single|engaged|divorced|raised|born|grew|moved|doing|teach|run|own)\b",
    re.I,
)
_NUMBER = re.compile(
    r"^(?:age\s+|aged\s+)?(?P<n>\d{1,3})(?:\s*(?:now|yo|y/o|years?\s+old))?$", re.I
)


_STILL_IN = re.compile(r"^(?:still|now)\s+(?:in\s+)?(?=(?-i:[A-Z]))", re.I)
_NOW = re.compile(r"^(?:finally|now|still)\s+", re.I)


def _self(item: str) -> list[str]:
    """A fragment about the writer, as the statements it could be (first that reads)."""
    item = re.sub(r"^(?:so|and|but|then|plus)\s+", "", item, flags=re.I)
    low = item.lower()
    if re.match(r"(?:I|my|we|our)\b", item, re.I):
        return [item]
    number = _NUMBER.match(item)
    if number:
        return [f"I am {number['n']} years old"]
    if low.startswith("born "):
        return [f"I was {item}"]
    if re.match(r"(?:living|based|originally|from|married|single|engaged|divorced|raised)\b", low):
        return [f"I am {item}"]
    if _SELF_VERB.match(item):
        return [f"I {item}"]
    if re.match(r"(?:two|three|four|one|\d+)\s+\w+", low) or _RELATION.match(item):
        return [f"I have {item}"]
    if re.search(r"\b(?:university|college|uni|school|institute|polytechnic)\b", low):
        return [f"I go to {item}"]
    if item[:1].isupper() and len(item.split()) <= 3 and not re.search(r"\d", item):
        return [f"I live in {item}"]
    place = _STILL_IN.match(item)
    if place:
        return [f"I live in {item[place.end() :]}"]
    article = "" if re.match(r"(?:a|an|the)\s", low) else "a "
    return [f"I am {article}{_NOW.sub('', item)}"]


def _rule(item: str) -> str:
    if re.match(r"(?:I|my|we|our)\b", item, re.I):
        return item
    if re.match(
        r"(?:no|never|always|use|keep|avoid|don't|do\s+not|only|stop|please)\b", item, re.I
    ):
        return item
    if re.match(r"(?:dates?|times?|distances?|weights?|temperatures?|prices?)\s", item, re.I):
        return f"write {item}"
    return f"use {item}"


def statements(listed: Listed) -> list[str]:
    """The statement each item makes, for the rules to read."""
    out: list[str] = []
    for item in listed.items:
        if listed.kind == "self":
            out.extend(_self(item))
        elif listed.kind == "likes":
            out.append(f"I like {item}")
        elif listed.kind == "dislikes":
            out.append(f"I dislike {item}")
        elif listed.kind == "things":
            out.append(f"I have {item}" if not re.match(r"(?:I|my)\b", item, re.I) else item)
        elif listed.kind == "family":
            if _RELATION.match(item) and not re.match(r"(?:two|three|four|one|\d+)\s", item, re.I):
                out.append(f"my {item}")
            elif re.match(r"(?:a|an|two|three|four|one|\d+)\s", item, re.I):
                out.append(f"I have {item}")
            else:
                out.append(item)
        elif listed.kind == "stack":
            team = "We" if listed.label.lower().startswith("our") else "I"
            out.append(f"{team} use {item}")
        elif listed.kind == "health":
            if re.match(r"(?:on|taking)\s", item, re.I):
                out.append(f"I am {item}")
            elif re.match(r"(?:use|take|had|have)\s", item, re.I):
                out.append(f"I {item}")
            else:
                out.append(f"I have {item}")
        elif listed.kind == "allergies":
            out.append("I am allergic to " + _ARTICLE.sub("", item))
        elif listed.kind == "languages":
            out.append(f"I speak {item}")
        elif listed.kind == "hobbies":
            out.append(f"my hobbies include {item}")
        elif listed.kind == "diet":
            no = re.match(r"no\s+(?P<x>.+)", item, re.I)
            out.append(f"I do not eat {no['x']}" if no else f"I eat {item}")
        elif listed.kind == "rules":
            out.append(_rule(item))
        else:
            out.append(item)
    return out


_FALLBACK = {
    "likes": ("likes", "opinion", "User likes {}"),
    "dislikes": ("likes", "opinion", "User dislikes {}"),
    "things": ("possessions", "owns", "User has {}"),
    "family": ("family", "family", "User's family: {}"),
    "hobbies": ("hobbies", "hobbies", "User's hobbies include {}"),
    "plans": ("plans", "plan", "User has coming up: {}"),
    "diet": ("diet", "diet:eats", "User's diet: {}"),
    "rules": ("instructions", "instruction", "User wants the assistant to use {}"),
    "self": ("identity", "identity", "User: {}"),
    "languages": ("languages", "language", "User speaks {}"),
    "stack": ("stack", "tool:other", "User uses {}"),
    "health": ("health", "health", "User's health: {}"),
    "allergies": ("allergies", "allergy", "User is allergic to {}"),
}
_NO_FALLBACK = frozenset({"self", "plain"})


def fallback(listed: Listed, item: str) -> Draft | None:
    """A fact of the list's kind for an item no rule read ("Upcoming: dentist 4 Feb")."""
    if listed.kind in _NO_FALLBACK:
        return None
    kind, prefix, reads = _FALLBACK[listed.kind]
    if re.match(r"(?:I|I'm|I've|my|we|we're|our)\b", item, re.I):
        return None  # a statement among the items is read as one, or not at all
    if listed.kind == "self" or len(item) < 2:
        return None  # "About me" fragments no rule reads are too vague to keep
    value = item.strip()
    single = False
    if listed.kind == "dislikes" or listed.kind == "likes":
        return Draft(kind, f"opinion:{slug(value)}", value, reads.format(value), True)
    return Draft(kind, f"{prefix}:{slug(value)}", value, reads.format(value), single,
                 episodic=listed.kind == "plans")  # fmt: skip
