"""Engine configuration read once, at the edge, from the environment.

``EngineConfig.from_env`` reads each variable through its declaration in
``config.options`` (default, type, bounds); the rest of the package receives these
typed values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.config.options import default, read
from memoryd.core.decay import DecayConfig, decay_config_from_env

DEFAULT_PORT: int = default("MEMORYD_PORT")
DEFAULT_HOST: str = default("MEMORYD_HOST")
#: Largest request body any route accepts (the JSONL import has its own, larger limit).
DEFAULT_MAX_BODY_BYTES: int = default("MEMORYD_MAX_BODY_BYTES")
#: Read timeout of upstream LLM calls (a long completion streams for minutes).
DEFAULT_UPSTREAM_TIMEOUT_S: float = default("MEMORYD_UPSTREAM_TIMEOUT_S")
#: Open MCP sessions per client key / for the admin token, and the SDK's global cap
#: (``memoryd.mcp.http``): enough for several agents sharing a key, far from the
#: global cap; an idle session (no request in flight) is ended after 5 minutes.
DEFAULT_MCP_SESSIONS_PER_KEY: int = default("MEMORYD_MCP_MAX_SESSIONS_PER_KEY")
DEFAULT_MCP_ADMIN_SESSIONS: int = default("MEMORYD_MCP_MAX_ADMIN_SESSIONS")
DEFAULT_MCP_MAX_SESSIONS: int = default("MEMORYD_MCP_MAX_SESSIONS")
DEFAULT_MCP_SESSION_IDLE_S: float = default("MEMORYD_MCP_SESSION_IDLE_S")
#: Pooled connections to upstream providers, shared by every key.
DEFAULT_UPSTREAM_MAX_CONNECTIONS: int = default("MEMORYD_UPSTREAM_MAX_CONNECTIONS")
#: Upstream calls one key may hold open at once: an eighth of the pool, so one greedy
#: key leaves the other keys most of it (docs/operations.md, "Fair sharing").
DEFAULT_KEY_MAX_CONCURRENT: int = default("MEMORYD_KEY_MAX_CONCURRENT")
#: Failed authentications one client address may make a minute (and at once).
DEFAULT_AUTH_FAILURES_PER_MIN: int = default("MEMORYD_AUTH_FAILURES_PER_MIN")
#: A key whose memory work averaged under this many milliseconds runs it on the event
#: loop instead of a worker thread (``gateway.inline``); 0: always a thread.
DEFAULT_INLINE_RETRIEVAL_MS: float = default("MEMORYD_INLINE_RETRIEVAL_MS")
DEFAULT_FUSION: str = default("MEMORY_FUSION")


def default_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``MEMORYD_DATA_DIR``, or ``~/.memoryd``."""
    env = os.environ if env is None else env
    return Path(read(env, "MEMORYD_DATA_DIR")).expanduser()


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    """What one client key may keep and write (``engine.quotas``); 0 is no limit."""

    memories: int = default("MEMORYD_KEY_MAX_MEMORIES")
    bytes: int = default("MEMORYD_KEY_MAX_BYTES")
    writes_per_min: int = default("MEMORYD_KEY_WRITES_PER_MIN")


