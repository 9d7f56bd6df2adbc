"""First person to third person: "I live in Madrid with my wife" becomes "User lives
in Madrid with their wife". Stored memories are read later by a model that must not
mistake them for its own words, so every extracted statement names the user.
"""

from __future__ import annotations

import re

SUBJECT = "User"

_IRREGULAR = {
    "have": "has",
    "do": "does",
    "go": "goes",
    "be": "is",
    "are": "is",
    "were": "was",
    "am": "is",
    "'m": "is",
    "'ve": "has",
    "'ll": "will",
    "'d": "would",
    "can": "can",
    "cannot": "cannot",
    "could": "could",
    "will": "will",
    "would": "would",
    "should": "should",
    "must": "must",
    "may": "may",
    "might": "might",
    "shall": "shall",
    "need": "needs",
    "used": "used",
}
_PAST = frozenset(
    "was,were,went,grew,got,had,did,made,took,bought,began,became,left,met,found,"
    "came,saw,told,said,knew,thought,felt,kept,lost,won,ran,swam,drove,rode,wrote,"
    "read,built,spent,sold,taught,caught,brought,chose,broke,fell,flew,gave,heard,"
    "held,hurt,led,lent,let,meant,paid,put,quit,rose,sat,set,shut,slept,spoke,stood,"
    "stole,struck,swore,tore,threw,understood,woke,wore,upset,became,overcame,forgot,"
    "dug,fought,hung,lit,sent,shot,shook,sang,sank,stuck,stung,swung,wept,wound".split(",")
)
#: Adverbs that may sit between "I" and its verb ("I usually start" -> "usually starts").
ADVERBS = frozenset(
    "really,also,just,currently,still,now,actually,mostly,usually,always,never,"
    "generally,recently,finally,only,even,absolutely,totally,definitely,primarily,"
    "mainly,basically,officially,already,often,sometimes,typically,frequently,"
    "regularly,rarely,seldom,occasionally,normally,honestly,literally,truly,"
    "genuinely,certainly,personally,exclusively,constantly,religiously,"
    "almost,nearly,slowly,newly,happily,proudly,secretly,currently".split(",")
)
_VOWEL_Y = re.compile(r"[aeiou]y$")


def third_person(verb: str) -> str:
    """The he/she form of a present-tense verb; past forms and modals unchanged."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _PAST or (low.endswith("ed") and len(low) > 3) or not low.isalpha():
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and not _VOWEL_Y.search(low):
        return verb[:-1] + "ies"
    return verb + "s"


_POSSESSIVE = {
    "my": "their",
    "mine": "theirs",
    "me": "them",
    "myself": "themselves",
    "our": "their",
    "ours": "theirs",
    "us": "them",
    "i": "they",
    "i'm": "they're",
    "i've": "they've",
    "i'll": "they'll",
    "i'd": "they'd",
    "we": "they",
    "we're": "they're",
    "we've": "they've",
    "ourselves": "themselves",
}
#: "mine" after an article or a mineral is the noun ("works at a gold mine")
_A_MINE = re.compile(
    r"\b(?:a|an|the|this|that|gold|coal|salt|tin|copper|iron|silver|diamond|lithium|"
    r"uranium|zinc|nickel|open[- ]pit|open[- ]cast|opal|slate|underground)\s+$",
    re.IGNORECASE,
)
_WORD = re.compile(r"\b(?:my|mine|me|myself|our|ours|us|ourselves|I|I'm|I've|I'll|I'd|we)\b")


def pronouns(text: str) -> str:
    """Every first-person word that is not the subject becomes third person."""

    def swap(m: re.Match[str]) -> str:
        word = m[0]
        if word.lower() == "us" and m.start() > 0 and text[m.start() - 1] in ".-":
            return word  # "the U.S" stays
        if word == "US":
            return word
        if word.lower() == "mine" and _A_MINE.search(text, 0, m.start()):
            return word  # "a gold mine", "the mine": the noun
        return _POSSESSIVE[word.lower()]

    return _WORD.sub(swap, text)


_LEAD = re.compile(
    r"^(?P<subj>I|we)(?P<cont>'m|'ve|'ll|'d|'re)?(?:\s+|$)(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_MY = re.compile(r"^(?:my|our)\s+", re.IGNORECASE)
_CONT = {"'m": "is", "'ve": "has", "'ll": "will", "'d": "would", "'re": "is"}
_NEG = {
    "don't": "doesn't",
    "dont": "doesn't",
    "do not": "does not",
    "am not": "is not",
    "haven't": "hasn't",
    "have not": "has not",
}


def rewrite(clause: str, *, team: bool = False) -> str:
    """ "I ..." / "my ..." / "we ..." as a statement about the user (best effort). "We"
    is the user's household unless ``team`` (a stack statement: "we use Go")."""
    text = clause.strip()
    my = _MY.match(text)
    if my:
        owner = "User's"
        return f"{owner} {pronouns(text[my.end() :])}"
    lead = _LEAD.match(text)
    if not lead:  # "Cantonese is my mother tongue" names the user where it says "my"
        owned = re.sub(r"\bmy\b", "User's", text, count=1, flags=re.IGNORECASE)
        return pronouns(owned) if owned != text else f"{SUBJECT}: {pronouns(text)}"
    we = lead["subj"].lower() == "we"
    subject = "User's team" if we and team else SUBJECT
    rest = lead["rest"]
    if lead["cont"]:
        return f"{subject} {_CONT[lead['cont'].lower()]} {pronouns(rest)}".strip()
    for first, third in _NEG.items():
        if rest.lower().startswith(first + " "):
            after = rest[len(first) + 1 :].split(" ", 1)
            after[0] = after[0] if after[0].islower() else after[0].lower()
            return f"{subject} {third} {pronouns(' '.join(after))}"
    words = rest.split(" ")
    i = 0
    while i < len(words) - 1 and words[i].lower() in ADVERBS:
        i += 1
    if words and words[i]:
        verb = words[i] if words[i].islower() else words[i].lower()
        words[i] = third_person(verb)
    return f"{subject} {pronouns(' '.join(words))}".strip()
