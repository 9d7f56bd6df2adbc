"""Hybrid ranking arithmetic: score fusion and the context priors.

RRF (``scoring.rrf_fuse``) throws the legs' scores away and keeps ranks, so a keyword
hit far ahead of the rest counts the same as one that barely won. ``score_fuse`` keeps
the margins: each leg is divided by its best score, so both legs speak on a 0..1 scale
whatever the query, and an id a leg did not return gets that leg's lowest listed value
(it ranked below the leg's cut-off, not at zero).

The context priors encode how conversational memory is written: what was said next to
a relevant memory, and in the same session, is more likely relevant too (evidence for
one question is usually told over a few turns of one conversation).

- ``neighbour_weight``: a memory gains a share of the best score of the memory written
  just before or just after it in the same owner and session.
- ``session_weight``: a memory gains a share of its session's strength, the mean of
  the session's ``session_top`` best scores, scaled so that the strongest session of
  the query gains the whole weight.

Everything here is pure; the retriever supplies the adjacency and the sessions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


def score_fuse(
    legs: Sequence[Sequence[tuple[str, float]]],
    weights: Sequence[float] | None = None,
    *,
    standardise: bool = False,
) -> list[tuple[str, float]]:
    """Weighted mean of max-normalised leg scores, best first (ties: first seen).

    A leg whose best score is not positive carries no usable scale and is skipped.
    ``standardise``: each leg as z-scores instead (its distance from the leg's mean in
    standard deviations), so a leg whose scores are bunched together (cosine
    similarities often are) speaks as loudly as one that is spread out; the result is
    shifted so that the weakest candidate scores 0.
    """
    weights = [1.0] * len(legs) if weights is None else list(weights)
    if len(weights) != len(legs):
        raise ValueError("weights must have one entry per leg")
    normalised: list[tuple[dict[str, float], float, float]] = []
    order: dict[str, int] = {}
    for leg, weight in zip(legs, weights, strict=True):
        if not leg or weight <= 0:
            continue
        top = max(score for _, score in leg)
        if not top > 0:
            continue
        scores: dict[str, float] = {}
        for item, score in leg:
            if item not in scores:
                scores[item] = max(0.0, score) / top
                order.setdefault(item, len(order))
        if standardise:
            scores = _z(scores)
        normalised.append((scores, min(scores.values()), weight))
    if not normalised:
        return []
    total = sum(weight for _, _, weight in normalised)
    # leg by leg, in the order sum() would add them: the same floats, without a
    # generator per candidate
    fused = dict.fromkeys(order, 0.0)
    for scores, floor, weight in normalised:
        for item in fused:
            fused[item] += weight * scores.get(item, floor)
    fused = {item: value / total for item, value in fused.items()}
    if standardise:  # shifted so the weakest candidate scores 0: scores stay non-negative
        lowest = min(fused.values())
        fused = {item: value - lowest for item, value in fused.items()}
    return sorted(fused.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def _z(scores: dict[str, float]) -> dict[str, float]:
    values = list(scores.values())
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    if sd <= 0:
        return dict.fromkeys(scores, 0.0)
    return {item: (value - mean) / sd for item, value in scores.items()}


@dataclass(frozen=True, slots=True)
class ContextWeights:
    neighbour: float = 0.3
    session: float = 0.3
    session_top: int = 2

    @property
    def active(self) -> bool:
        return self.neighbour > 0 or self.session > 0


def apply_context(
    ranked: Sequence[tuple[str, float]],
    neighbours: Mapping[str, Iterable[str]],
    sessions: Mapping[str, str],
    weights: ContextWeights,
) -> list[tuple[str, float]]:
    """Scores raised by the neighbour and session priors, re-sorted (stable).

    Scores are first shifted so the weakest candidate sits at 0: the priors then add
    evidence, never a constant. ``neighbours[id]`` lists the ids written next to ``id``
    (candidates or not; only candidates carry a score); ``sessions[id]`` groups ids.
    """
    if not ranked or not weights.active:
        return list(ranked)
    floor = min(score for _, score in ranked)
    base = {item: score - floor for item, score in ranked}
    boosted = dict(base)
    if weights.neighbour > 0:
        for item in base:
            near = [base.get(other, 0.0) for other in neighbours.get(item, ())]
            if near:
                boosted[item] += weights.neighbour * max(near)
    if weights.session > 0:
        members: dict[str, list[float]] = defaultdict(list)
        for item, score in base.items():
            members[sessions.get(item, "")].append(score)
        top = max(1, weights.session_top)
        strength = {
            session: sum(sorted(scores, reverse=True)[:top]) / top
            for session, scores in members.items()
        }
        best = max(strength.values())
        if best > 0:
            for item in base:
                boosted[item] += weights.session * strength[sessions.get(item, "")] / best
    position = {item: i for i, (item, _) in enumerate(ranked)}
    return sorted(boosted.items(), key=lambda pair: (-pair[1], position[pair[0]]))


def apply_subjects(
    ranked: Sequence[tuple[str, float]], about: set[str], weight: float
) -> list[tuple[str, float]]:
    """Scores of the ids in ``about`` (memories about a person the query names) raised
    by ``weight`` times the ranking's spread, re-sorted (stable). Scale-free, like the
    other priors: the same share whatever the fusion's scale."""
    if not ranked or not about or weight <= 0:
        return list(ranked)
    scores = [score for _, score in ranked]
    spread = max(scores) - min(scores)
    if spread <= 0:
        return list(ranked)
    position = {item: i for i, (item, _) in enumerate(ranked)}
    raised = [(item, score + weight * spread if item in about else score) for item, score in ranked]
    return sorted(raised, key=lambda pair: (-pair[1], position[pair[0]]))
