"""Builders for the shapes the first rules missed: updates said in other words ("we split
up", "count me as pescatarian", "upgraded to a Ranger") and learner's or chatty shapes
of old facts ("I am product manager in a startup", "As a nurse, I ...").
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.rules import _is_job, im_a, possession
from memoryd.core.extraction.values import Draft, find, one, said, trim

__all__ = ["as_a", "bare_job", "diet_is", "known_possession", "status_of_relationship"]


def status_of_relationship(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "we split up", "we divorced": the status changes and the partner is history."""
    value = trim(m["v"])
    return one(
        "family",
        "relationship_status",
        value,
        said(m),
        single=True,
        replaces=("family:partner",),
    )


def bare_job(m: re.Match[str], clause: str) -> list[Draft] | None:
    """Learner's "I am product manager in a startup" (no article): a job when the words
    name one, else nothing (this rule comes last: "I am tired" is no job)."""
    value = trim(m["v"])
    if re.match(r"(?:a|an|the)\s", value, re.I) and m.string.lower().startswith("i "):
        return None  # "I am a nurse": the rule for "I'm a/an X" reads it
    value = re.sub(r"^(?:a|an)\s+", "", value, flags=re.I)
    role = re.split(r"\s+(?:in|at|for|with)\s+", value, maxsplit=1)[0].strip()
    head = role.lower().split()[-1] if role.split() else ""
    if not head or not _is_job(role.lower(), head):
        return None
    statement = f"I am a {value}"
    inner = re.match(r"^I\s+am\s+a\s+(?P<v>.+)$", statement)
    return im_a(inner, statement) if inner else None


def diet_is(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "count me as pescatarian now": the diet, said plainly."""
    value = trim(m["v"])
    return one("diet", "diet", value, f"User is {value}", single=True)


def known_possession(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "upgraded to a Ranger": a possession only when the lexicon knows the thing (a
    switch of editor or of city is read by other rules)."""
    if find(lx.POSSESSIONS, trim(m["v"])) is None:
        return None
    return possession(m, clause)


def as_a(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "As a nurse, I ...", "As a bit of an introvert I ...": who the user is."""
    statement = f"I am a {trim(m['v'])}"
    inner = re.match(r"^I\s+am\s+a\s+(?P<v>.+)$", statement)
    return im_a(inner, statement) if inner else None
