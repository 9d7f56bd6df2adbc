"""Who a memory is about, and whom a query names.

A memory may carry ``subjects`` in its metadata: ``"user"`` (the person the memories
belong to) or a named person ("User's sister Anna lives in Lisbon" is about Anna and
the user). A query that names one of the owner's known subjects ("what does Anna
do?") should prefer memories about that person, and its dense leg should not search
for the name: an embedder matches the name, not what is asked about it.

Names are matched against the owner's known subjects only, case- and
possessive-insensitively ("anna's", "Anna\u2019s"). A name that is also a common word
("Will", "May", "Mark") counts only where it reads as a name: capitalised, not the
first word of a sentence ("Will you remind me"), not after a word that makes it a date
or a verb ("in May", "may 5"), unless it is possessive ("May's").

Pure: no I/O, the stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: The owner themselves: every extracted fact is about them, so naming "user" says
#: nothing about which memory is meant.
OWNER = "user"
#: First names that are also common English words (months, verbs, nouns).
_AMBIGUOUS_WORDS = (
    "will may june april august march mark bill grace hope faith joy rose summer "
    "autumn dawn art pat sue rob frank gene guy jack ray max sky amber ivy olive iris "
    "lily daisy holly jasmine ruby pearl crystal sandy rocky chase hunter mason miles "
    "penny carol harmony melody honey star storm rain river brook sunny bob drew jean "
    "jay kit lane reed wade"
)
AMBIGUOUS = frozenset(_AMBIGUOUS_WORDS.split())
#: Words after which a capitalised ambiguous name is a date or a verb, not a person.
_BEFORE_A_DATE_OR_VERB = (
    "in on of by since until till during next last this early late mid before after "
    "from to i you we they he she it who which that there"
)
_NOT_A_NAME_AFTER = frozenset(_BEFORE_A_DATE_OR_VERB.split())
_APOSTROPHE = "'\u2019"
_WORD = re.compile(r"[^\W\d_][\w'\u2019-]*")
_POSSESSIVE = re.compile(r"(?:'s|\u2019s|'|\u2019)$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?]\s*$")
_RELATIONS = (
    "sister|brother|mother|father|mom|mum|dad|wife|husband|partner|son|daughter|friend|"
    "boyfriend|girlfriend|colleague|coworker|boss|manager|cousin|aunt|uncle|grandmother|"
    "grandfather|grandma|grandpa|niece|nephew|roommate|neighbor|neighbour|fiance|fiancee"
)
_RELATED = re.compile(rf"\b(?:{_RELATIONS})\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)")

#: What a memory may say it is about, in every interface (REST, MCP, import).
MAX_SUBJECTS = 8
MAX_SUBJECT_CHARS = 100


def _is_sentence_start(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or bool(_SENTENCE_END.search(before))


def named(query: str, known: Iterable[str]) -> list[str]:
    """The known subjects ``query`` names (lowercased, in order of first mention)."""
    names = {k.strip().lower() for k in known if k and k.strip()} - {OWNER}
    if not names:
        return []
    found: list[str] = []
    words = list(_WORD.finditer(query))
    for i, match in enumerate(words):
        token = match.group(0)
        base = _POSSESSIVE.sub("", token)
        low = base.lower()
        if low not in names or low in found:
            continue
        if low in AMBIGUOUS and base == token:  # a possessive always reads as a name
            previous = words[i - 1].group(0).lower() if i else ""
            rest = query[match.end() :].lstrip()
            if (
                not base[:1].isupper()
                or _is_sentence_start(query, match.start())
                or previous in _NOT_A_NAME_AFTER
                or rest[:1].isdigit()
            ):
                continue
        found.append(low)
    for name in sorted(names - set(found)):
        said = rf"\b{re.escape(name)}(?:[{_APOSTROPHE}]s)?\b"
        if " " in name and re.search(said, query, re.IGNORECASE):
            found.append(name)  # a subject of several words, said in full
    return found


def without(query: str, names: Iterable[str]) -> str:
    """``query`` with the named people taken out (for the dense leg); the query
    itself when nothing would be left."""
    text = query
    for name in names:
        said = rf"\b{re.escape(name)}(?:[{_APOSTROPHE}]s?)?(?=\W|$)"
        text = re.sub(said, " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+", " ", text).strip()
    return text if re.search(r"\w", text) else query


def of_fact(content: str) -> list[str]:
    """Subjects of an extracted fact (``"User's sister Anna lives in Lisbon"``): the
    user, and the people it names by their relation to the user."""
    people = [m.group(1) for m in _RELATED.finditer(content)]
    return [OWNER, *dict.fromkeys(people)]
