"""Clauses that only make sense after the one before them: "I have a hamster. His
name is Gizmo.", "I changed my name last month, it's Rowan now.", "Grew up in Lyon,
now in Paris." The previous clause's first fact (or a name change) is the topic.
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.values import NAME, Draft, slug, trim

_RELATION = re.compile(
    r"\b(?:"
    + "|".join(sorted((re.escape(w) for w in lx.RELATIONS), key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)

_NAMED = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"^(?:his|her|its|their|the)\s+name\s+is\s+{NAME}",
        rf"^(?:she|he|it|they)\s+(?:is|are)\s+(?:now\s+)?(?:called\s+|named\s+)?{NAME}",
        rf"^(?:we|I)\s+(?:have\s+)?(?:named|called)\s+(?:him|her|it|them)\s+{NAME}",
    )
)
_SELF_NAMED = re.compile(rf"^it\s+is\s+(?:now\s+)?{NAME}", re.IGNORECASE)
_PLACE = re.compile(
    r"^(?:and\s+)?(?:now|currently|these\s+days)?\s*in\s+(?P<v>(?-i:[A-Z]).+)$", re.I
)
_NAME_CHANGE = re.compile(r"^I\s+(?:\w+\s+){0,2}changed\s+my\s+name\b", re.IGNORECASE)


def about(clause: str) -> Draft | None:
    """A topic that a clause sets without stating a fact itself."""
    if _NAME_CHANGE.match(clause):
        return Draft("identity", "name", "", "")
    return None


def follow_up(clause: str, topic: Draft | None) -> list[Draft]:
    """The fact a clause states about the previous clause's topic, if any."""
    if topic is None:
        return []
    slot = topic.slot
    if slot.startswith("pet:"):
        m = next((m for p in _NAMED if (m := p.match(clause))), None)
        kind = slot.split(":")[1]
        if m:
            name = trim(m["v"])
            return [Draft("pets", f"pet:{kind}:name", name, f"User's {kind} is named {name}", True)]
    if slot.startswith("family:"):
        m = next((m for p in _NAMED if (m := p.match(clause))), None)
        who = _RELATION.search(topic.value or topic.slot.replace("_", " "))
        if m and who:
            name, rel = trim(m["v"]), who[0].lower()
            return [
                Draft("family", f"family:{rel}:{slug(name)}", name, f"User's {rel} is named {name}")
            ]
    if slot == "name":
        m = _SELF_NAMED.match(clause)
        if m:
            name = trim(m["v"])
            return [Draft("identity", "name", name, f"User's name is {name}", True)]
    if slot in ("home_location", "hometown", "birthplace"):
        m = _PLACE.match(clause)
        if m:
            place = trim(m["v"])
            return [Draft("location", "home_location", place, f"User lives in {place}", True)]
    return []
