"""Where the user lives: a home named, moved to, or left (``table`` calls these)."""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.values import Draft, deictic, find, one, said, slug, trim


def lives(m: re.Match[str], clause: str) -> list[Draft] | None:
    value = trim(m["v"])
    low = value.lower()
    tool = find(lx.TECH, value)
    if deictic(value) or (tool and low.startswith(tool) and lx.TECH[tool] != "language"):
        return None  # "moved to VS Code" is a switch of editor, not of city
    content = said(m)
    if low.startswith(("a ", "an ")) and not value.split()[-1][:1].isupper():
        kind = lx.POSSESSIONS.get(find(lx.POSSESSIONS, low) or "", "home")
        slot = "home_type" if kind == "home" else kind
        return one("possessions", slot, value, content, single=True)
    on = re.match(r"(?:I|we)\s+\w+(?:\s+\w+)?\s+on\s", clause, re.I)
    if on and not value[:1].isupper() and not low.startswith(("a ", "an ", "the ")):
        return None  # "I live on coffee" is no address; "we live on Elm Street" is
    if low.startswith(("with ", "alone", "by myself", "on my own")):
        return one("location", "living_situation", value, content, single=True)
    if _MOVED.search(clause) and " live" not in content:
        # "User moved to Porto last month" shares no word, and little meaning, with
        # "Where do I live?": the search found nothing once the old home was replaced
        content += " and lives there now"
    # living there again ends an "I no longer live in Porto"
    return one("location", "home_location", value, content, single=True, replaces=(_former(value),))


_MOVED = re.compile(r"\b(?:moved|relocated|emigrated|immigrated)\b", re.IGNORECASE)


def left_home(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "I no longer live in Berlin", "we moved out of Berlin": the home there (only
    there: the user may have named their new one already) is history."""
    value = trim(m["v"])
    if not value[:1].isupper() or deictic(value) or len(value.split()) > 4:
        return None
    content = f"User no longer lives in {value}"
    return one(
        "location",
        _former(value),
        value,
        content,
        single=True,
        replaces=(f"home_location~{value}",),
    )


def _former(place: str) -> str:
    """A slot per place left: leaving Lisbon must not replace having left Berlin."""
    return f"former_home:{slug(place)}"
