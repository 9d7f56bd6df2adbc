"""``MemoryEngine``: the one service API that REST, the gateway, MCP and the CLI call.

It owns validation of inputs (owners, keys, sizes), the read cache, write
notifications for the index tiers, background extraction, and delegates retrieval
and lifecycle work to ``retrieval`` and ``lifecycle``. No SQL lives here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Unpack

from memoryd.cache import TTLCache
from memoryd.config import EngineConfig
from memoryd.config.settings import MemorySettings, SettingsService
from memoryd.config.upstreams import Provider, load_providers
from memoryd.core.scoring import estimate_tokens
from memoryd.engine import coherence, lifecycle
from memoryd.engine.access import AccessBumps
from memoryd.engine.background import BackgroundWorker
from memoryd.engine.extraction_clients import STAT_NAMES, ExtractionClients, classifier
from memoryd.engine.extraction_jobs import ExtractionJobs
from memoryd.engine.keys import KeyService
from memoryd.engine.lifecycle_api import Lifecycle
from memoryd.engine.llm_stats import LlmStats
from memoryd.engine.profile import compose, merge
from memoryd.engine.quotas import Quotas
from memoryd.engine.reports import HealthReport
from memoryd.engine.retrieval import RetrievalOptions, Retriever
from memoryd.engine.validation import (
    check_content,
    check_key,
    check_metadata,
    derive_key,
    require_owner,
)
from memoryd.engine.validation import (
    check_new as validate_new,
)
from memoryd.errors import ValidationError, field_error
from memoryd.models import (
    Hit,
    Memory,
    MemoryPage,
    MemoryPatch,
    MemoryType,
    NewMemory,
    Origin,
    Preview,
    Profile,
    Reconcile,
    Reconciled,
    utcnow,
)
from memoryd.storage.base import Deleted, ListQuery, Store, Writer
from memoryd.vectors.qdrant.disabled import UnavailableTier

if TYPE_CHECKING:
    from memoryd.embedding.service import EmbeddingService
    from memoryd.vectors.base import ExternalTier
    from memoryd.vectors.indexer import Indexer

log = logging.getLogger(__name__)

WriteListener = Callable[[Memory], None]  # a memory's content/key written (tiers re-embed)
DeleteListener = Callable[[list[Deleted]], None]  # memories deleted (the tiers key on seq)
RetrievalListener = Callable[[list[Hit]], None]  # each retrieve()'s hits (metrics)


class MemoryEngine(Lifecycle):
    def __init__(
        self,
        store: Store,
        config: EngineConfig,
        settings: SettingsService,
        *,
        token_counter: Callable[[str], int] = estimate_tokens,
        embeddings: EmbeddingService | None = None,
        indexer: Indexer | None = None,
        env: Mapping[str, str] | None = None,
        attribute_classifier: bool = True,
    ) -> None:
        """``attribute_classifier=False``: capture by the rules alone (the extraction
        eval measures what the classifier adds against it)."""
        self.store = store
        self.config = config
        self.settings = settings
        self.keys = KeyService(store)
        self.tokens = token_counter
        self.embeddings = embeddings
        self.indexer = indexer
        #: The opt-in Qdrant tier (``attach_qdrant``); until then a stand-in saying why not
        self.qdrant: ExternalTier = UnavailableTier(store, settings, env)
        self.cache: TTLCache[str, Memory | None] = TTLCache(
            500, coherence.memory_ttl_s(store.capabilities.shared)
        )
        self.env: Mapping[str, str] = env or {}
        self.retriever = Retriever(store, config, token_counter, indexer, self.providers)
        self.bumps = AccessBumps(store, self._forget)
        self.background = BackgroundWorker("extraction")
        self.quotas = Quotas(store, config.quotas)  # what a client key may keep and write
        self.write_listeners: list[WriteListener] = []
        self.delete_listeners: list[DeleteListener] = []
        if indexer is not None:
            self.write_listeners.append(lambda memory: indexer.notify(memory.id))
        self.llm_stats = LlmStats(store)  # opt-in LLM extraction (``engine.llm_extraction``)
        self.extraction_stats = dict.fromkeys(STAT_NAMES, 0)
        clients = ExtractionClients(
            store=store,
            settings=settings,
            stats=self.extraction_stats,
            quotas=self.quotas,
            reconcile=self.reconcile,
            attributes=classifier(embeddings) if attribute_classifier else None,
            providers=self.providers,
            preview=self.preview,
            llm_stats=self.llm_stats,
            tokens=token_counter,
        )
        self.extraction = ExtractionJobs(
            clients, self.background, lease_s=config.extraction_lease_s
        )
        self.retrieval_listeners: list[RetrievalListener] = []
        coherence.follow(self)  # another server's writes drop this one's caches

    def attach_qdrant(self, tier: ExternalTier) -> None:
        """Retrieval asks the tier first; it hears of stored vectors and deletions."""
        self.qdrant = self.retriever.qdrant = tier
        if self.indexer is not None:
            self.indexer.stored_listeners.append(tier.notify)
            self.indexer.close_listeners.append(tier.close)
        self.delete_listeners.append(lambda removed: tier.notify())

    # -- writes ------------------------------------------------------------------------

    def check_new(self, new: NewMemory) -> tuple[NewMemory, str]:
        """Validate a new memory: ``(it, its key)``, the key derived when not given."""
        return new, validate_new(new, self.config.max_content_chars)

    def create(self, new: NewMemory) -> tuple[Memory, bool]:
        """Upsert on ``(owner, key)``; returns ``(memory, created)`` (the public
        pair REST, MCP and the CLI unpack, made from the store's ``Upserted``)."""
        new, key = self.check_new(new)
        now = utcnow()
        stored = self.store.write(lambda tx: tx.upsert(new, key, now))
        self.notify_written([stored.memory])
        return stored.memory, stored.created

    def create_many(self, items: Iterable[NewMemory]) -> list[tuple[Memory, bool]]:
        """Upsert a batch in one transaction (bulk ingest, imports, extraction); each
        ``(memory, created)``, as ``create`` returns it."""
        checked = [self.check_new(item) for item in items]
        now = utcnow()
        stored = self.store.write(lambda tx: [tx.upsert(new, key, now) for new, key in checked])
        self.notify_written([s.memory for s in stored])
        return [(s.memory, s.created) for s in stored]

    def reconcile(self, items: Iterable[Reconcile]) -> list[Reconciled]:
        """Upsert facts and retire what they replace, all in one transaction: each
        memory supersedes the owner's other current memories of its ``supersedes``
        slots (and ``retract_ids``); superseded rows stay as history retrieval skips.
        An item without a memory only retires its ids (an LLM ``DELETE``)."""
        checked: list[tuple[Reconcile, NewMemory | None, str]] = [
            (i, *self.check_new(i.memory)) if i.memory else (i, None, "") for i in items
        ]
        now = utcnow()
        if not checked:
            return []
        results = self.store.write(
            lambda tx: [tx.reconcile(i, new, key, now) for i, new, key in checked]
        )
        for result in results:
            for memory_id in result.superseded:
                self.cache.invalidate(memory_id)
        self.notify_written([r.memory for r in results if r.memory is not None])
        return results

    def update(
        self, memory_id: str, patch: MemoryPatch, *, owner: str | None = None
    ) -> Memory | None:
        """Apply a patch; None when the id is unknown (or belongs to another owner)."""
        current = self.get(memory_id, owner=owner)
        if current is None:
            return None
        if patch.content is not None:
            check_content(patch.content, self.config.max_content_chars)
        if patch.key is not None:
            check_key(patch.key)
        check_metadata(patch.metadata)
        now = utcnow()

        def apply(tx: Writer) -> Memory | None:
            if patch.key is not None:
                clash = tx.get_by_key(current.api_key_id, patch.key, current.user_id)
                if clash is not None and clash.id != memory_id:
                    raise field_error("key", "another memory of this owner already has this key")
            return tx.update(memory_id, patch, now)

        memory = self.store.write(apply)
        self.cache.invalidate(memory_id)
        if memory is not None and (patch.content is not None or patch.key is not None):
            self._notify_write([memory])
        return memory

    def pin(
        self, memory_id: str, pinned: bool | None, *, owner: str | None = None
    ) -> Memory | None:
        """Into the profile (True), out (False), attribute decides (None); None: unknown."""
        current = self.get(memory_id, owner=owner)
        if current is None:
            return None
        metadata = {k: v for k, v in current.metadata.items() if k != "pinned"}
        if pinned is not None:
            metadata["pinned"] = pinned
        return self.update(memory_id, MemoryPatch(metadata=metadata), owner=owner)

    def profile(self, owner: str, query: str = "", **options: Unpack[RetrievalOptions]) -> Profile:
        """An owner's (end user's) profile as a request with ``query`` would carry it."""
        settings = self.settings.get()
        req = self.retriever.resolve(settings, owner=require_owner(owner), query=query, **options)
        return compose(self.retriever, req, settings)

    def delete(self, memory_id: str, *, owner: str | None = None) -> bool:
        if not isinstance(memory_id, str) or not memory_id:
            return False
        if owner is not None and self.get(memory_id, owner=owner) is None:
            return False
        seq = self.store.write(lambda tx: tx.delete(memory_id))
        if seq is None:
            return False
        self.notify_deleted([Deleted(memory_id, seq)])
        return True

    def delete_by(self, select: Callable[[Writer], list[Deleted]]) -> int:
        """Run a bulk delete (``select`` returns the deleted rows), tell the tiers; count."""
        removed = self.store.write(select)
        if removed:
            self.notify_deleted(removed)
        return len(removed)

    def notify_written(self, memories: list[Memory]) -> None:
        # Invalidated, not set: two writers finishing out of order would cache the older.
        for memory in memories:
            self.cache.invalidate(memory.id)
        self._notify_write(memories)

    def _notify_write(self, memories: list[Memory]) -> None:
        for listener in self.write_listeners:
            for memory in memories:
                try:
                    listener(memory)
                except Exception:
                    log.exception("write listener failed")

    def notify_deleted(self, removed: list[Deleted]) -> None:
        for gone in removed:
            self.cache.invalidate(gone.id)
        for listener in self.delete_listeners:
            try:
                listener(removed)
            except Exception:
                log.exception("delete listener failed")

    def providers(self) -> dict[str, Provider]:
        """Configured upstream providers (stored ones plus the env default)."""
        return load_providers(self.store, self.env)

    # -- reads -------------------------------------------------------------------------

    def get(self, memory_id: str, *, owner: str | None = None) -> Memory | None:
        """A memory by id; with ``owner``, None unless it belongs to that owner."""
        if not isinstance(memory_id, str) or not memory_id:
            return None
        found, memory = self.cache.lookup(memory_id)
        if not found:
            generation = self.cache.generation()  # before the read: see cache.py
            memory = self.store.read().get(memory_id)
            self.cache.fill(memory_id, memory, generation)
        if memory is not None and owner is not None and memory.api_key_id != owner:
            return None
        return memory

    def list_memories(
        self,
        *,
        owner: str | None = None,
        type: MemoryType | None = None,
        session_id: str | None = None,
        q: str | None = None,
        limit: int = 50,
        page: int = 1,
        offset: int | None = None,
        history: bool = False,
        user_id: str | None = None,
    ) -> MemoryPage:
        """Newest first with ``total`` and ``byType``. ``owner=None`` lists every owner
        (admin only); an empty owner string is rejected, never read as "all". Superseded
        memories only with ``history``."""
        if owner is not None:
            require_owner(owner)
        if not 1 <= limit <= 200:
            raise field_error("limit", "must be from 1 to 200")
        if page < 1 or (offset is not None and offset < 0):
            raise field_error("page", "page must be >= 1 and offset >= 0")
        start = offset if offset is not None else (page - 1) * limit
        query = ListQuery(owner, type, session_id, q, limit, start, history, user_id)
        with self.store.snapshot() as reader:
            found = reader.list_page(query)
        return MemoryPage(
            found.memories,
            found.total,
            found.by_type,
            page=start // limit + 1,
            limit=limit,
            tokens=found.tokens,
        )

    def tokens_used(self, owner: str | None = None) -> int:
        """Estimated tokens stored by one owner, or by every owner with ``owner=None``."""
        if owner is not None:
            require_owner(owner)
        return self.store.read().tokens_used(owner)

    def owners(self) -> list[str]:
        return self.store.read().owners()

    # -- retrieval ---------------------------------------------------------------------

    def retrieve(
        self,
        owner: str,
        query: str | None = None,
        *,
        settings: MemorySettings | None = None,
        **options: Unpack[RetrievalOptions],
    ) -> list[Hit]:
        """The memories a request's words retrieve (no profile); bumps their access
        counters. With ``user_id`` (the gateway always gives one; "" = none named) only
        that end user's memories (and the key's shared ones, when it shares) are seen."""
        return self.recall(owner, query, settings=settings, profile=False, **options)[1]

    def recall(
        self,
        owner: str,
        query: str | None = None,
        *,
        settings: MemorySettings | None = None,
        profile: bool = True,
        **options: Unpack[RetrievalOptions],
    ) -> tuple[Profile, list[Hit]]:
        """What one chat request carries: the owner's profile and the
        retrieved memories it does not already hold; bumps their access counters."""
        require_owner(owner)
        settings = settings or self.settings.get()
        req = self.retriever.resolve(settings, owner=owner, query=query, **options)
        prof = compose(self.retriever, req, settings) if profile else Profile([], [], 0)
        hits: list[Hit] = []
        if options.get("max_tokens") is not None or settings.max_tokens:
            hits = merge(prof, self.retriever.run(req, settings)[0])
        if hits or prof.hits:
            self._bump([h.memory.id for h in (*prof.hits, *hits)])
        for listener in self.retrieval_listeners:
            try:
                listener(hits)
            except Exception:
                log.exception("retrieval listener failed")
        return prof, hits

    def preview(
        self, owner: str | None, query: str | None = None, **options: Unpack[RetrievalOptions]
    ) -> Preview:
        """A dry run of ``recall`` (no access bump) with its resolution. ``owner=None``
        previews across every owner (the admin dashboard)."""
        if owner is not None:
            require_owner(owner)
        settings = self.settings.get()
        req = self.retriever.resolve(settings, owner=owner, query=query, **options)
        hits, resolution, dropped = self.retriever.explain(req, settings)
        resolution.hidden = self.retriever.hidden(req, settings)
        prof = compose(self.retriever, req, settings)
        preview = Preview(merge(prof, hits), resolution, req.max_tokens, profile=prof)
        preview.dropped = [d.to_dict() for d in dropped]
        return preview

    def _bump(self, ids: list[str]) -> None:
        """Access bookkeeping, coalesced and written off the request path."""
        self.bumps.add(ids)

    def _forget(self, ids: list[str]) -> None:
        for memory_id in ids:
            self.cache.invalidate(memory_id)

    # -- extraction --------------------------------------------------------------------

    def submit_extraction(
        self,
        owner: str,
        *,
        user_text: str | None = None,
        assistant_text: str | None = None,
        session_id: str = "",
        settings: MemorySettings | None = None,
        user_id: str = "",
        origin: Origin | None = None,
    ) -> Future[None] | None:
        """Durable extraction of one exchange (``extraction_jobs``): facts of ``user_id``
        (the key's end user, "" none), said in ``origin`` (an erasure after it drops them)."""
        try:
            require_owner(owner)
            sources = (settings or self.settings.get()).extract_from
        except Exception:
            log.exception("could not schedule extraction")
            self.extraction_stats["failed"] += 1
            return None
        return self.extraction.submit(
            owner, session_id, user_text, assistant_text, sources, user_id, origin
        )

    def worth_extracting(self, user_text: str, settings: MemorySettings | None = None) -> bool:
        """Whether a turn whose user text is ``user_text`` can store anything."""
        return self.extraction.worth(user_text, settings or self.settings.get())

    def extract_now(
        self,
        owner: str,
        text: str,
        *,
        source: str = "user",
        session_id: str = "",
        user_id: str = "",
    ) -> list[Reconciled]:
        """Extract from one text and reconcile the facts now, on the caller's thread
        (imports, the extraction benchmark, tests); the gateway uses the durable queue."""
        require_owner(owner)
        return self.extraction.extract_and_store(owner, session_id, [(text, source)], user_id)

    def recover_extractions(self) -> int:
        return self.extraction.recover()

    # -- status and shutdown -----------------------------------------------------------

    def status(self) -> dict[str, Any]:
        from memoryd.engine.status import engine_status

        return engine_status(self)

    def health_check(self) -> HealthReport:
        return lifecycle.health_check(self)

    def embedding_providers(self) -> list[dict[str, Any]]:
        """Embedding sources and models this engine could use (local and remote)."""
        if self.embeddings is None:
            return []
        from memoryd.embedding import list_embedding_providers

        return list_embedding_providers(self.embeddings.context(), self.settings.get())

    def reindex(self, *, force: bool = False) -> dict[str, Any]:
        """Start draining the ``needs_reindex`` queue in the background."""
        if self.indexer is None:
            pending = self.store.read().reindex_pending()
            return {"started": False, "pending": pending, "reason": "no vector store"}
        return self.indexer.start_reindex(force=force)

    def drain(self, timeout: float | None = 30.0, *, include_index: bool = True) -> bool:
        """Wait for background extraction, embedding (``include_index``), queued writes."""
        self.bumps.flush()
        self.store.flush()  # extraction jobs reach the worker once their queue row commits
        ok = self.background.join(timeout)
        if include_index and self.indexer is not None:
            ok = self.indexer.join(timeout) and ok
        self.store.flush()
        return ok

    def shutdown(self, budget_s: float) -> None:
        """Stop within about ``budget_s``, losing nothing: unrun extraction jobs stay
        queued, the embedding backlog flagged; the next start runs both."""
        self.extraction.stop(budget_s * 0.6)
        if self.indexer is not None:
            self.indexer.stop(budget_s * 0.3)
        self.drain(0)  # access bumps and queued writes; nothing else runs now

    def close(self) -> None:
        self.extraction.close()
        self.background.close()
        if self.indexer is not None:
            self.indexer.close()
        self.bumps.close()
        self.store.close()

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["MemoryEngine", "ValidationError", "derive_key", "require_owner"]
