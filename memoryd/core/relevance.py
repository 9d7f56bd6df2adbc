"""Which ranked hits are relevant enough to inject, and the record of those that are not
(previews show every candidate left out, with its reason)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memoryd.models import Hit


@dataclass(frozen=True, slots=True)
class Dropped:
    """A candidate that was not injected, and why (shown by previews)."""

    hit: Hit
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.hit.to_dict(), "reason": self.reason}


def relevant(hits: list[Hit], floor: float | None) -> tuple[list[Hit], list[Dropped]]:
    """Per hit, not only the top one: a candidate must reach ``floor`` in similarity,
    or half of it with a keyword match too. Nearest neighbours always exist, so without
    this a question about Mount Everest brings up every memory of the owner; and a lone
    shared word ("works") is weak evidence. Without a similarity (keyword-only search)
    a keyword match is the evidence."""
    if not floor:
        return hits, []
    kept: list[Hit] = []
    dropped: list[Dropped] = []
    for hit in hits:
        similarity = hit.vec_score
        if (similarity is None and hit.tier not in ("vector", "qdrant")) or (
            similarity is not None and similarity >= (floor / 2 if hit.fts_score else floor)
        ):
            kept.append(hit)
        else:
            shown = "none" if similarity is None else f"{similarity:.2f}"
            match = "a keyword match halves it" if hit.fts_score else "no keyword match"
            reason = f"below the relevance floor {floor} (similarity {shown}, {match})"
            dropped.append(Dropped(hit, reason))
    return kept, dropped


def distinct(hits: list[Hit], dropped: list[Dropped]) -> tuple[list[Hit], list[Dropped]]:
    """One hit per statement (``dropped`` is extended, for ``relevant``'s output). An end
    user who says a fact the key's shared memories hold has it stored twice, and both
    copies were injected; and their own memory of a slot (where they live) shadows the
    key's shared one of that slot, which would otherwise contradict it in the block."""
    own_slots = {
        (h.memory.api_key_id, h.memory.slot) for h in hits if h.memory.user_id and h.memory.slot
    }
    seen: set[tuple[str, str]] = set()
    kept: list[Hit] = []
    repeated: list[Dropped] = []
    for hit in hits:
        memory = hit.memory
        words = (memory.api_key_id, " ".join(memory.content.casefold().split()))
        if words in seen:
            repeated.append(Dropped(hit, "the same words as a memory ranked above it"))
        elif not memory.user_id and (memory.api_key_id, memory.slot) in own_slots:
            repeated.append(Dropped(hit, "the end user's own memory of this slot replaces it"))
        else:
            seen.add(words)
            kept.append(hit)
    return kept, dropped + repeated
