"""The Qdrant tier's admin operations: test search, cleanup, health and status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memoryd.models import utcnow
from memoryd.qdrant_schema import HEALTH_TTL_S
from memoryd.storage import memories as sql
from memoryd.vectors.qdrant import QdrantUnavailable, _brief

if TYPE_CHECKING:
    from memoryd.qdrant_tier import QdrantTier


def test_search(tier: QdrantTier, query: str, top_k: int, owner: str) -> dict[str, Any]:
    """``POST /api/settings/qdrant/search``: owner-scoped, not expired, in retention."""
    from datetime import timedelta

    from memoryd.embedding import EmbeddingError

    store, reason = tier.prepare()
    if store is None:
        return {"ok": False, "results": [], "error": reason}
    active = tier._active()
    if active is None:
        return {"ok": False, "results": [], "error": "no embedding source ready"}
    _, embedder = active
    now = utcnow()
    days = tier.settings.get().retention_days
    flt = sql.Filter(
        owners=(owner,),
        now=now,
        created_after=now - timedelta(days=days) if days else None,
    )
    try:
        vector = tier.indexer.embeddings.embed(embedder, [query])[0]
        hits = store.search_payloads(vector, top_k, flt, True)
    except EmbeddingError as exc:
        return {"ok": False, "results": [], "error": f"query embedding failed: {exc.message}"}
    except Exception as exc:
        tier._mark_down(_brief(exc))
        return {"ok": False, "results": [], "error": _brief(exc)}
    results = [
        {
            "id": mid,
            "score": score,
            "memoryId": mid,
            "key": data.get("key"),
            "type": data.get("type"),
            "sessionId": data.get("sessionId"),
            "content": data.get("content"),
            "payload": data,
        }
        for mid, score, data in hits
    ]
    return {"ok": True, "results": results}


def cleanup(tier: QdrantTier, retention_days: int | None = None) -> dict[str, Any]:
    # without a retention setting only expired points go (3650 days is the cutoff's cap)
    days = retention_days or tier.settings.get().retention_days or 3650
    store, reason = tier.prepare()
    if store is None:
        return {"ok": False, "deletedCount": 0, "retentionDays": days, "error": reason}
    try:
        deleted = store.cleanup(days)
    except Exception as exc:
        tier._mark_down(_brief(exc))
        return {"ok": False, "deletedCount": 0, "retentionDays": days, "error": _brief(exc)}
    return {"ok": True, "deletedCount": deleted, "retentionDays": days}


def status(tier: QdrantTier) -> dict[str, Any]:
    """The ``qdrant`` block of engine status."""
    target = tier.target()
    cfg = tier.config()
    out: dict[str, Any] = {
        "enabled": target is not None,
        "healthy": None,
        "latencyMs": None,
        "error": None,
        "pointCount": None,
        "backend": target.kind if target else None,
        "mode": ("edge" if target.kind == "qdrant-edge" else cfg.mode) if target else None,
        "collection": cfg.collection,
        "servesReads": False,
        "reason": None,
        "dimensionGuard": None,
        "sync": tier.progress(),
    }
    if target is None:
        out["reason"] = tier._not_configured()
        return out
    health = cached_health(tier)
    out.update(healthy=bool(health.get("ok")), latencyMs=health.get("latencyMs"))
    out["error"] = health.get("error")
    store, reason = tier.prepare() if health.get("ok") else (None, str(health.get("error")))
    if store is not None:
        try:
            out["pointCount"] = store.count()
        except Exception as exc:
            out["error"] = _brief(exc)
    else:
        out["reason"] = reason
        backend = tier._backend
        if backend is not None and backend[1].guard:
            out["dimensionGuard"] = backend[1].guard
    serving, why = tier.reader()
    out["servesReads"] = serving is not None
    if why and not out["reason"]:
        out["reason"] = why
    return out


def health(tier: QdrantTier) -> dict[str, Any]:
    target = tier.target()
    if target is None:
        return {"ok": False, "latencyMs": 0.0, "error": tier._not_configured()}
    try:
        store = tier._backend_for(target)
    except QdrantUnavailable as exc:
        return {"ok": False, "latencyMs": 0.0, "error": str(exc)}
    result = store.health()
    with tier._lock:
        tier._health = (tier._clock(), result)
        if result.get("ok"):
            tier._down = None
        else:
            tier._down = (tier._clock(), str(result.get("error")))
    return result


def cached_health(tier: QdrantTier) -> dict[str, Any]:
    with tier._lock:
        if tier._health is not None and tier._clock() - tier._health[0] < HEALTH_TTL_S:
            return tier._health[1]
    return health(tier)


def progress(tier: QdrantTier) -> dict[str, Any]:
    sync = tier._sync_state()
    return {
        "running": tier.running,
        "processed": tier.processed,
        "deleted": tier.deleted,
        "pending": tier.pending() if tier._schema_present() else None,
        "complete": bool(sync.get("complete")),
        "errors": tier.errors,
        "lastError": tier.last_error,
    }
