"""Pure ranking arithmetic: token estimates, keyword relevance, fusion, budgets.

Everything here is deterministic and I/O-free so the retrieval tiers (FTS5, vector,
hybrid) can share one definition of "how relevant" and "how much fits", and so the
numbers can be pinned by unit tests independently of any store.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from memoryd.models import Hit

T = TypeVar("T")

#: The bounds on a retrieval budget (docs/design/retrieval.md#budget); anything outside
#: is clamped, never rejected.
MIN_BUDGET_TOKENS = 1
MAX_BUDGET_TOKENS = 16000


def estimate_tokens(text: object) -> int:
    """Cheap, tokenizer-free token count (~4 characters per token, rounded up).

    Budgets only need a stable, monotone estimate; a real tokenizer would tie the
    engine to one model family. Non-strings count as 0 so bad rows cannot break a walk.
    """
    if not isinstance(text, str) or not text:
        return 0
    return math.ceil(len(text) / 4)


def parse_metadata(raw: object) -> dict[str, Any]:
    """Normalise stored or client metadata to a fresh dict.

    Metadata arrives as dicts (API) or JSON text (SQLite, imports). Anything that is
    not a JSON object becomes ``{}`` rather than an error: metadata is advisory, and
    one malformed row must not fail a whole search. A copy is returned so callers may
    mutate it without touching the source.
    """
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, str) or not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


_KEY_HAYSTACK = 1  # index of the key haystack in relevance_score


def relevance_score(content: str, key: str, metadata: Mapping[str, Any], query: str) -> int:
    """The reference keyword scorer, used when no index ranks the candidates.

    Per haystack (content, key, compact metadata JSON): +20 for the whole query as a
    substring; then per whitespace token, +6 if the key contains it (keys are short
    labels, so presence matters, not frequency) or +3 per non-overlapping occurrence
    elsewhere. The key haystack is identified by position: the reference compared by
    value, which wrongly treated content equal to the key as the key.
    """
    q = query.strip().lower()
    if not q:
        return 0
    meta_text = json.dumps(dict(metadata), ensure_ascii=False, separators=(",", ":"))
    haystacks = (content.lower(), key.lower(), meta_text.lower())
    tokens = q.split()
    score = 0
    for index, hay in enumerate(haystacks):
        if q in hay:
            score += 20
        for token in tokens:
            if index == _KEY_HAYSTACK:
                if token in hay:
                    score += 6
            else:
                score += 3 * hay.count(token)
    return score


def rrf_fuse(
    ranked_lists: Sequence[Sequence[str]],
    *,
    k: int = 60,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Reciprocal Rank Fusion: ``score(id) = sum_i w_i / (k + rank_i(id))``.

    RRF merges rankings whose raw scores are incomparable (BM25 vs cosine) using only
    ranks. Ranks are 1-based; an id repeated within one list counts once, at its best
    rank. Ties break by the best rank in any list, then by first appearance, so the
    output is fully deterministic.
    """
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    elif len(weights) != len(ranked_lists):
        raise ValueError("weights must have one entry per ranked list")
    if k < 0:
        raise ValueError("k must be non-negative")

    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for ranking, weight in zip(ranked_lists, weights, strict=True):
        seen_here: set[str] = set()
        for rank, item_id in enumerate(ranking, start=1):
            if item_id in seen_here:
                continue
            seen_here.add(item_id)
            first_seen.setdefault(item_id, len(first_seen))
            scores[item_id] = scores.get(item_id, 0.0) + weight / (k + rank)
            best_rank[item_id] = min(best_rank.get(item_id, rank), rank)
    order = sorted(scores, key=lambda i: (-scores[i], best_rank[i], first_seen[i]))
    return [(item_id, scores[item_id]) for item_id in order]


def clamp_budget(max_tokens: int) -> int:
    """Clamp a requested budget to the 1..16000 range."""
    return max(MIN_BUDGET_TOKENS, min(MAX_BUDGET_TOKENS, max_tokens))


def budget_walk(
    items: Sequence[T],
    max_tokens: int,
    tokens_of: Callable[[T], int],
    *,
    limit: int | None = None,
) -> list[T]:
    """The budget walk (docs/design/retrieval.md#budget): take ranked items greedily while they fit.

    An item that does not fit is skipped, not a stopping point, so one long memory
    cannot starve the shorter ones ranked below it. If nothing fits at all, the top
    item is still returned when it is at most twice the budget: an answer slightly
    over budget beats an empty context. ``limit`` caps the count (``<= 0`` takes none).
    """
    budget = clamp_budget(max_tokens)
    if limit is not None and limit <= 0:
        return []
    taken: list[T] = []
    remaining = budget
    for item in items:
        cost = tokens_of(item)
        if cost <= remaining:
            taken.append(item)
            remaining -= cost
            if limit is not None and len(taken) >= limit:
                break
    if not taken and items and tokens_of(items[0]) <= 2 * budget:
        return [items[0]]
    return taken


def _clamp01(value: float) -> float:
    if math.isnan(value):
        return 0.0
    return max(0.0, min(1.0, value))


def confidence(hit: Hit) -> float:
    """Map a hit to a 0..1 relevance for the optional ``minScore`` abstention.

    Prefer the most calibrated signal available: cosine similarity, then the BM25
    magnitude squashed by ``x / (1 + x)``, then the keyword score squashed around 20
    (one whole-query match). The squashes are monotone, so thresholds stay meaningful.
    """
    if hit.vec_score is not None:
        return _clamp01(hit.vec_score)
    if hit.fts_score is not None:
        magnitude = max(0.0, hit.fts_score)
        if math.isnan(magnitude):
            return 0.0
        if math.isinf(magnitude):
            return 1.0
        return _clamp01(magnitude / (1.0 + magnitude))
    if hit.score > 0:
        return 1.0 if math.isinf(hit.score) else hit.score / (hit.score + 20.0)
    return 0.0


def passes_min_score(hits: Sequence[Hit], min_score: float | None) -> bool:
    """Whether retrieval should answer rather than abstain.

    Only the top hit is judged: if the best candidate is weak, the rest are weaker.
    No threshold or no hits means there is nothing to abstain from.
    """
    if min_score is None or not hits:
        return True
    return confidence(hits[0]) >= min_score
