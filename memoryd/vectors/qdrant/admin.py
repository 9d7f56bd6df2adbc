"""The Qdrant tier's admin operations: test search, cleanup, health, status, progress.

A mixin of ``QdrantTier`` (which inherits it), kept apart because these read the
tier's state rather than move vectors. It declares what it uses of the tier for the
type checker only, so it never imports the tier module: imports point one way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd.models import utcnow
from memoryd.storage.base import Filter
from memoryd.vectors.qdrant.client import QdrantUnavailable, _brief
from memoryd.vectors.qdrant.schema import HEALTH_TTL_S

if TYPE_CHECKING:
    from memoryd.config.qdrant import QdrantConfig
    from memoryd.config.settings import SettingsService
    from memoryd.embedding import Embedder, EmbeddingResolution
    from memoryd.vectors.base import VectorSource
    from memoryd.vectors.qdrant.schema import Backend, Target


class TierAdmin:
    """Admin operations over the tier's own state (see ``QdrantTier``)."""

    if TYPE_CHECKING:  # provided by QdrantTier
        settings: SettingsService
        indexer: VectorSource
        running: bool
        processed: int
        deleted: int
        errors: int
        last_error: str | None
        _lock: threading.RLock
        _clock: Callable[[], float]
        _health: tuple[float, dict[str, Any]] | None
        _down: tuple[float, str] | None
        _backend: tuple[Target, Backend] | None

        def prepare(self) -> tuple[Backend | None, str]: ...
        def target(self) -> Target | None: ...
        def config(self) -> QdrantConfig: ...
        def reader(self) -> tuple[Backend | None, str | None]: ...
        def pending(self) -> int: ...
        def _active(self) -> tuple[EmbeddingResolution, Embedder] | None: ...
        def _mark_down(self, reason: str) -> None: ...
        def _not_configured(self) -> str: ...
        def _backend_for(self, target: Target) -> Backend: ...
        def _sync_state(self) -> dict[str, Any]: ...
        def _schema_present(self) -> bool: ...

    def test_search(self, query: str, top_k: int, owner: str) -> dict[str, Any]:
        """``POST /api/settings/qdrant/search``: owner-scoped, not expired, in retention."""
        from datetime import timedelta

        from memoryd.embedding import EmbeddingError

        store, reason = self.prepare()
        if store is None:
            return {"ok": False, "results": [], "error": reason}
        active = self._active()
        if active is None:
            return {"ok": False, "results": [], "error": "no embedding source ready"}
        _, embedder = active
        now = utcnow()
        days = self.settings.get().retention_days
        flt = Filter(
            owners=(owner,),
            now=now,
            created_after=now - timedelta(days=days) if days else None,
        )
        try:
            vector = self.indexer.embeddings.embed(embedder, [query])[0]
            hits = store.search_payloads(vector, top_k, flt, True)
        except EmbeddingError as exc:
            return {"ok": False, "results": [], "error": f"query embedding failed: {exc.message}"}
        except Exception as exc:
            self._mark_down(_brief(exc))
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

    def cleanup(self, retention_days: int | None = None) -> dict[str, Any]:
        # without a retention setting only expired points go (3650 days is the cutoff's cap)
        days = retention_days or self.settings.get().retention_days or 3650
        store, reason = self.prepare()
        if store is None:
            return {"ok": False, "deletedCount": 0, "retentionDays": days, "error": reason}
        try:
            deleted = store.cleanup(days)
        except Exception as exc:
            self._mark_down(_brief(exc))
            return {"ok": False, "deletedCount": 0, "retentionDays": days, "error": _brief(exc)}
        return {"ok": True, "deletedCount": deleted, "retentionDays": days}

    def status(self) -> dict[str, Any]:
        """The ``qdrant`` block of engine status."""
        target = self.target()
        cfg = self.config()
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
            "contextView": None,
            "sync": self.progress(),
        }
        if target is None:
            out["reason"] = self._not_configured()
            return out
        health = self.cached_health()
        out.update(healthy=bool(health.get("ok")), latencyMs=health.get("latencyMs"))
        out["error"] = health.get("error")
        store, reason = self.prepare() if health.get("ok") else (None, str(health.get("error")))
        if store is not None:
            out["contextView"] = self._context_view(store)
            try:
                out["pointCount"] = store.count()
            except Exception as exc:
                out["error"] = _brief(exc)
        else:
            out["reason"] = reason
            backend = self._backend
            if backend is not None and backend[1].guard:
                out["dimensionGuard"] = backend[1].guard
        serving, why = self.reader()
        out["servesReads"] = serving is not None
        if why and not out["reason"]:
            out["reason"] = why
        return out

    def _context_view(self, store: Backend) -> dict[str, Any]:
        """Whether memories' context vectors are pushed and searched here: ``indexed``
        (context indexing on), ``available`` (the collection can hold them) and why not."""
        reason = store.context_unavailable
        return {"indexed": self.indexer.context, "available": reason is None, "reason": reason}

    def health(self) -> dict[str, Any]:
        target = self.target()
        if target is None:
            return {"ok": False, "latencyMs": 0.0, "error": self._not_configured()}
        try:
            store = self._backend_for(target)
        except QdrantUnavailable as exc:
            return {"ok": False, "latencyMs": 0.0, "error": str(exc)}
        result = store.health()
        with self._lock:
            self._health = (self._clock(), result)
            if result.get("ok"):
                self._down = None
            else:
                self._down = (self._clock(), str(result.get("error")))
        return result

    def cached_health(self) -> dict[str, Any]:
        with self._lock:
            if self._health is not None and self._clock() - self._health[0] < HEALTH_TTL_S:
                return self._health[1]
        return self.health()

    def progress(self) -> dict[str, Any]:
        sync = self._sync_state()
        return {
            "running": self.running,
            "processed": self.processed,
            "deleted": self.deleted,
            "pending": self.pending() if self._schema_present() else None,
            "complete": bool(sync.get("complete")),
            "errors": self.errors,
            "lastError": self.last_error,
        }
