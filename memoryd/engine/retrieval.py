"""Retrieval: strategies, the degradation ladder, abstention and the budget walk.

Every path filters by owner first, then session (session scope), expiry and
retention, inside SQL. Ladder for ``semantic``/``hybrid``: Qdrant (when
``vectorStore`` names it and it can serve; its hits re-checked against the SQL filter)
-> sqlite-vec KNN (for hybrid, the vector leg's ranks fused with FTS5 ranks by RRF)
-> FTS5 -> keyword scoring over recent rows. Each step down records a
``fallbackReason``; nothing here raises for a query's text, and a failing embedder only
costs the vector tier.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, TypedDict, Unpack

import numpy as np

from memoryd.cache import TTLCache
from memoryd.config import EngineConfig
from memoryd.config.settings import MemorySettings
from memoryd.config.upstreams import Provider
from memoryd.core import subjects
from memoryd.core.fts_query import query_tokens
from memoryd.core.fusion import ContextWeights, apply_context, apply_subjects, score_fuse
from memoryd.core.profile import INSTRUCTIONS, PROFILE
from memoryd.core.query import query_window
from memoryd.core.relevance import Dropped, distinct, relevant
from memoryd.core.scoring import budget_walk, passes_min_score, relevance_score, rrf_fuse
from memoryd.core.temporal import DateRange, mentioned_dates, overlaps
from memoryd.engine import asked, attribute_model, rerank
from memoryd.errors import ValidationError
from memoryd.models import GLOBAL_OWNER, Hit, Memory, Resolution, Scope, Strategy, utcnow
from memoryd.storage.base import Filter, Reader, Store
from memoryd.vectors.base import still_passing

if TYPE_CHECKING:
    from memoryd.vectors.base import ExternalTier
    from memoryd.vectors.indexer import Indexer

#: How many recent rows the keyword-scoring fallback looks at.
KEYWORD_POOL = 200
MAX_LIMIT = 100

STRATEGY_ALIASES: dict[str, Strategy] = {
    "exact": "exact", "recent": "exact", "semantic": "semantic", "hybrid": "hybrid"
}  # fmt: skip


def parse_strategy(value: str) -> Strategy:
    try:
        return STRATEGY_ALIASES[value]
    except KeyError:
        raise ValidationError(
            f"strategy: must be one of recent, exact, semantic, hybrid (got {value!r})",
            details=[{"field": "strategy", "message": "unknown strategy"}],
        ) from None


class RetrievalOptions(TypedDict, total=False):
    """What a caller may choose for one retrieval (the rest comes from settings); the
    same keywords ``MemoryEngine.retrieve`` and ``preview`` take."""

    strategy: str | None
    max_tokens: int | None
    scope: str | None
    session_id: str | None
    limit: int | None
    user_id: str | None


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
    user_id: str | None = None  # an end user of the key: theirs + the key's shared ones
    query_cut: bool = False  # the query is the end of a longer turn (core.query)


#: The known-subjects cache (per owner, end user and session).
SUBJECTS_CACHE_SIZE = 1024
SUBJECTS_TTL_S = 10.0


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, int(value)))


#: A hit whose similarity to the fast encoder's vector is this close to the floor it
#: must reach: the model embeds the question again and the search runs once more.
BORDER = 0.05


def _borderline(ranked: list[Hit], floor: float | None) -> bool:
    """Whether a hit's keep-or-drop call could go the other way with the model's
    vector: its similarity within ``BORDER`` of what it must reach (the floor, or half
    of it with shared words). Hits something else already chose (an asked attribute's
    read) do not count."""
    if not floor:
        return False
    for hit in ranked:
        if hit.vec_score is None or hit.reason:
            continue
        need = floor / 2 if hit.fts_score else floor
        if abs(hit.vec_score - need) < BORDER:
            return True
    return False


class Retriever:
    def __init__(
        self,
        store: Store,
        config: EngineConfig,
        token_counter: Callable[[str], int],
        indexer: Indexer | None = None,
        providers: Callable[[], Mapping[str, Provider]] | None = None,
        qdrant: ExternalTier | None = None,
    ) -> None:
        self.providers = providers or dict
        self.qdrant = qdrant
        self.store = store
        self.config = config
        self.tokens = token_counter
        self.indexer = indexer
        self.questions = asked.shared_questions()  # what a question asks about the user
        # Who each owner's memories are about changes rarely; listing it is a query per
        # retrieval otherwise (a person new to the owner is known within the TTL).
        self._subjects: TTLCache[tuple[object, ...], list[str]] = TTLCache(
            SUBJECTS_CACHE_SIZE, SUBJECTS_TTL_S
        )

    def resolve(
        self,
        settings: MemorySettings,
        *,
        owner: str | None,
        query: str | None,
        **options: Unpack[RetrievalOptions],
    ) -> Request:
        strategy, max_tokens = options.get("strategy"), options.get("max_tokens")
        scope, session_id = options.get("scope"), options.get("session_id")
        limit, user_id = options.get("limit"), options.get("user_id")
        chosen = parse_strategy(strategy or settings.retrieval_strategy)
        scope_value = scope or settings.scope
        if scope_value not in ("session", "apiKey", "global"):
            raise ValidationError(f"scope: must be session, apiKey or global (got {scope_value!r})")
        budget = settings.max_tokens if max_tokens is None else max_tokens
        text, cut = query_window((query or "").strip())
        return Request(
            owner=owner,
            query=text,
            query_cut=cut,
            strategy=chosen,
            max_tokens=_clamp(budget, 1, 16000),
            scope=scope_value,  # type: ignore[arg-type]
            session_id=session_id or None,
            # the token budget, not a fixed count, limits what is injected
            limit=_clamp(limit if limit is not None else MAX_LIMIT, 1, MAX_LIMIT),
            user_id=user_id,
        )

    def forget_subjects(self) -> None:
        """Drop the known-subjects cache (an erasure took names with it)."""
        self._subjects.clear()

    def forget_texts(self) -> None:
        """Drop the recent texts the embedders kept, and their cached vectors (an
        erasure: a question or a message may name the person erased)."""
        if self.indexer is not None:
            self.indexer.embeddings.forget_texts()
        attribute_model.forget_texts()

    def scope_filter(self, req: Request, settings: MemorySettings) -> Filter:
        now = utcnow()
        owners: tuple[str, ...] | None
        if req.owner is None:
            owners = None
        elif req.scope == "global" and req.owner != GLOBAL_OWNER:
            owners = (req.owner, GLOBAL_OWNER)
        else:
            owners = (req.owner,)
        days = settings.retention_days
        return Filter(
            owners=owners,
            now=now,
            # session scope without a session id sees the session-less memories only
            session_id=(req.session_id or "") if req.scope == "session" else None,
            created_after=now - timedelta(days=days) if days else None,
            user_id=req.user_id,
            # a named end user: the key's shared rows only when the key shares them,
            # and never the instructions someone gave with no end user
            shared=req.owner is None or settings.shares(req.owner),
            unshared=INSTRUCTIONS,
        )

    def hidden(self, req: Request, settings: MemorySettings) -> dict[str, int]:
        """How many of the owner's memories expiry and retention keep out of this
        retrieval (previews say so, instead of leaving an old memory silently missing)."""
        flt = self.scope_filter(req, settings)
        return self.store.read().hidden_counts(flt)

    def run(self, req: Request, settings: MemorySettings) -> tuple[list[Hit], Resolution]:
        """Ranked, filtered, budgeted hits plus how they were found."""
        hits, resolution, _ = self.explain(req, settings, reasons=False)
        return hits, resolution

    def explain(
        self, req: Request, settings: MemorySettings, *, reasons: bool = True
    ) -> tuple[list[Hit], Resolution, list[Dropped]]:
        """``run``, plus every candidate that was not injected and why (previews; the
        kept ones' reasons only with ``reasons``: a request has no reader for them)."""
        resolution = Resolution(strategy_used=req.strategy, query_truncated=req.query_cut)
        flt = self.scope_filter(req, settings)
        query_vector = None
        dense = req.query
        names = resolution.subjects = self._named(req, flt)
        if req.strategy != "exact":
            # The people a query names stay in its keyword leg; the dense leg would
            # match the name instead of what is asked about them.
            dense = subjects.without(req.query, names) if names else req.query
            query_vector = self._prepare_vector(req, resolution, dense)
        ranked, older, question, floor = self._search(
            req, settings, flt, query_vector, names, resolution
        )
        if resolution.query_encoder == "fast" and _borderline(ranked, floor):
            # The encoder's similarities are near the floor: the keep-or-drop calls are
            # the model's to make (the encoder's vector would let unrelated ones in).
            assert self.indexer is not None
            active = self.indexer.ready()
            if active is not None:
                from memoryd.embedding import EmbeddingError

                try:
                    query_vector = self.indexer.embeddings.embed(active[1], [dense])[0]
                except EmbeddingError:
                    query_vector = None
                if query_vector is not None:
                    resolution.query_encoder = "model"
                    ranked, older, question, floor = self._search(
                        req, settings, flt, query_vector, names, resolution
                    )
        ranked, dropped = distinct(*relevant(ranked, floor, question.attributes, reasons))
        dropped += older
        searched = [h for h in ranked if h.tier != "asked"]  # what was asked passes anyway
        if searched and not passes_min_score(searched, settings.min_score):
            resolution.fallback_reason = (
                f"best hit below minScore {settings.min_score}: nothing injected"
            )
            reason = f"best hit below minScore {settings.min_score}"
            return [], resolution, dropped + [Dropped(h, reason) for h in ranked]
        chosen = budget_walk(ranked, req.max_tokens, lambda h: h.tokens, limit=req.limit)
        taken = {h.memory.id for h in chosen}
        over = [Dropped(h, "over the token budget or the limit") for h in ranked]
        return chosen, resolution, dropped + [d for d in over if d.hit.memory.id not in taken]

    def _search(
        self,
        req: Request,
        settings: MemorySettings,
        flt: Filter,
        query_vector: np.ndarray | None,
        names: Sequence[str],
        resolution: Resolution,
    ) -> tuple[list[Hit], list[Dropped], asked.Asked, float | None]:
        qdrant_knn = None
        recent = req.strategy == "exact"  # the newest memories: no question is asked
        question = asked.ask(self.questions, "" if recent else req.query, query_vector, resolution)
        qdrant_context: list[tuple[str, float]] = []
        if query_vector is not None:  # network I/O stays outside the read snapshot
            qdrant_knn = self._qdrant(query_vector, flt, resolution)
            if qdrant_knn is not None:
                qdrant_context = self._qdrant_context(query_vector, flt)
        with self.store.snapshot() as reader:
            if req.strategy == "exact":
                ranked = self._recent(reader, flt, req)
            elif query_vector is not None:
                ranked = self._vector(
                    reader, flt, req, query_vector, resolution, qdrant_knn, names, qdrant_context
                )
            else:
                ranked = self._keyword(reader, flt, req, resolution)
            carried = PROFILE if settings.profile_max_tokens > 0 else ()  # the profile's
            found = asked.read(reader, flt, question, self.tokens, carried)
        if settings.rerank_enabled and settings.rerank_provider_model and req.query and ranked:
            ranked = rerank.apply(ranked, req.query, self.providers(), settings, resolution)
        ranked, older = asked.lead(found, ranked)
        floor = asked.floor(settings.relevance_floor, question, found)
        return ranked, older, question, floor

    # -- vector tier -------------------------------------------------------------------

    def _named(self, req: Request, flt: Filter) -> list[str]:
        """The owner's known subjects the query names (none for recency or without a
        query, or with the prior off)."""
        if req.strategy == "exact" or not req.query or self.config.subject_weight <= 0:
            return []
        key = (flt.owners, flt.user_id, flt.session_id)
        found, known = self._subjects.lookup(key)
        if not found or known is None:
            known = self.store.read().known_subjects(flt)
            self._subjects.set(key, known)
        return subjects.named(req.query, known) if known else []

    def _prepare_vector(
        self, req: Request, resolution: Resolution, text: str | None = None
    ) -> np.ndarray | None:
        """Embed the query (after a bounded backfill of the owner's pending memories);
        None, with the reason recorded, whenever the vector tier cannot serve."""
        if self.indexer is None or self.indexer.store is None:  # not installed, or off
            why = self.store.capabilities.vec_reason if self.indexer else "not installed"
            resolution.fallback_reason = f"sqlite-vec not available ({why}): keyword search"
            return None
        if not req.query:
            return None
        active = self.indexer.ready()
        if active is None:
            status = self.indexer.embeddings.resolution()
            resolution.fallback_reason = f"no embedding source available ({status.reason})"
            return None
        from memoryd.embedding import EmbeddingError

        embedding, embedder = active
        resolution.embedding_source = embedding.source
        resolution.embedding_model = embedding.model
        resolution.vector_store = self._in_store()
        try:
            if req.owner is not None:
                self.indexer.backfill_owner(req.owner)
            text = text or req.query
            vector, fast = self.indexer.embeddings.embed_query(embedder, text)
            resolution.query_encoder = "fast" if fast else "model"
            if fast and asked.may_ask(self.questions, vector):
                # Maybe about the user: which attribute it asks is read from the
                # model's own vector (the encoder's is too coarse for that).
                vector = self.indexer.embeddings.embed(embedder, [text])[0]
                resolution.query_encoder = "model"
        except EmbeddingError as exc:
            resolution.fallback_reason = f"query embedding failed ({exc.reason}): {exc.message}"
            return None
        return vector

    def _in_store(self) -> str:
        """The primary store's own vector index (sqlite-vec or pgvector)."""
        store = self.indexer.store if self.indexer is not None else None
        return store.name if store is not None else "sqlite-vec"

    def _qdrant(
        self, vector: np.ndarray, flt: Filter, resolution: Resolution
    ) -> list[tuple[str, float]] | None:
        """Tier 2 first when ``vectorStore`` names it: its KNN, or None (with the reason)
        so that sqlite-vec answers instead."""
        tier = self.qdrant
        if tier is None:
            return None
        found = tier.search(vector, self.config.vec_top_k, flt)
        if found.hits is None:
            if found.reason:
                resolution.fallback_reason = f"{found.reason}: {self._in_store()}"
            return None
        if not found.hits:
            resolution.fallback_reason = f"Qdrant returned no results: {self._in_store()}"
            return None
        resolution.vector_store = found.backend or "qdrant"
        return found.hits

    def _vector(
        self,
        reader: Reader,
        flt: Filter,
        req: Request,
        vector: np.ndarray,
        resolution: Resolution,
        qdrant_knn: list[tuple[str, float]] | None = None,
        names: Sequence[str] = (),
        qdrant_context: Sequence[tuple[str, float]] = (),
    ) -> list[Hit]:
        assert self.indexer is not None
        assert self.indexer.store is not None
        k = self.config.vec_top_k
        tier = "vector"
        if qdrant_knn is not None:
            knn = still_passing(reader, qdrant_knn, flt)
            tier = "qdrant"
            if 2 * len(knn) < len(qdrant_knn):  # other end users' or history: see below
                resolution.vector_store = self._in_store()
                resolution.fallback_reason = f"Qdrant hits mostly filtered: {self._in_store()}"
                qdrant_knn, tier = None, "vector"
        if qdrant_knn is None:
            try:
                knn = self.indexer.store.search(vector, k, flt)  # inside this snapshot
            except Exception as exc:  # a broken vector store costs only its tier
                resolution.fallback_reason = f"vector search failed: {exc}"
                resolution.vector_store = "none"
                return self._keyword(reader, flt, req, resolution, first_reason=None)
        if req.strategy == "semantic":
            found = reader.get_many([mid for mid, _ in knn])
            hits = [
                self._hit(found[mid], sim, tier, vec_score=sim) for mid, sim in knn if mid in found
            ]
            if hits:
                return hits
            resolution.fallback_reason = "no vectors for these memories yet: keyword search"
            return self._keyword(reader, flt, req, resolution, first_reason=None)
        # The second view (each memory with its earlier neighbours) as a third leg,
        # from the tier that served the first.
        in_context = (
            self._context_knn(vector, k, flt)
            if tier == "vector"
            else still_passing(reader, qdrant_context, flt)
        )
        similarity = dict(in_context) | dict(knn)
        fts = reader.keyword_search(req.query, flt, k, self.config.context_field_weight)
        bm25 = {h.memory.id: h.relevance for h in fts}
        fused = self._fuse([(h.memory.id, h.relevance) for h in fts], knn, in_context)
        if not fused:
            resolution.fallback_reason = "no keyword or vector match: keyword scoring"
            return self._keyword_scored(reader, flt, req, tier="fts5")
        found = {h.memory.id: h.memory for h in fts} | reader.get_many(
            [mid for mid, _ in fused if mid not in bm25]
        )
        fused = self._in_context(
            reader, [(mid, s) for mid, s in fused if mid in found], found, req, names
        )
        resolution.strategy_used = "hybrid"
        resolution.fusion = self.config.fusion
        return [
            self._hit(
                found[mid],
                score,
                "hybrid" if tier == "vector" else tier,
                vec_score=similarity.get(mid),
                fts_score=bm25.get(mid),
            )
            for mid, score in fused  # every id is in found: _in_context got only those
        ]

    def _context_knn(self, vector: np.ndarray, k: int, flt: Filter) -> list[tuple[str, float]]:
        store = self.indexer.store if self.indexer is not None else None
        if self.config.context_vector_weight <= 0 or store is None:
            return []
        return store.search(vector, k, flt, view="context")

    def _qdrant_context(self, vector: np.ndarray, flt: Filter) -> list[tuple[str, float]]:
        """Qdrant's KNN of the context view, when Qdrant served the first (none when its
        collection has no context vector): asked before the snapshot, as the first."""
        if self.config.context_vector_weight <= 0 or self.qdrant is None:
            return []
        found = self.qdrant.search(vector, self.config.vec_top_k, flt, view="context")
        return found.hits or []

    def _fuse(
        self,
        fts: list[tuple[str, float]],
        knn: list[tuple[str, float]],
        in_context: list[tuple[str, float]],
    ) -> list[tuple[str, float]]:
        config = self.config
        legs = [fts, knn, in_context]
        weights = [config.rrf_fts_weight, config.rrf_vector_weight, config.context_vector_weight]
        if config.fusion == "rrf":
            lists = [[mid for mid, _ in leg] for leg in legs if leg]
            kept = [w for leg, w in zip(legs, weights, strict=True) if leg]
            return rrf_fuse(lists, k=config.rrf_k, weights=kept)
        return score_fuse(legs, weights, standardise=config.fusion == "zscore")

    def _in_context(
        self,
        reader: Reader,
        fused: list[tuple[str, float]],
        found: Mapping[str, Memory],
        req: Request,
        names: Sequence[str] = (),
    ) -> list[tuple[str, float]]:
        """The hybrid ranking raised by the context priors, the subject prior and the
        query's dates (``core.fusion``, ``core.temporal``)."""
        weights = ContextWeights(self.config.neighbour_weight, self.config.session_weight)
        if weights.active and len(fused) > 1:
            ids = [mid for mid, _ in fused]
            sessions = {mid: f"{found[mid].api_key_id}\x00{found[mid].session_id}" for mid in ids}
            fused = apply_context(fused, reader.neighbours(ids), sessions, weights)
        if names:
            people = set(names)
            about = {mid for mid, _ in fused if people & {s.lower() for s in found[mid].subjects}}
            fused = apply_subjects(fused, about, self.config.subject_weight)
        boost = self.config.date_boost
        wanted = mentioned_dates(req.query) if boost > 0 else []
        if not wanted:
            return fused
        position = {mid: i for i, (mid, _) in enumerate(fused)}
        dated = [
            (mid, score + boost if self._on_dates(found[mid], wanted) else score)
            for mid, score in fused
        ]
        return sorted(dated, key=lambda pair: (-pair[1], position[pair[0]]))

    @staticmethod
    def _on_dates(memory: Memory, wanted: list[DateRange]) -> bool:
        stored = memory.created_at.date()
        return overlaps(wanted, [*mentioned_dates(memory.content), (stored, stored)])

    # -- tiers -------------------------------------------------------------------------

    def _hit(self, memory: Memory, score: float, tier: str, **extra: float | None) -> Hit:
        return Hit(memory, score, tier, self.tokens(memory.content), **extra)  # type: ignore[arg-type]

    def _recent(self, reader: Reader, flt: Filter, req: Request) -> list[Hit]:
        """Newest first, whatever the query says: what the gateway sends under the
        ``recent`` strategy, so a preview with a query shows the same."""
        rows = reader.recent(flt, req.limit)  # the newest, up to MAX_LIMIT candidates
        return [self._hit(m, 0.0, "recent") for m in rows]

    def _keyword_scored(self, reader: Reader, flt: Filter, req: Request, tier: str) -> list[Hit]:
        # The last rung of a search that found nothing: substrings of "a" or "in"
        # matched nearly every memory. Only the words a search would use count.
        query = " ".join(t for t in query_tokens(req.query) if len(t) > 2)
        if not query:
            return []
        scored = []
        for memory in reader.recent(flt, KEYWORD_POOL):
            score = relevance_score(memory.content, memory.key, memory.metadata, query)
            if score > 0:
                scored.append((score, memory))
        # Stable sort on score keeps the newest-first order among equal scores.
        scored.sort(key=lambda pair: pair[0], reverse=True)
        return [self._hit(m, float(s), tier) for s, m in scored]

    def _keyword(
        self,
        reader: Reader,
        flt: Filter,
        req: Request,
        resolution: Resolution,
        first_reason: str | None = "no embedding source available: keyword search",
    ) -> list[Hit]:
        reasons = [r for r in (resolution.fallback_reason or first_reason,) if r]
        resolution.strategy_used = "keyword"
        if not req.query:
            resolution.fallback_reason = "empty query: most recent memories"
            resolution.strategy_used = "exact"
            return self._recent(reader, flt, req)
        if not self.store.capabilities.fts5:
            reasons.append(self.store.capabilities.fts5_reason)
        else:
            found = reader.keyword_search(
                req.query, flt, self.config.vec_top_k, self.config.context_field_weight
            )
            if found:
                resolution.fallback_reason = "; ".join(reasons)
                return [
                    self._hit(h.memory, h.relevance, "fts5", fts_score=h.relevance) for h in found
                ]
            reasons.append("FTS5 found no match: keyword scoring of recent memories")
        resolution.fallback_reason = "; ".join(reasons)
        return self._keyword_scored(reader, flt, req, tier="fts5")
