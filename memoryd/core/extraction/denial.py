"""A denial retires what it denies, whatever attribute either statement was filed under.

"I don't work in Bosch anymore" was read as a dislike while "I am working in Bosch" was
the employer; "turns out im not allergic to strawberries" was kept by the classifier
under a slot of its own words beside "allergic to strawberries". Slots cannot reconcile
two statements that landed in different rooms, but the thing denied can: ``denied``
names it (the first word that carries meaning in the phrase the denial governs,
stemmed: "strawberr", "bosch", "smok") and returns supersede targets for the person's own
memories that say it, in every attribute about the person (never a relative's or a
pet's: "I don't eat sushi" leaves "my partner loves sushi"). Pure and stdlib-only.
"""

from __future__ import annotations

import functools
import re

from memoryd.core.extraction.attributes import ATTRIBUTES

__all__ = ["denied"]

#: A denial in the rewritten content ("User does not ...", "User is no longer ...",
#: "User quit ...", "User sold ..."), and the phrase it governs.
_CUE = re.compile(
    r"\b(?:not|n't|no\s+longer|never|no\s+more|quit|stopped|gave\s+up(?:\s+on)?|"
    r"given\s+up(?:\s+on)?|sold|got\s+rid\s+of|done\s+with)\s+(?P<what>[^,;.!?()]+)",
    re.IGNORECASE,
)
#: Where the denied phrase ends: "not allergic to strawberries, it was the spray",
#: "no longer vegetarian since March", "quit smoking because ...".
_END = re.compile(
    r"\s(?:since|because|cause|coz|cos|but|so|and|as|after|anymore|any\s+more|now|again|"
    r"though|although|when|while|until|till|for\s+(?:a|the|now|good|years?|months?|weeks?)|"
    r"these\s+days|at\s+all|altogether|either|yet|too|lol|haha)\b",
    re.IGNORECASE,
)
#: Words that do not say what was denied.
_EMPTY = frozenset(
    str.split(
        """a an the my our your their his her its this that these those them it any some all
    to in at on of for with from by into about as be been being am is are was were do does
    did have has had having get got go going gone use using used work working worked live
    living lived eat eating ate drink drinking drank take taking took like likes liked love
    loves loved want wants need needs really very much more most longer allergic anymore
    still just even ever thing things stuff one ones bit lot kind sort mode diet way person
    guy girl fan big huge so too also again now user they them themself themselves he she
    able allowed supposed going gonna wanna touched eaten had done seen tried felt
    made getting doing making having anything nothing something everything much many
    lives works eats drinks uses takes owns keeps wears plays watches reads"""
    )
)
#: "never misses a game", "not only", "not sure", "not bad": no denial of a thing; and
#: a move or a plan ("not moving away from Lisbon", "quit my job to travel around Japan")
#: says the opposite of leaving what it names, or names a place, not a fact to retire.
_NOT_DENIAL = re.compile(
    r"(?:miss|misses|missed|fail|fails|forget|forgets|only|just|sure|bad|that|too|much|"
    r"exactly|quite|really|yet|even|always|once|one|mind|minding|mov\w*|go\w*|leav\w*|"
    r"travel\w*|fly\w*|head\w*|plan\w*|think\w*|look\w*|try\w*|want\w*|away|back|"
    r"there|here)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][\w'-]*")


def _stem(word: str) -> str:
    """A stem every inflection of the word contains: "strawberries" and "strawberry"
    both hold "strawberr", "smoking" and "smokes" both "smok"."""
    w = word.lower().strip("'-")
    if w.endswith("ies") and len(w) > 5:
        return w[:-3]
    if w.endswith("ing") and len(w) > 6:
        return w[:-3]
    if w.endswith("es") and len(w) > 5 and w[-3] in "sxz":
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss") and len(w) > 4:
        return w[:-1]
    if w.endswith("y") and len(w) > 5:
        return w[:-1]
    return w


def _thing(content: str) -> str | None:
    """The stem of the last meaningful word the first denial of ``content`` governs."""
    m = _CUE.search(content)
    if m is None:
        return None
    what = m["what"]
    if _NOT_DENIAL.match(what):
        return None
    end = _END.search(" " + what)
    if end is not None:
        what = what[: max(0, end.start() - 1)]
    words = [w for w in _WORD.findall(what) if w.lower() not in _EMPTY]
    if not words:
        return None
    stem = _stem(words[0])
    return stem if len(stem) >= 4 else None


@functools.cache
def _own_rooms() -> tuple[str, ...]:
    """Supersede target patterns (``slot~`` / ``prefix:*~``) for every attribute about
    the person themself."""
    rooms: list[str] = []
    for attribute in ATTRIBUTES:
        if attribute.name in ("partner", "family_member", "pet"):
            continue
        if attribute.single:
            rooms.append(f"{attribute.storage_slot}~")
            rooms.append(f"{attribute.storage_slot}:*~")  # units per dimension
        rooms += [f"{prefix}:*~" for prefix in attribute.prefixes]
        rooms += [f"{prefix}~" for prefix in attribute.prefixes]
    return tuple(dict.fromkeys(rooms))


def denied(content: str) -> tuple[str, ...]:
    """Supersede targets for the person's memories that say what ``content`` denies;
    empty when it denies nothing nameable."""
    thing = _thing(content)
    if thing is None:
        return ()
    return tuple(room + thing for room in _own_rooms())
