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
