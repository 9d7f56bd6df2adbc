"""Tools, languages and platforms: the lexicon decides the slot (``rules.prefers``
and the stack rules of ``table`` build through ``tech``).
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.values import Build, Draft, deictic, find, first, one, said, slug, trim

__all__ = ["tech"]


_PRIMARY = re.compile(r"\b(?:mostly|mainly|primarily|main|chiefly|predominantly)\b", re.I)


def tech(mode: str, *, lenient: bool = False) -> Build:
    """A tool, language or platform: the lexicon decides the slot. Editors and OSes
    are one at a time; "mostly"/"main" makes a primary one; a switch retires the
    category's other tools."""

    def build(m: re.Match[str], clause: str) -> list[Draft] | None:
        value = trim(m["v"])
        if deictic(value):
            return None
        found = first(lx.TECH, value)
        if mode == "switch" and found and found not in " ".join(value.lower().split()[:3]):
            found = None  # "moved to Kyoto in the spring" names no tool it moved to
        owned = find(lx.POSSESSIONS, value)
        if found and lx.TECH[found] == "os":
            owned = None  # "ubuntu on my laptop" names the OS, not the laptop
        team = bool(re.match(r"(?:we|our)\b", clause, re.I))
        content = said(m, team=team)
        kind = lx.POSSESSIONS.get(owned or "")
        if kind in ("phone", "laptop", "computer", "tablet"):
            return one("possessions", str(kind), value, content, single=True)
        if found is None:
            if not lenient or len(value) < 2:
                return None
            return one("stack", f"tool:other:{slug(value)}", value, content)
        category = lx.TECH[found]
        if mode == "prefer":
            return one("stack", f"preference:{category}", value, content, single=True)
        if mode == "switch" or category in lx.SINGLE_TECH:
            replaces = (
                (f"tool:{category}:*", f"preference:{category}", f"primary:{category}")
                if mode == "switch"
                else ()
            )
            if category in lx.SINGLE_TECH:
                return one(
                    "stack", f"tool:{category}", value, content, single=True, replaces=replaces
                )
            return one("stack", f"tool:{category}:{slug(found)}", value, content, replaces=replaces)
        if _PRIMARY.search(clause):
            return one("stack", f"primary:{category}", value, content, single=True)
        return one("stack", f"tool:{category}:{slug(found)}", value, content)

    return build
