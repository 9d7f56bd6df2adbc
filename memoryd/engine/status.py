"""Engine status (``GET /api/memory/engine-status``): what each tier can do right now, and why."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.engine.attribute_model import minilm_present
from memoryd.engine.extraction_jobs import ExtractionJobs
from memoryd.engine.llm_extraction import llm_status
from memoryd.errors import UnavailableError
from memoryd.vectors.indexer import no_vector_store

if TYPE_CHECKING:
    from memoryd.cache import TTLCache
    from memoryd.config.settings import SettingsService
    from memoryd.embedding.service import EmbeddingService
    from memoryd.engine.background import BackgroundWorker
    from memoryd.engine.retrieval import Retriever
    from memoryd.models import Memory
    from memoryd.storage.base import Store
    from memoryd.vectors.base import ExternalTier
    from memoryd.vectors.indexer import Indexer


class StatusHost(Protocol):
    """The parts status reads (``MemoryEngine`` has them), typed structurally so this
    module never imports the engine that calls it."""

    store: Store
    settings: SettingsService
    embeddings: EmbeddingService | None
    indexer: Indexer | None
    qdrant: ExternalTier
    cache: TTLCache[str, Memory | None]
    background: BackgroundWorker
    extraction_stats: dict[str, int]
    extraction: ExtractionJobs
    retriever: Retriever


def _questions(engine: StatusHost) -> dict[str, Any]:
    """The question classifier: it reads MiniLM query vectors, so it serves
    with the MiniLM embedder (free) or a remote one (MiniLM embeds the question too);
    otherwise questions about the user are answered by search alone."""
    model = engine.retriever.questions
    if not model.ready():
        return {"available": False, "reason": model.status}
    source = engine.embeddings.resolution().source if engine.embeddings is not None else None
    if source not in ("transformers", "remote") or (source == "remote" and not minilm_present()):
        return {
            "available": False,
            "reason": f"needs MiniLM query vectors (embedding source {source or 'none'}): "
            "search alone",
        }
    return {"available": True, "reason": model.status}


def _classifier(engine: StatusHost) -> dict[str, Any]:
    """The attribute classifier backing the rules: MiniLM and its weights
    load on the first extraction that needs them."""
    model = engine.extraction.attributes
    if model is None:
        return {"available": False, "reason": "off: the rules alone"}
    return {"available": model.status.startswith("ready"), "reason": model.status}


def _tagger(engine: StatusHost) -> dict[str, Any]:
    """The value tagger beside the classifier (same MiniLM, its own weights)."""
    model = engine.extraction.attributes
    if model is None:
        return {"available": False, "reason": "off: the rules alone"}
    status = model.tagger.status
    return {"available": status == "ready", "reason": status}


def _steering(engine: StatusHost) -> dict[str, Any]:
    """The steering reader beside the guard's patterns (same MiniLM, its own weights)."""
    model = engine.extraction.attributes
    if model is None:
        return {"available": False, "reason": "off: the guard's patterns alone"}
    status = model.steering.status
    return {"available": status == "ready", "reason": status}


def _embedding(engine: StatusHost) -> dict[str, Any]:
    if engine.embeddings is None:
        return {
            "source": None,
            "model": None,
            "dimensions": None,
            "available": False,
            "reason": "auto: no embedding source available",
            "cacheStats": {"hits": 0, "misses": 0, "size": 0},
        }
    return engine.embeddings.status()


def _vector_store(engine: StatusHost, pending: int) -> dict[str, Any]:
    if engine.indexer is not None:
        return engine.indexer.status(pending)
    return no_vector_store(pending, engine.store.capabilities.vec_reason)


def _qdrant(engine: StatusHost) -> dict[str, Any]:
    """Tier 2: enabled, healthy, latency, error, point count, and why it does not serve
    (dimension guard, backfill in progress, unreachable) with its sync progress."""
    tier = engine.qdrant
    try:
        return tier.status()
    except Exception as exc:  # status must render whatever Qdrant does
        return {
            "enabled": True,
            "healthy": False,
            "latencyMs": None,
            "error": str(exc)[:300],
            "pointCount": None,
        }


def _resident_keywords(engine: StatusHost) -> dict[str, Any] | None:
    """The in-memory keyword copies of large owners (SQLite only)."""
    keywords = getattr(engine.store, "keywords", None)
    stats = getattr(keywords, "stats", None)
    return stats() if callable(stats) else None


def engine_status(engine: StatusHost) -> dict[str, Any]:
    """Every tier's state and why. With the store down (PostgreSQL restarting) it is
    what can be said without it: the storage fault and this process (it was a 503,
    where an operator looks first)."""
    try:
        return _status(engine)
    except UnavailableError as exc:
        storage = engine.store.storage_status() | {"available": False, "reason": exc.message}
        return {
            "storage": storage,
            "extraction": dict(engine.extraction_stats) | {"pending": engine.background.pending},
            "readCache": engine.cache.stats(),
            "process": {"pid": os.getpid()},
        }


def _status(engine: StatusHost) -> dict[str, Any]:
    caps = engine.store.capabilities
    settings = engine.settings.get()
    pending = engine.store.read().reindex_pending()
    reindex = (
        engine.indexer.progress()
        if engine.indexer is not None
        else {"running": False, "processed": 0, "pending": pending}
    )
    rerank_ready = bool(settings.rerank_enabled and settings.rerank_provider_model)
    return {
        "storage": engine.store.storage_status(),
        "keyword": {
            "available": caps.fts5,
            "backend": caps.keyword_backend,
            "reason": caps.fts5_reason,
            "resident": _resident_keywords(engine),
        },
        "embedding": _embedding(engine),
        "vectorStore": _vector_store(engine, pending),
        "qdrant": _qdrant(engine),
        "rerank": {
            "enabled": settings.rerank_enabled,
            "available": rerank_ready,
            "reason": (
                f"rerank active: {settings.rerank_provider_model}"
                if rerank_ready
                else "rerank enabled but provider not configured"
                if settings.rerank_enabled
                else "rerank disabled"
            ),
        },
        "reindex": reindex,
        "extraction": {"guarded": 0}  # messages not kept: they steer the assistant
        | dict(engine.extraction_stats)
        | {
            "pending": engine.background.pending,
            "llm": llm_status(engine.extraction.clients),
            "classifier": _classifier(engine),
            "tagger": _tagger(engine),
            "steering": _steering(engine),
        },
        "questions": _questions(engine),
        "readCache": engine.cache.stats(),
        # Which process answered: behind a load balancer or ``serve --workers`` each
        # keeps its own caches, queues and limits.
        "process": {"pid": os.getpid()},
    }
