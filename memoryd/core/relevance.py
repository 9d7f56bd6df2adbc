"""Which ranked hits are relevant enough to inject, and the record of those that are not
(previews show every candidate left out, with its reason)."""

from __future__ import annotations

from collections.abc import Collection
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


def relevant(
    hits: list[Hit], floor: float | None, asked: Collection[str] = (), reasons: bool = True
) -> tuple[list[Hit], list[Dropped]]:
    """Per hit, not only the top one: a candidate must reach ``floor`` in similarity,
    or half of it with a keyword match too. Nearest neighbours always exist, so without
    this a question about Mount Everest brings up every memory of the owner; and a lone
    shared word ("works") is weak evidence. Without a similarity (keyword-only search)
    a keyword match is the evidence. A memory of an attribute the question asks about
    (``asked``) is kept whatever its similarity: "where do I work?" is close
    to no statement of an employer. Every hit leaves with its reason in plain words
    (a kept one only with ``reasons``: they cost a copy of each hit)."""
    kept: list[Hit] = []
    dropped: list[Dropped] = []
    for hit in hits:
        similarity, words = hit.vec_score, bool(hit.fts_score)
        attribute = hit.memory.attribute
        if hit.reason:  # said by whoever found it (an asked attribute's read)
            kept.append(hit)
        elif attribute in asked:
            kept.append(_said(hit, f"asked about: {attribute}"))
        elif (
            not floor
            or (similarity is None and hit.tier not in ("vector", "qdrant"))
            or (similarity is not None and similarity >= (floor / 2 if words else floor))
        ):
            kept.append(_said(hit, _why(similarity, words, floor)) if reasons else hit)
        else:
            dropped.append(Dropped(hit, _short(similarity, words, floor)))
    return kept, dropped


def _said(hit: Hit, reason: str) -> Hit:
    """``hit`` with its reason (a constructor call: ``dataclasses.replace`` costs 3x)."""
    return Hit(hit.memory, hit.score, hit.tier, hit.tokens, hit.vec_score, hit.fts_score, reason)


def _why(similarity: float | None, words: bool, floor: float | None = None) -> str:
    if similarity is None:
        return "shares words with the question" if words else "the newest memories"
    close = f"close in meaning to the question (similarity {similarity:.2f}"
    if floor and words and similarity < floor:
        return f"{close}, enough with the words it shares: at least {floor / 2:g})"
    shared = " and shares words with it" if words else ""
    return f"{close}{', at least ' + format(floor, 'g') if floor else ''}){shared}"


def _short(similarity: float | None, words: bool, floor: float) -> str:
    if similarity is None:
        return "found by meaning alone, with no similarity to weigh"
    if words:
        return (
            f"not close enough in meaning (similarity {similarity:.2f}; with shared words "
            f"it needs {floor / 2:g}, the relevance floor {floor:g} halved)"
        )
    return (
        f"not close enough in meaning (similarity {similarity:.2f}, the relevance floor is "
        f"{floor:g}) and shares no words with the question"
    )


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
