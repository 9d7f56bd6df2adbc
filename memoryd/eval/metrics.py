"""The recall tallies of the retrieval evaluations (LoCoMo, the peers' runs).

Turn-level: recall@k is the fraction of a question's evidence turn ids among the top-k
hits. Session-level, as several peers publish it: the top ``SESSION_TURNS`` hits are
mapped to their sessions (``"D8:6"`` is in session ``D8``), repeats dropped, and a
question is a hit at k when any evidence session is among the first k of them.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: How many top hits session recall maps to sessions, and its cut-offs.
SESSION_TURNS = 10
SESSION_KS = (1, 3, 5, 10)


class Asked(Protocol):
    """A question as the tallies need it."""

    @property
    def category(self) -> int: ...
    @property
    def evidence(self) -> tuple[str, ...]: ...


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of a run's latencies (0 for none)."""
    lat = sorted(latencies_ms) or [0.0]
    return {
        "p50": round(statistics.median(lat), 3),
        "p95": round(lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))], 3),
    }


def checked_run(
    ks: Sequence[int], strategies: Sequence[str], allowed: Sequence[str], max_k: int
) -> tuple[int, ...]:
    """The cut-offs sorted and deduplicated; ValueError for an unusable run."""
    cuts = tuple(sorted(set(ks)))
    if not cuts or cuts[0] < 1 or cuts[-1] > max_k:
        raise ValueError(f"k must be from 1 to {max_k}")
    if not strategies or set(strategies) - set(allowed):
        raise ValueError(f"strategies must be among {', '.join(allowed)}")
    return cuts


def session_of(turn_id: str) -> str:
    """``"D8:6"`` -> ``"D8"`` (an id without a colon is its own session)."""
    return turn_id.split(":", 1)[0]


def session_hits(ranked: Sequence[str], evidence: Sequence[str]) -> dict[int, float]:
    """1.0 at each k of ``SESSION_KS`` when an evidence session is among the first k
    distinct sessions of the top ``SESSION_TURNS`` hits, else 0.0."""
    sessions = list(dict.fromkeys(session_of(t) for t in ranked[:SESSION_TURNS] if t))
    wanted = {session_of(e) for e in evidence}
    return {k: float(any(s in wanted for s in sessions[:k])) for k in SESSION_KS}


def recall_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Fraction of ``evidence`` among the first ``k`` of ``ranked``."""
    if not evidence:
        raise ValueError("recall needs at least one evidence id")
    top = set(ranked[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


@dataclass(slots=True)
class Tally:
    """Running sums of recall@k and tokens@k over questions."""

    ks: tuple[int, ...]
    n: int = 0
    recall: dict[int, float] = field(default_factory=dict)
    tokens: dict[int, int] = field(default_factory=dict)
    sessions: dict[int, float] = field(default_factory=dict)

    def add(self, ranked: Sequence[str], tokens: Sequence[int], evidence: Sequence[str]) -> None:
        self.n += 1
        for k in self.ks:
            self.recall[k] = self.recall.get(k, 0.0) + recall_at(ranked, evidence, k)
            self.tokens[k] = self.tokens.get(k, 0) + sum(tokens[:k])
        for k, hit in session_hits(ranked, evidence).items():
            self.sessions[k] = self.sessions.get(k, 0.0) + hit

    def means(self) -> dict[str, Any]:
        n = max(1, self.n)
        return {
            "recall": {str(k): round(self.recall.get(k, 0.0) / n, 4) for k in self.ks},
            "tokens": {str(k): round(self.tokens.get(k, 0) / n, 1) for k in self.ks},
            "session_recall": {str(k): round(self.sessions.get(k, 0.0) / n, 4) for k in SESSION_KS},
            "n": self.n,
        }


@dataclass(slots=True)
class StrategyResult:
    ks: tuple[int, ...]
    overall: Tally = field(init=False)
    by_category: dict[int, Tally] = field(init=False)
    latencies_ms: list[float] = field(default_factory=list)
    served_by: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.overall = Tally(self.ks)
        self.by_category = {c: Tally(self.ks) for c in CATEGORIES}

    def add(self, question: Asked, ranked: Sequence[str], tokens: Sequence[int]) -> None:
        self.overall.add(ranked, tokens, question.evidence)
        self.by_category[question.category].add(ranked, tokens, question.evidence)

    def to_dict(self) -> dict[str, Any]:
        out = self.overall.means()
        return {
            "recall": out["recall"],
            "tokens": out["tokens"],
            "session_recall": out["session_recall"],
            "per_category": {str(c): t.means() for c, t in self.by_category.items()},
            "n": out["n"],
            "latency_ms": latency_summary(self.latencies_ms),
            "served_by": dict(self.served_by),
        }