@dataclass(frozen=True, slots=True)
class EngineConfig:
    data_dir: Path
    rrf_k: int = default("MEMORY_RRF_K")
    rrf_fts_weight: float = default("MEMORY_RRF_FTS_WEIGHT")
    rrf_vector_weight: float = default("MEMORY_RRF_VECTOR_WEIGHT")
    vec_top_k: int = default("MEMORY_VEC_TOP_K")
    #: Hybrid fusion: ``score`` (max-normalised scores, the default), ``zscore``
    #: (standardised scores) or ``rrf`` (ranks).
    fusion: str = DEFAULT_FUSION
    #: Context priors and the date cue of the hybrid ranking (``core.fusion``, ``core.temporal``).
    neighbour_weight: float = default("MEMORY_NEIGHBOUR_WEIGHT")
    session_weight: float = default("MEMORY_SESSION_WEIGHT")
    date_boost: float = default("MEMORY_DATE_BOOST")
    #: Subject prior (``core.subjects``): share of the ranking's spread added to the
    #: memories about a person the query names.
    subject_weight: float = default("MEMORY_SUBJECT_WEIGHT")
    #: Context-aware indexing (``storage.sql.context``): the weight of the neighbours'
    #: field in keyword search (against 1.0 for the memory's own text), and of the leg
    #: that searches the second vector (0, the default: not built; within noise on the
    #: LoCoMo ablation once the context field is in, at twice the embedding work).
    context_field_weight: float = default("MEMORY_CONTEXT_FIELD_WEIGHT")
    context_vector_weight: float = default("MEMORY_CONTEXT_VECTOR_WEIGHT")
    vec_quantization: str = default("MEMORY_VEC_QUANTIZATION")
    #: Owners with at least this many memories are searched in memory
    #: (``vectors.resident``), within this many MB for all of them (0: never).
    resident_min_rows: int = default("MEMORY_RESIDENT_MIN_ROWS")
    resident_budget_mb: int = default("MEMORY_RESIDENT_BUDGET_MB")
    embedding_cache_max: int = default("MEMORY_EMBEDDING_CACHE_MAX")
    embedding_cache_ttl_ms: int = default("MEMORY_EMBEDDING_CACHE_TTL_MS")
    max_content_chars: int = default("MEMORY_MAX_CONTENT_CHARS")
    load_vec: bool = True
    #: ``postgresql://...``: the shared PostgreSQL store instead of the SQLite file.
    database_url: str | None = None
    database_pool_size: int = default("MEMORYD_DATABASE_POOL_SIZE")
    extraction_lease_s: float = float(default("MEMORYD_EXTRACTION_LEASE_S"))
    #: ``serve``'s whole stop on SIGTERM: half for requests in flight, the rest to drain
    shutdown_s: float = float(default("MEMORYD_SHUTDOWN_S"))
    quotas: QuotaLimits = field(default_factory=QuotaLimits)
    decay: DecayConfig = field(default_factory=DecayConfig)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    upstream_timeout_s: float = DEFAULT_UPSTREAM_TIMEOUT_S
    mcp_max_sessions_per_key: int = DEFAULT_MCP_SESSIONS_PER_KEY
    mcp_max_admin_sessions: int = DEFAULT_MCP_ADMIN_SESSIONS
    mcp_max_sessions: int = DEFAULT_MCP_MAX_SESSIONS
    mcp_session_idle_s: float = DEFAULT_MCP_SESSION_IDLE_S
    upstream_max_connections: int = DEFAULT_UPSTREAM_MAX_CONNECTIONS
    key_max_concurrent: int = DEFAULT_KEY_MAX_CONCURRENT
    auth_failures_per_min: int = DEFAULT_AUTH_FAILURES_PER_MIN
    inline_retrieval_ms: float = DEFAULT_INLINE_RETRIEVAL_MS

    @property
    def db_path(self) -> Path:
        return self.data_dir / "memoryd.db"

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, data_dir: str | Path | None = None
    ) -> EngineConfig:
        env = os.environ if env is None else env
        return cls(
            data_dir=Path(data_dir).expanduser() if data_dir else default_data_dir(env),
            rrf_k=read(env, "MEMORY_RRF_K"),
            rrf_fts_weight=read(env, "MEMORY_RRF_FTS_WEIGHT"),
            rrf_vector_weight=read(env, "MEMORY_RRF_VECTOR_WEIGHT"),
            vec_top_k=read(env, "MEMORY_VEC_TOP_K"),
            fusion=read(env, "MEMORY_FUSION"),
            neighbour_weight=read(env, "MEMORY_NEIGHBOUR_WEIGHT"),
            session_weight=read(env, "MEMORY_SESSION_WEIGHT"),
            date_boost=read(env, "MEMORY_DATE_BOOST"),
            subject_weight=read(env, "MEMORY_SUBJECT_WEIGHT"),
            context_field_weight=read(env, "MEMORY_CONTEXT_FIELD_WEIGHT"),
            context_vector_weight=read(env, "MEMORY_CONTEXT_VECTOR_WEIGHT"),
            vec_quantization=read(env, "MEMORY_VEC_QUANTIZATION"),
            resident_min_rows=read(env, "MEMORY_RESIDENT_MIN_ROWS"),
            resident_budget_mb=read(env, "MEMORY_RESIDENT_BUDGET_MB"),
            embedding_cache_max=read(env, "MEMORY_EMBEDDING_CACHE_MAX"),
            embedding_cache_ttl_ms=read(env, "MEMORY_EMBEDDING_CACHE_TTL_MS"),
            max_content_chars=read(env, "MEMORY_MAX_CONTENT_CHARS"),
            load_vec=not read(env, "MEMORY_DISABLE_VEC"),
            database_url=read(env, "MEMORYD_DATABASE_URL"),
            database_pool_size=read(env, "MEMORYD_DATABASE_POOL_SIZE"),
            extraction_lease_s=float(read(env, "MEMORYD_EXTRACTION_LEASE_S")),
            shutdown_s=float(read(env, "MEMORYD_SHUTDOWN_S")),
            quotas=QuotaLimits(
                memories=read(env, "MEMORYD_KEY_MAX_MEMORIES"),
                bytes=read(env, "MEMORYD_KEY_MAX_BYTES"),
                writes_per_min=read(env, "MEMORYD_KEY_WRITES_PER_MIN"),
            ),
            decay=decay_config_from_env(env),
            max_body_bytes=read(env, "MEMORYD_MAX_BODY_BYTES"),
            upstream_timeout_s=read(env, "MEMORYD_UPSTREAM_TIMEOUT_S"),
            mcp_max_sessions_per_key=read(env, "MEMORYD_MCP_MAX_SESSIONS_PER_KEY"),
            mcp_max_admin_sessions=read(env, "MEMORYD_MCP_MAX_ADMIN_SESSIONS"),
            mcp_max_sessions=read(env, "MEMORYD_MCP_MAX_SESSIONS"),
            mcp_session_idle_s=read(env, "MEMORYD_MCP_SESSION_IDLE_S"),
            upstream_max_connections=read(env, "MEMORYD_UPSTREAM_MAX_CONNECTIONS"),
            auth_failures_per_min=read(env, "MEMORYD_AUTH_FAILURES_PER_MIN"),
            key_max_concurrent=read(env, "MEMORYD_KEY_MAX_CONCURRENT"),
            inline_retrieval_ms=read(env, "MEMORYD_INLINE_RETRIEVAL_MS"),
        )
