"""The Qdrant tier at run time: which backend, keeping it in step, serving reads.

``vectorStore = "qdrant-edge"`` selects the embedded Qdrant Edge shard under
``<data_dir>/qdrant-edge``; otherwise enabled Qdrant settings select a qdrant-client
store (server ``host``/``port`` or local ``path``). Writes go to the selected backend;
reads use it only when ``vectorStore`` names it, it is healthy and its first backfill
finished (until then sqlite-vec answers). ``qdrant_pending`` (triggers add a row per
payload change and bump ``gen``) and ``qdrant_tombstones`` are the durable to-do
list; the worker pushes rows whose vector is ready (read from ``vec_memories``, and
from ``vec_context`` with context indexing on: SQLite is written first; both vectors go
in one point, ``views``) and clears a row only if its ``gen`` did not move. Failures
stay pending and are retried with backoff; a sync identity change (context indexing
switched included) queues everything again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.config import qdrant as qdrant_config
from memoryd.config.qdrant import QdrantConfig
from memoryd.config.settings import SettingsService
from memoryd.errors import UnavailableError, ValidationError
from memoryd.models import utcnow
from memoryd.storage.base import Filter, OutboxRow, Store
from memoryd.vectors.base import TierSearch, VectorItem
from memoryd.vectors.qdrant import views
from memoryd.vectors.qdrant.admin import TierAdmin
from memoryd.vectors.qdrant.client import QdrantUnavailable, _brief

if TYPE_CHECKING:
    from memoryd.embedding import Embedder, EmbeddingResolution
    from memoryd.vectors.base import VectorSource

from memoryd.vectors.qdrant.schema import (
    BATCH,
    COOLDOWN_S,
    MAX_BACKOFF_S,
    SYNC_KEY,
    TICK_S,
    Backend,
    Target,
)

log = logging.getLogger(__name__)


class QdrantTier(TierAdmin):
    available = True

    def __init__(
        self,
        store: Store,
        settings: SettingsService,
        indexer: VectorSource,
        *,
        env: Mapping[str, str] | None = None,
        data_dir: Path,
        start: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.settings = settings
        self.indexer = indexer
        self.env: Mapping[str, str] = env or {}
        self.edge_dir = data_dir / "qdrant-edge"
        self._clock = clock
        self._lock = threading.RLock()
        self._config: QdrantConfig | None = None
        self._config_at = 0.0
        self._backend: tuple[Target, Backend] | None = None
        self._sync: dict[str, Any] | None = None
        self._schema_ok = False
        self._down: tuple[float, str] | None = None
        self._health: tuple[float, dict[str, Any]] | None = None
        self._cond = threading.Condition()
        self._wake = False
        self._busy = False
        self._closed = False
        self._reconcile = False
        self._upgrade = False  # a forced backfill gives an older collection its context vector
        self._backoff = 0.0
        self.running = False
        self.processed = 0
        self.deleted = 0
        self.errors = 0
        self.last_error: str | None = None
        self.reason: str | None = None
        self._thread: threading.Thread | None = None
        if start:
            self._thread = threading.Thread(target=self._run, name="memoryd-qdrant", daemon=True)
            self._thread.start()

    def config(self) -> QdrantConfig:
        with self._lock:
            if self._config is None or self._clock() - self._config_at > 2.0:
                self._config = qdrant_config.load(self.store, self.env)
                self._config_at = self._clock()
            return self._config

    def update_config(self, partial: Mapping[str, Any]) -> QdrantConfig:
        """Validate and store; ``enabled`` also sets ``vectorStore`` (qdrant / auto),
        and enabling starts a backfill."""
        values = qdrant_config.validate_update(partial)
        qdrant_config.save(self.store, values)
        with self._lock:
            self._config = None
            self._down = None
            self._health = None
        if "enabled" in values:
            self.settings.update({"vectorStore": "qdrant" if values["enabled"] else "auto"})
            if values["enabled"]:
                self.start_backfill(reconcile=True)
        self.notify()
        return self.config()

    def target(self) -> Target | None:
        """The backend writes go to now, or None."""
        if self.settings.get().vector_store == "qdrant-edge":
            cfg = self.config()
            return Target(
                "qdrant-edge",
                ("qdrant-edge", str(self.edge_dir), cfg.collection, cfg.quantization),
                f"edge:{self.edge_dir}",
                cfg.collection,
            )
        cfg = self.config()
        if not cfg.enabled or cfg.mode == "none":
            return None
        return Target(
            "qdrant",
            ("qdrant", cfg.location, cfg.api_key, cfg.collection, cfg.quantization),
            cfg.location,
            cfg.collection,
        )

    def _not_configured(self) -> str:
        cfg = self.config()
        if self.settings.get().vector_store == "qdrant" and not cfg.enabled:
            return "vectorStore is qdrant but Qdrant is not enabled"
        if cfg.enabled and cfg.mode == "none":
            return "not_configured: Qdrant is enabled but has neither a host nor a path"
        return "not_configured"

    def _backend_for(self, target: Target) -> Backend:
        with self._lock:
            if self._backend is not None and self._backend[0].key == target.key:
                return self._backend[1]
            old, self._backend = self._backend, None
            if old is not None:
                old[1].close()
            store: Backend
            if target.kind == "qdrant-edge":
                from memoryd.vectors.qdrant.edge import QdrantEdgeStore

                cfg = self.config()
                store = QdrantEdgeStore(self.edge_dir, cfg.collection, cfg.quantization)
            else:
                from memoryd.vectors.qdrant.client import QdrantStore

                store = QdrantStore(self.config())
            self._backend = (target, store)
            self._down = None
            return store

    # -- bookkeeping in SQLite ---------------------------------------------------------

    def ensure_schema(self) -> None:
        if self._schema_ok and self.store.read().outbox_ready():
            return
        self.store.write(lambda tx: tx.create_outbox())
        self._schema_ok = True

    def _sync_state(self) -> dict[str, Any]:
        with self._lock:
            if self._sync is None:
                raw = self.store.read().setting(SYNC_KEY, {})
                self._sync = raw if isinstance(raw, dict) else {}
            return dict(self._sync)

    def _set_sync(self, **changes: Any) -> None:
        with self._lock:
            state = self._sync_state() | changes
            self._sync = state
        self.store.write(lambda tx: tx.write_settings({SYNC_KEY: state}, utcnow()))

    def pending(self) -> int:
        """Memories the backend lacks (all of them before the first backfill)."""
        reader = self.store.read()
        return reader.outbox_pending() if reader.outbox_exists() else reader.count()

    def _schema_present(self) -> bool:
        return self.store.read().outbox_exists()

    # -- readiness ---------------------------------------------------------------------

    def _active(self) -> tuple[EmbeddingResolution, Embedder] | None:
        return self.indexer.ready()

    def prepare(self) -> tuple[Backend | None, str]:
        """The selected backend, ready for the active embedder's signature, with the
        sync identity checked (a new identity queues every memory). ``(None, reason)``
        when it cannot be used."""
        target = self.target()
        if target is None:
            return None, self._not_configured()
        active = self._active()
        if active is None:
            resolution = self.indexer.embeddings.resolution()
            return None, f"no embedding source ready ({resolution.reason})"
        resolution, _ = active
        try:
            store = self._backend_for(target)
        except QdrantUnavailable as exc:
            return None, str(exc)
        state = store.ensure_ready(resolution.signature, resolution.dimensions)
        if not state.ready:
            if store.guard is None:
                self._mark_down(state.reason)
            return None, state.reason
        identity = f"{target.kind}|{target.location}|{target.collection}|{resolution.signature}"
        identity += ":ctx" if self.indexer.context else ""  # the points' vectors change
        self.ensure_schema()
        with self._lock:
            sync = self._sync_state()
            if sync.get("identity") != identity or state.recreated:
                queued = self.store.write(lambda tx: tx.outbox_queue_all())
                log.info("Qdrant sync target %s: %d memories queued", identity, queued)
                self._set_sync(identity=identity, complete=False)
                self._reconcile = self._reconcile or not state.recreated
        return store, state.reason

    def _mark_down(self, reason: str) -> None:
        with self._lock:
            self._down = (self._clock(), reason)
            self._health = None
        self.last_error = reason

    def _is_down(self) -> str | None:
        with self._lock:
            if self._down is None:
                return None
            at, reason = self._down
            return reason if self._clock() - at < COOLDOWN_S else None

    # -- reads -------------------------------------------------------------------------

    def reader(self) -> tuple[Backend | None, str | None]:
        """``(backend, None)`` when retrieval should ask Qdrant; ``(None, reason)`` when it
        was asked for but cannot serve; ``(None, None)`` when not asked for."""
        wanted = self.settings.get().vector_store
        if wanted not in ("qdrant", "qdrant-edge"):
            return None, None
        down = self._is_down()
        if down is not None:
            return None, f"Qdrant unavailable ({down})"
        store, reason = self.prepare()
        if store is None:
            return None, f"Qdrant not used ({reason})"
        if store.name != wanted:
            return None, f"Qdrant not used (vectorStore {wanted} but {store.name} is configured)"
        if not self._sync_state().get("complete"):
            return None, f"Qdrant backfill in progress ({self.pending()} memories to push)"
        return store, None

    def search(
        self, vector: np.ndarray, k: int, flt: Filter, view: str = views.MEMORY
    ) -> TierSearch:
        """The tier's KNN of one view, or why the ladder should go on without it."""
        store, reason = self.reader()
        if store is None:
            return TierSearch(None, None, reason)
        if view != views.MEMORY and store.context_unavailable:
            return TierSearch(None, None, store.context_unavailable)
        try:
            hits = store.search_payloads(vector, k, flt, (), view)
        except Exception as exc:
            message = _brief(exc)
            self._mark_down(message)
            return TierSearch(None, None, f"Qdrant search failed ({message})")
        return TierSearch([(mid, score) for mid, score, _ in hits], store.name, None)

    # -- writes: the worker ------------------------------------------------------------

    def notify(self) -> None:
        with self._cond:
            self._wake = True
            self._cond.notify_all()

    def start_backfill(self, *, force: bool = False, reconcile: bool = False) -> dict[str, Any]:
        """Push every memory Qdrant lacks (``force``: every memory) in the background."""
        target = self.target()
        if target is None:
            reason = self._not_configured()
            raise ValidationError(
                f"target qdrant: {reason}",
                details=[{"field": "target", "message": "qdrant not enabled"}],
            )
        self.ensure_schema()
        if force:
            self.store.write(lambda tx: tx.outbox_queue_all())
        with self._lock:
            self._reconcile = self._reconcile or reconcile or force
            self._upgrade = self._upgrade or force
            self._backoff = 0.0
            self._down = None
        self.running = True
        self.notify()
        return {"started": True, "pending": self.pending()}

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the worker has nothing queued (tests, shutdown)."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._closed or (not self._wake and not self._busy), timeout
            )

    def _run(self) -> None:
        while True:
            with self._cond:
                wait = self._backoff or TICK_S
                if not self._wake and not self._closed:
                    self._cond.wait(wait)
                if self._closed:
                    return
                self._wake = False
                self._busy = True
            try:
                self._tick()
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _tick(self) -> None:
        """One step that never lets the worker die. The store being down (PostgreSQL
        restarting) is said once, not with a traceback every tick, Qdrant on or off."""
        try:
            self.step()
        except UnavailableError as exc:
            if self.last_error != exc.message:
                log.warning("Qdrant sync waits for the store: %s", exc.message)
            self.last_error = exc.message
        except Exception as exc:
            self.errors += 1
            self.last_error = _brief(exc)
            log.exception("Qdrant sync failed")

    def step(self) -> None:
        """One pass: tombstones, then pending rows, then reconcile and index upkeep."""
        if self.target() is None:
            self.running = False
            return
        store, reason = self.prepare()
        self.reason = reason
        if store is None:
            self._failed(reason)
            return
        if self._upgrade:
            self._add_context_vector(store)
        try:
            self._drain_tombstones(store)
            self._drain_pending(store)
            if self._reconcile:
                self._reconcile = False
                self._reconcile_orphans(store)
        except Exception as exc:
            self._failed(_brief(exc))
            return
        self._backoff = 0.0
        if self._pushable() == 0:
            if not self._sync_state().get("complete"):
                self._set_sync(complete=True)
            self.running = False
        self._upkeep(store)

    def _failed(self, reason: str) -> None:
        self.errors += 1
        self.last_error = reason
        self._backoff = min(MAX_BACKOFF_S, max(1.0, self._backoff * 2 or 1.0))
        log.warning("Qdrant sync paused (retry in %.0f s): %s", self._backoff, reason)

    def _pushable(self) -> int:
        return self.store.read().outbox_pushable()

    def _drain_tombstones(self, store: Backend) -> None:
        while not self._closed:
            ids = self.store.read().outbox_tombstones(1000)
            if not ids:
                return
            store.delete(ids)
            self._dropped(ids)
            self.deleted += len(ids)

    def _drain_pending(self, store: Backend) -> None:
        after = -1
        while not self._closed:
            rows = self.store.read().outbox_rows(after, BATCH)
            if not rows:
                return
            after = int(rows[-1].seq)
            items = self._items(rows, store)
            store.upsert(items)
            done = [(int(r.seq), int(r.gen)) for r in rows]
            self._pushed(done)
            self.processed += len(rows)

    def _dropped(self, memory_ids: list[str]) -> None:
        self.store.write(lambda tx: tx.outbox_drop_tombstones(memory_ids))

    def _pushed(self, done: list[tuple[int, int]]) -> None:
        self.store.write(lambda tx: tx.outbox_done(done))

    def _items(self, rows: Sequence[OutboxRow], store: Backend) -> list[VectorItem]:
        """Each row's memory view, and its context view when indexed and storable."""
        context = self.indexer.context and store.context_unavailable is None
        return views.row_items(rows, store.dimensions, context, self._embed)

    def _embed(self, texts: list[str]) -> np.ndarray:
        active = self._active()
        if active is None:
            raise QdrantUnavailable("no embedding source ready")
        return self.indexer.embeddings.embed(active[1], texts)

    def _add_context_vector(self, store: Backend) -> None:
        """Once per forced backfill; a failure (a server before Qdrant 1.18) is reported
        and the memory view goes on being pushed."""
        self._upgrade = False
        if store.context_unavailable is None:
            return
        try:
            store.add_context_vector()
            log.info("Qdrant collection %s: context vector added", store.collection)
        except Exception as exc:
            self.errors += 1
            self.last_error = f"adding the context vector failed: {_brief(exc)}"
            log.warning("Qdrant: %s", self.last_error)

    def _reconcile_orphans(self, store: Backend) -> None:
        """Delete points whose memory no longer exists (deleted while Qdrant was off)."""
        for page in store.memory_ids():
            found = self.store.read().existing_ids(page)
            orphans = [mid for mid in page if mid not in found]
            if orphans:
                store.delete(orphans)
                self.deleted += len(orphans)

    def _upkeep(self, store: Backend) -> None:
        from memoryd.vectors.qdrant.edge import QdrantEdgeStore

        if isinstance(store, QdrantEdgeStore):
            try:
                if store.needs_optimize():
                    result = store.optimize_in_subprocess()
                    log.info("Qdrant Edge index build: %s", result)
                store.flush()
            except Exception as exc:
                log.warning("Qdrant Edge upkeep failed: %s", _brief(exc))

    # -- shutdown ----------------------------------------------------------------------

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            try:
                backend[1].close()
            except Exception:
                log.exception("closing the Qdrant backend failed")
