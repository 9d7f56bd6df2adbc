"""Keeping vectors in step with memories: write-path embedding, backfill, reindex.

Writes set ``needs_reindex = 1`` in their own transaction (storage layer), so the
flag is the durable to-do list: whatever this worker has not done yet, including
work lost to a crash, is still flagged. One worker thread serves three sources of
work, in order: ids of freshly written memories (batched: everything queued is
embedded together, up to ``BATCH``), then, while a reindex runs, the flagged queue.
A vector is stored and the flag cleared in one transaction, and only if the memory
still has the content that was embedded, so a racing edit is never marked done.

``backfill_owner`` embeds a bounded batch of one owner's pending memories on the
caller's thread just before a semantic search.

With ``context`` on, each memory gets a second vector, its dense context view (the
memory with its earlier neighbours, ``storage.sql.context``), stored beside the first;
a memory without neighbours reuses its own vector. The signature then ends in ``:ctx``,
so switching it rebuilds the index.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from memoryd.embedding import Embedder, EmbeddingError, EmbeddingResolution
from memoryd.embedding.service import EmbeddingService
from memoryd.priority import lower_this_thread
from memoryd.storage.base import Flagged, Store, Writer
from memoryd.vectors.base import InStoreVectors, VectorItem

log = logging.getLogger(__name__)

BATCH = 64
BACKFILL_LIMIT = 16


def no_vector_store(pending: int, why: str) -> dict[str, Any]:
    """The ``vectorStore`` status block when there is no sqlite-vec tier."""
    return {
        "backend": "none",
        "available": False,
        "rowCount": 0,
        "needsReindex": pending,
        "activeDim": None,
        "signature": None,
        "reason": f"sqlite-vec not available — using FTS5 only ({why})",
    }


class Indexer:
    def __init__(
        self,
        primary: Store,
        store: InStoreVectors | None,
        embeddings: EmbeddingService,
        *,
        context: bool = False,
    ) -> None:
        self.primary = primary  # the flags live here
        self.store = store  # the in-store vector index
        self.embeddings = embeddings
        self.context = context
        self._pending: dict[str, None] = {}
        self._cond = threading.Condition()
        self._busy = False
        self._closed = False
        self.reindex_running = False
        self.processed = 0
        self.errors = 0
        self.last_error: str | None = None
        self._skip: set[str] = set()
        self._signature: str | None = None
        #: Told after a batch of vectors is stored, and when the indexer closes (the
        #: Qdrant tier listens, so Qdrant is always written after SQLite: dual write).
        self.stored_listeners: list[Callable[[], None]] = []
        self.close_listeners: list[Callable[[], None]] = []
        self._thread = threading.Thread(target=self._run, name="memoryd-index", daemon=True)
        self._thread.start()

    # -- readiness ---------------------------------------------------------------------

    def status(self, pending: int) -> dict[str, Any]:
        """The ``vectorStore`` block of engine status: the sqlite-vec tier, and why it
        does not serve (not loadable, or no embedding source yet)."""
        if self.store is None:
            return no_vector_store(pending, self.primary.capabilities.vec_reason)
        stats = self.store.stats()
        ready = self.ready() is not None
        name = self.store.name
        reason = (
            f"{name} active, dim={stats['activeDim']}"
            if ready
            else f"{name} loaded; waiting for an embedding source"
        )
        return {"backend": name, "available": ready, **stats, "reason": reason}

    def ready(self) -> tuple[EmbeddingResolution, Embedder] | None:
        """The active embedder with the store prepared for its signature, or None."""
        if self.store is None:
            return None
        resolution, embedder = self.embeddings.current()
        if embedder is None:
            return None
        if not resolution.dimensions:
            try:  # learn the dimension from one real vector (remote models)
                self.embeddings.embed(embedder, ["dimension probe"])
            except EmbeddingError:
                return None
            resolution, embedder = self.embeddings.current()
            if embedder is None or not resolution.dimensions:
                return None
        signature = resolution.signature + (":ctx" if self.context else "")
        state = self.store.ensure_ready(signature, resolution.dimensions)
        if not state.ready:
            return None
        if state.recreated or self._signature is None:
            first = self._signature is None
            self._signature = resolution.signature
            if state.recreated:
                log.info("vector index reset: %s", state.reason)
            if state.recreated or first:  # first ready in this process: what an earlier
                self.start_reindex()  # run left flagged (a remote embedder is ready late)
        return resolution, embedder

    # -- work intake -------------------------------------------------------------------

    def notify(self, memory_id: str) -> None:
        with self._cond:
            if self._closed:
                return
            self._pending[memory_id] = None
            self._cond.notify()

    def start_reindex(self, *, force: bool = False) -> dict[str, Any]:
        if force:
            self.primary.write(lambda tx: tx.mark_all_reindex())
        with self._cond:
            self._skip.clear()
            self.reindex_running = True
            self._cond.notify()
        return {"started": True, "pending": self.primary.read().reindex_pending()}

    def progress(self) -> dict[str, Any]:
        return {
            "running": self.reindex_running,
            "processed": self.processed,
            "pending": self.primary.read().reindex_pending(),
            "errors": self.errors,
            "lastError": self.last_error,
        }

    # -- the worker --------------------------------------------------------------------

    def _run(self) -> None:
        lower_this_thread()  # embedding documents waits; a request does not
        while True:
            with self._cond:
                while not self._closed and not self._pending and not self.reindex_running:
                    self._cond.wait()
                if self._closed:
                    return
                ids = list(self._pending)[:BATCH]
                for memory_id in ids:
                    del self._pending[memory_id]
                self._busy = True
            try:
                if ids:
                    self._index(self._rows(ids))
                else:
                    self._reindex_step()
            except Exception as exc:  # never let the worker die
                self.errors += 1
                self.last_error = str(exc)
                log.exception("indexing failed")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _rows(self, ids: Sequence[str]) -> list[Flagged]:
        return self.primary.read().flagged(ids)

    def _reindex_step(self) -> None:
        rows = self.primary.read().oldest_flagged(BATCH + len(self._skip))
        batch = [row for row in rows if row.id not in self._skip][:BATCH]
        if not batch or self.ready() is None:
            self.reindex_running = False
            return
        if self._index(batch) == 0:
            self._skip.update(row.id for row in batch)  # do not spin on rows that fail

    def _index(self, rows: list[Flagged]) -> int:
        """Embed and store flagged rows (their text, and their context view when
        indexed); returns how many were stored."""
        if not rows:
            return 0
        active = self.ready()
        if active is None:
            return 0
        _, embedder = active
        texts = list(
            dict.fromkeys(
                t
                for row in rows
                for t in (row.content, row.view)
                if self.context or t == row.content
            )
        )
        try:
            vectors = dict(zip(texts, self.embeddings.embed(embedder, texts), strict=True))
        except EmbeddingError as exc:
            if len(rows) == 1:
                self.errors += 1
                self.last_error = f"{exc.reason}: {exc.message}"
                return 0
            return sum(self._index([row]) for row in rows)  # isolate the failing text
        items = {
            row.id: [VectorItem(row.id, row.owner, vectors[row.content])]
            + (
                [VectorItem(row.id, row.owner, vectors[row.view], view="context")]
                if self.context
                else []
            )
            for row in rows
        }
        contents = {row.id: row.content for row in rows}
        store = self.store
        assert store is not None

        def apply(tx: Writer) -> int:
            done = 0
            tx.lock_memories(items)  # in id order, as every multi-row writer (no deadlock)
            for mid, views in sorted(items.items()):
                if tx.clear_flag_if_unchanged(mid, contents[mid]):
                    store.upsert_in(tx, views)
                    done += 1
            return done

        done: int = self.primary.write(apply)
        self.processed += done
        if done:
            for listener in self.stored_listeners:
                listener()
        return done

    def backfill_owner(self, owner: str, limit: int = BACKFILL_LIMIT) -> int:
        """Embed up to ``limit`` pending memories of one owner now (before a search)."""
        batch = self.primary.read().newest_flagged_of(owner, limit)
        return self._index(batch) if batch else 0

    # -- shutdown ----------------------------------------------------------------------

    def join(self, timeout: float | None = None) -> bool:
        """Wait until queued writes are embedded and any running reindex has drained."""
        with self._cond:
            return self._cond.wait_for(
                lambda: (
                    self._closed
                    or (not self._pending and not self._busy and not self.reindex_running)
                ),
                timeout,
            )

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop after the current batch (waiting up to ``timeout``); unfinished work
        stays flagged for the next start."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=timeout)

    def close(self) -> None:
        """``stop`` (at once when a shutdown already gave it its time: a batch stuck in a
        slow provider's call must not hold the exit), then tell the listeners and close
        the embedder."""
        self.stop(0 if self._closed else 30)
        for listener in self.close_listeners:
            listener()
        self.embeddings.close()  # last: the listeners (Qdrant) may still embed
