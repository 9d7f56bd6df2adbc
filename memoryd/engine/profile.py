"""An owner's profile for one request, and retrieval with it: what a chat request
carries and what a preview shows, from one function, so the two cannot drift apart.
``core.profile`` decides membership order and the budget; this reads the
rows through the retrieval filter (the same owners, end user, expiry and retention)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from memoryd.config.settings import MemorySettings
from memoryd.core import profile as core
from memoryd.core.extraction.careful import careful
from memoryd.core.relevance import distinct
from memoryd.models import Hit, Memory, Profile

if TYPE_CHECKING:
    from memoryd.engine.retrieval import Request, Retriever

#: Profile rows read per request before ranking (pinned and always-on, newest first).
CANDIDATES = 32


def compose(retriever: Retriever, req: Request, settings: MemorySettings) -> Profile:
    """The profile section of one request: pinned memories, then the always-on
    attributes, then those the question's topic bears on, within ``profileMaxTokens``.
    The whole key's (or end user's) memories, whatever the session scope: a standing
    instruction is not a session's."""
    budget = settings.profile_max_tokens
    if budget <= 0 or req.owner is None:
        return Profile([], [], budget)
    found = core.topics(req.query)
    extra = tuple(dict.fromkeys(a for t in found for a in t.attributes if a not in core.PROFILE))
    household = tuple(a for a in core.HOUSEHOLD if a not in extra)
    flt = replace(retriever.scope_filter(req, settings), session_id=None)
    # Two plain reads, no snapshot: a fact written between them shows in one or neither,
    # which changes nothing, and a snapshot costs a shared store two more round trips.
    reader = retriever.store.read()
    rows = reader.recent(replace(flt, profile=core.PROFILE + extra), CANDIDATES)
    # a relative's own constraint, read apart so many relatives' facts crowd nothing out
    if household:
        kin = reader.recent(replace(flt, profile=household), CANDIDATES)
        seen = {m.id for m in rows}
        rows += [m for m in kin if m.id not in seen and careful(m.content) is not None]
    ranked = core.rank(rows, _ranked_as, _pinned, extra)
    always = set(core.PROFILE)
    hits = [
        Hit(
            m,
            1.0,
            "profile"
            if _pinned(m) or _careful(m) or m.attribute in always or m.attribute in household
            else "topic",
            retriever.tokens(m.content),
        )
        for m in ranked
    ]
    hits, _ = distinct(hits, [])  # one copy of a fact; an end user's own slot wins
    kept, dropped = core.fit(hits, budget, lambda h: h.tokens)
    return Profile(kept, dropped, budget, [t.name for t in found])


def merge(profile: Profile, hits: list[Hit]) -> list[Hit]:
    """The retrieved hits without what the profile already says: the same memory, the
    same words, or a shared memory of a slot the end user's own profile fact holds."""
    if not profile.hits:
        return hits
    seen = {h.memory.id for h in profile.hits}
    kept, _ = distinct([*profile.hits, *hits], [])
    return [h for h in kept if h.memory.id not in seen]


def _pinned(memory: Memory) -> bool:
    return memory.metadata.get("pinned") is True


def _careful(memory: Memory) -> bool:
    """Capture found it a constraint advice must weigh, whatever its attribute ("still
    don't have a driver's, I take taxis everywhere" is a vehicle's)."""
    return memory.metadata.get("careful") is True and "pinned" not in memory.metadata


def _ranked_as(memory: Memory) -> str | None:
    """A careful memory ranks with the constraints."""
    if _careful(memory) and memory.attribute not in core.PROFILE:
        return core.CONSTRAINTS[-1]
    return memory.attribute
