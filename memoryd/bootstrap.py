"""The only place that turns configuration into objects."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.cache import TTLCache
from memoryd.config import EngineConfig
from memoryd.config.settings import MemorySettings, SettingsService
from memoryd.engine import MemoryEngine
from memoryd.errors import UnavailableError
from memoryd.storage.base import Store
from memoryd.storage.sqlite.database import Database
from memoryd.storage.sqlite.repair import repair
from memoryd.storage.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from memoryd.embedding.service import EmbeddingService, Resolver
    from memoryd.vectors.base import InStoreVectors
    from memoryd.vectors.indexer import Indexer
    from memoryd.vectors.qdrant.tier import QdrantTier

log = logging.getLogger(__name__)
#: Owners from this many memories get a resident keyword copy on PostgreSQL (below it the
#: SQL search takes a few ms; SQLite's copies start at ``resident_min_rows``).
PG_KEYWORD_MIN_ROWS = 2000


def local_model_installed(env: Mapping[str, str]) -> bool:
    """Whether the local MiniLM files are present (``transformersEnabled``)."""
    try:
        from memoryd.embedding import local_model_files
    except ImportError:
        return False
    return local_model_files(env) is not None


def build_engine(
    config: EngineConfig,
    env: Mapping[str, str] | None = None,
    *,
    embedding_resolver: Resolver | None = None,
    start_indexing: bool = True,
    attribute_classifier: bool = True,
) -> MemoryEngine:
    """Open the store and wire every tier. ``embedding_resolver`` replaces the
    settings-driven source choice (tests use it to pick a deterministic embedder);
    ``attribute_classifier=False`` leaves capture to the rules alone."""
    env = dict(os.environ if env is None else env)
    env.setdefault("MEMORYD_DATA_DIR", str(config.data_dir))
    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    store, vectors = _open_store(config)
    defaults = MemorySettings(transformers_enabled=local_model_installed(env))
    settings = SettingsService(store, defaults=defaults)
    embeddings, indexer, tier = _semantic_tier(
        store, vectors, config, settings, env, embedding_resolver
    )
    engine = MemoryEngine(
        store,
        config,
        settings,
        embeddings=embeddings,
        indexer=indexer,
        env=env,
        attribute_classifier=attribute_classifier,
    )
    if tier is not None:
        engine.attach_qdrant(tier)
    if start_indexing and indexer is not None and indexer.ready() is not None:
        indexer.start_reindex()  # drain anything a previous run left flagged
    return engine


#: Builds the in-store vector index once the embedding stack imported (None: no tier).
VectorFactory = Callable[[], "InStoreVectors | None"]


def _open_store(config: EngineConfig) -> tuple[Store, VectorFactory]:
    """The primary store the configuration names, and its own vector index: the SQLite
    file with sqlite-vec by default, PostgreSQL with pgvector with a database URL."""
    if config.database_url:
        try:
            from memoryd.storage.postgres.store import PostgresStore
        except ImportError as exc:
            raise UnavailableError(
                f"MEMORYD_DATABASE_URL needs the postgres extra ({exc.name} is missing): "
                "pip install 'memoryd[postgres]'"
            ) from None
        pg = PostgresStore.open(
            config.database_url,
            pool_size=config.database_pool_size,
            # a copy is fresh by the change feed, a few ms behind: the exact SQL search
            # is kept for owners it is already fast on
            keyword_min_rows=max(config.resident_min_rows, PG_KEYWORD_MIN_ROWS)
            if config.resident_budget_mb
            else 0,
            budget_mb=config.resident_budget_mb,
        )

        def pgvector() -> InStoreVectors | None:
            from memoryd.vectors.pgvector import PgVectorStore

            return PgVectorStore(pg.db, quantization=config.vec_quantization)

        return pg, pgvector
    db = Database(config.db_path, load_vec=config.load_vec)
    repair(db)  # indexes agree with memories, whatever the last run left

    def sqlite_vec() -> InStoreVectors | None:
        from memoryd.vectors.sqlite_vec import SqliteVecStore

        if not db.capabilities.vec:
            log.warning("vector search disabled: %s", db.capabilities.vec_reason)
            return None
        from memoryd.vectors.resident import ResidentVectors

        resident = ResidentVectors(
            min_rows=config.resident_min_rows, budget_bytes=config.resident_budget_mb * 2**20
        )
        return SqliteVecStore(db, quantization=config.vec_quantization, resident=resident)

    from memoryd.storage.sqlite.keywords import ResidentKeywords

    keywords = ResidentKeywords(
        min_rows=config.resident_min_rows, budget_bytes=config.resident_budget_mb * 2**20
    )
    return SqliteStore(db, keywords=keywords), sqlite_vec


def _semantic_tier(
    primary: Store,
    vectors: VectorFactory,
    config: EngineConfig,
    settings: SettingsService,
    env: Mapping[str, str],
    resolver: Resolver | None,
) -> tuple[EmbeddingService | None, Indexer | None, QdrantTier | None]:
    try:
        from memoryd.embedding import EmbeddingContext, ProviderConfig
        from memoryd.embedding.service import EmbeddingService
        from memoryd.vectors.indexer import Indexer
    except ImportError as exc:  # a broken install: keep the keyword tier working
        log.warning("semantic retrieval unavailable: %s", exc)
        return None, None, None
    from memoryd.config.upstreams import load_providers

    def context() -> EmbeddingContext:
        providers = {
            name: ProviderConfig(p.name, p.base_url, p.api_key)
            for name, p in load_providers(primary, env).items()
        }
        return EmbeddingContext(env=env, providers=providers, data_dir=config.data_dir)

    cache: TTLCache[str, object] = TTLCache(
        config.embedding_cache_max, config.embedding_cache_ttl_ms / 1000
    )
    embeddings = EmbeddingService(settings, context, cache, resolver=resolver)
    store = vectors()
    indexer = Indexer(primary, store, embeddings, context=config.context_vector_weight > 0)
    tier = None
    if store is not None:  # Qdrant rides on the in-store tier (it pushes those vectors)
        from memoryd.vectors.qdrant.tier import QdrantTier

        tier = QdrantTier(primary, settings, indexer, env=env, data_dir=config.data_dir)
    return embeddings, indexer, tier


def open_engine(
    *,
    data_dir: str | Path | None = None,
    env_overrides: dict[str, str] | None = None,
    start_indexing: bool = True,
) -> MemoryEngine:
    env = dict(os.environ) | (env_overrides or {})
    config = EngineConfig.from_env(env, data_dir=data_dir)
    return build_engine(config, env, start_indexing=start_indexing)


def open_store(
    *, data_dir: str | Path | None = None, env_overrides: dict[str, str] | None = None
) -> Store:
    """The primary store alone, no embedder and no tiers (what ``serve --workers``
    reads the shared admin token from before it starts the workers)."""
    env = dict(os.environ) | (env_overrides or {})
    store, _ = _open_store(EngineConfig.from_env(env, data_dir=data_dir))
    return store
