"""Retrieval: strategies, the degradation ladder, abstention and the budget walk.

Every path filters by owner first, then session (session scope), expiry and
retention, inside SQL. Ladder for ``semantic``/``hybrid``: vector tiers (added by the
embeddings issue) -> FTS5 -> keyword scoring over recent rows. Each step down records
a ``fallbackReason``; nothing here raises for a query's text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from memoryd.config import EngineConfig
from memoryd.core.fts_query import build_fts_query
from memoryd.core.scoring import budget_walk, passes_min_score, relevance_score
from memoryd.errors import ValidationError
from memoryd.models import GLOBAL_OWNER, Hit, Memory, Resolution, Scope, Strategy, utcnow
from memoryd.settings import MemorySettings
from memoryd.storage import memories as sql
from memoryd.storage.database import Database

#: How many recent rows the keyword-scoring fallback looks at.
KEYWORD_POOL = 200
MAX_LIMIT = 100

STRATEGY_ALIASES: dict[str, Strategy] = {
    "exact": "exact",
    "recent": "exact",
    "semantic": "semantic",
    "hybrid": "hybrid",
}


def parse_strategy(value: str) -> Strategy:
    try:
        return STRATEGY_ALIASES[value]
    except KeyError:
        raise ValidationError(
            f"strategy: must be one of recent, exact, semantic, hybrid (got {value!r})",
            details=[{"field": "strategy", "message": "unknown strategy"}],
        ) from None


@dataclass(frozen=True, slots=True)
class Request:
    """One retrieval, fully resolved against settings."""

    owner: str | None  # None only for admin previews across every owner
    query: str
    strategy: Strategy
    max_tokens: int
    scope: Scope
    session_id: str | None
    limit: int


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, int(value)))


class Retriever:
    def __init__(
        self, db: Database, config: EngineConfig, token_counter: Callable[[str], int]
    ) -> None:
        self.db = db
        self.config = config
        self.tokens = token_counter

    def resolve(
        self,
        settings: MemorySettings,
        *,
        owner: str | None,
        query: str | None,
        strategy: str | None,
        max_tokens: int | None,
        scope: str | None,
        session_id: str | None,
        limit: int | None,
    ) -> Request:
        chosen = parse_strategy(strategy or settings.retrieval_strategy)
        scope_value = scope or settings.scope
        if scope_value not in ("session", "apiKey", "global"):
            raise ValidationError(f"scope: must be session, apiKey or global (got {scope_value!r})")
        budget = settings.max_tokens if max_tokens is None else max_tokens
        return Request(
            owner=owner,
            query=(query or "").strip(),
            strategy=chosen,
            max_tokens=_clamp(budget, 1, 16000),
            scope=scope_value,  # type: ignore[arg-type]
            session_id=session_id or None,
            limit=_clamp(limit if limit is not None else self.config.vec_top_k, 1, MAX_LIMIT),
        )

    def _filter(self, req: Request, settings: MemorySettings) -> sql.Filter:
        now = utcnow()
        owners: tuple[str, ...] | None
        if req.owner is None:
            owners = None
        elif req.scope == "global" and req.owner != GLOBAL_OWNER:
            owners = (req.owner, GLOBAL_OWNER)
        else:
            owners = (req.owner,)
        return sql.Filter(
            owners=owners,
            now=now,
            session_id=req.session_id if req.scope == "session" else None,
            created_after=now - timedelta(days=settings.retention_days),
        )

    def run(self, req: Request, settings: MemorySettings) -> tuple[list[Hit], Resolution]:
        """Ranked, filtered, budgeted hits plus how they were found."""
        resolution = Resolution(strategy_used=req.strategy)
        flt = self._filter(req, settings)
        with self.db.snapshot() as conn:
            if req.strategy == "exact":
                ranked = self._recent(conn, flt, req)
            else:
                ranked = self._keyword(conn, flt, req, resolution)
        if not passes_min_score(ranked, settings.min_score):
            resolution.fallback_reason = (
                f"best hit below minScore {settings.min_score}: nothing injected"
            )
            return [], resolution
        chosen = budget_walk(ranked, req.max_tokens, lambda h: h.tokens, limit=req.limit)
        return chosen, resolution

    # -- tiers -------------------------------------------------------------------------

    def _hit(self, memory: Memory, score: float, tier: str, **extra: float | None) -> Hit:
        return Hit(memory, score, tier, self.tokens(memory.content), **extra)  # type: ignore[arg-type]

    def _recent(self, conn: object, flt: sql.Filter, req: Request) -> list[Hit]:
        """Newest first; with a query, ranked by keyword relevance (zero scores dropped)."""
        if not req.query:
            rows = sql.recent(conn, flt, max(req.limit, 100))
            return [self._hit(m, 0.0, "recent") for m in rows]
        return self._keyword_scored(conn, flt, req, tier="recent")

    def _keyword_scored(self, conn: object, flt: sql.Filter, req: Request, tier: str) -> list[Hit]:
        scored = []
        for memory in sql.recent(conn, flt, KEYWORD_POOL):
            score = relevance_score(memory.content, memory.key, memory.metadata, req.query)
            if score > 0:
                scored.append((score, memory))
        # Stable sort on score keeps the newest-first order among equal scores.
        scored.sort(key=lambda pair: pair[0], reverse=True)
        return [self._hit(m, float(s), tier) for s, m in scored]

    def _keyword(
        self, conn: object, flt: sql.Filter, req: Request, resolution: Resolution
    ) -> list[Hit]:
        reasons = ["no embedding source available: keyword search"]
        resolution.strategy_used = "keyword"
        if not req.query:
            resolution.fallback_reason = "empty query: most recent memories"
            resolution.strategy_used = "exact"
            return self._recent(conn, flt, req)
        if not self.db.capabilities.fts5:
            reasons.append(self.db.capabilities.fts5_reason)
        else:
            match = build_fts_query(req.query)
            if match is not None:
                found = sql.fts_search(conn, match, flt, self.config.vec_top_k)
                if found:
                    resolution.fallback_reason = "; ".join(reasons)
                    return [self._hit(m, s, "fts5", fts_score=s) for m, s in found]
            reasons.append("FTS5 found no match: keyword scoring of recent memories")
        resolution.fallback_reason = "; ".join(reasons)
        return self._keyword_scored(conn, flt, req, tier="fts5")
