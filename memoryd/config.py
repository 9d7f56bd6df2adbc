"""Engine configuration read once, at the edge, from the environment.

Everything tunable by an environment variable is here, with its default; nothing
else in the package reads ``os.environ``. ``docs/CONFIGURATION.md`` documents each
variable, and a test fails when one is missing from it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.core.decay import DecayConfig, decay_config_from_env

DEFAULT_PORT = 20128
DEFAULT_HOST = "127.0.0.1"
#: Largest request body any route accepts (the JSONL import has its own, larger limit).
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: Read timeout of upstream LLM calls (a long completion streams for minutes).
DEFAULT_UPSTREAM_TIMEOUT_S = 300.0
#: Open MCP sessions per client key / for the admin token, and the SDK's global cap
#: (``memoryd.mcp.http``): enough for several agents sharing a key, far from the
#: global cap; an idle session (no request in flight) is ended after 5 minutes.
DEFAULT_MCP_SESSIONS_PER_KEY = 16
DEFAULT_MCP_ADMIN_SESSIONS = 32
DEFAULT_MCP_MAX_SESSIONS = 10_000
DEFAULT_MCP_SESSION_IDLE_S = 300.0
#: Pooled connections to upstream providers, shared by every key.
DEFAULT_UPSTREAM_MAX_CONNECTIONS = 256
#: Upstream calls one key may hold open at once: an eighth of the pool, so one greedy
#: key leaves the other keys most of it (docs/operations.md, "Fair sharing").
DEFAULT_KEY_MAX_CONCURRENT = 32
#: Failed authentications one client address may make a minute (and at once).
DEFAULT_AUTH_FAILURES_PER_MIN = 10
#: A key whose memory work averaged under this many milliseconds runs it on the event
#: loop instead of a worker thread (``gateway.inline``); 0: always a thread.
DEFAULT_INLINE_RETRIEVAL_MS = 4.0


#: Every environment variable memoryd reads (docs/CONFIGURATION.md documents each, and
#: tests/test_docs.py holds code, this set and the docs together). ``memoryd doctor``
#: and ``memoryd serve`` name any other ``MEMORYD_``/``MEMORY_``/``QDRANT_`` variable as a
#: likely typo.
ENVIRONMENT = frozenset(
    (
        "MEMORYD_ADMIN_TOKEN",
        "MEMORYD_ANTHROPIC_API_KEY",
        "MEMORYD_ANTHROPIC_BASE_URL",
        "MEMORYD_AUTH_FAILURES_PER_MIN",
        "MEMORYD_API_KEY",
        "MEMORYD_BODY_MIN_BYTES_PER_S",
        "MEMORYD_BODY_TIMEOUT_S",
        "MEMORYD_DATABASE_POOL_SIZE",
        "MEMORYD_DATABASE_URL",
        "MEMORYD_DATA_DIR",
        "MEMORYD_DEV",
        "MEMORYD_EXTRACTION_LEASE_S",
        "MEMORYD_HEADER_TIMEOUT_S",
        "MEMORYD_HOST",
        "MEMORYD_HTTP_PARSER",
        "MEMORYD_INLINE_RETRIEVAL_MS",
        "MEMORYD_KEEPALIVE_MAX_REQUESTS",
        "MEMORYD_KEEPALIVE_TIMEOUT_S",
        "MEMORYD_KEY_MAX_BYTES",
        "MEMORYD_KEY_MAX_CONCURRENT",
        "MEMORYD_KEY_MAX_MEMORIES",
        "MEMORYD_KEY_WRITES_PER_MIN",
        "MEMORYD_LOG_CONTENT",
        "MEMORYD_LOG_FORMAT",
        "MEMORYD_LOG_LEVEL",
        "MEMORYD_MAX_BODY_BYTES",
        "MEMORYD_MAX_CONNECTIONS",
        "MEMORYD_MCP_MAX_ADMIN_SESSIONS",
        "MEMORYD_MCP_MAX_SESSIONS",
        "MEMORYD_MCP_MAX_SESSIONS_PER_KEY",
        "MEMORYD_MCP_SESSION_IDLE_S",
        "MEMORYD_PORT",
        "MEMORYD_SHUTDOWN_S",
        "MEMORYD_UPSTREAM_API_KEY",
        "MEMORYD_UPSTREAM_BASE_URL",
        "MEMORYD_UPSTREAM_MAX_CONNECTIONS",
        "MEMORYD_UPSTREAM_TIMEOUT_S",
        "MEMORYD_WORKERS",
        "MEMORY_CONTEXT_FIELD_WEIGHT",
        "MEMORY_CONTEXT_VECTOR_WEIGHT",
        "MEMORY_DATE_BOOST",
        "MEMORY_DISABLE_VEC",
        "MEMORY_EMBEDDING_CACHE_MAX",
        "MEMORY_EMBEDDING_CACHE_TTL_MS",
        "MEMORY_FUSION",
        "MEMORY_MAX_CONTENT_CHARS",
        "MEMORY_NEIGHBOUR_WEIGHT",
        "MEMORY_RESIDENT_BUDGET_MB",
        "MEMORY_RESIDENT_MIN_ROWS",
        "MEMORY_RRF_FTS_WEIGHT",
        "MEMORY_RRF_K",
        "MEMORY_RRF_VECTOR_WEIGHT",
        "MEMORY_SESSION_WEIGHT",
        "MEMORY_STATIC_MODEL",
        "MEMORY_SUBJECT_WEIGHT",
        "MEMORY_TRANSFORMERS_MODEL_DIR",
        "MEMORY_TYPED_DECAY_ACCESS_IMMUNITY",
        "MEMORY_TYPED_DECAY_ENABLED",
        "MEMORY_TYPED_DECAY_EPISODIC_DAYS",
        "MEMORY_TYPED_DECAY_SWEEP_INTERVAL",
        "MEMORY_VEC_QUANTIZATION",
        "MEMORY_VEC_TOP_K",
        "QDRANT_API_KEY",
        "QDRANT_COLLECTION",
        "QDRANT_HOST",
        "QDRANT_PORT",
    )
)
#: Variables of memoryd's own tests and benchmarks, not of the server.
_NOT_THE_SERVERS = ("MEMORYD_TEST_", "MEMORYD_BENCH_", "MEMORYD_SMOKE_")
_PREFIXES = ("MEMORYD_", "MEMORY_", "QDRANT_")


def ours(env: Mapping[str, str]) -> list[str]:
    """The variables of ``env`` that look like the server's."""
    return [k for k in env if k.startswith(_PREFIXES) and not k.startswith(_NOT_THE_SERVERS)]


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """Variables that look like memoryd's but are not read (a typo is otherwise silently
    ignored: ``MEMORYD_UPSTREAM_BASEURL`` means no provider), each with the likeliest
    meant name: ``"MEMORYD_UPSTREAM_BASEURL (did you mean MEMORYD_UPSTREAM_BASE_URL?)"``."""
    import difflib

    named = []
    for key in sorted(k for k in ours(env) if k not in ENVIRONMENT):
        close = difflib.get_close_matches(key, ENVIRONMENT, n=1, cutoff=0.8)
        named.append(f"{key} (did you mean {close[0]}?)" if close else key)
    return named


#: Hybrid fusions (``MEMORY_FUSION``); the default ranked best on LoCoMo.
FUSIONS = ("score", "zscore", "rrf")
DEFAULT_FUSION = "zscore"


def inert_variables(env: Mapping[str, str]) -> list[str]:
    """Variables memoryd reads that do nothing as set, each with why and the fix.
    OmniRoute always fuses by ranks, so its environment carries ``MEMORY_RRF_K``; here
    the default fusion ranks by scores (better recall), and switching a moved-in
    install to RRF because the variable came along would lower it unasked."""
    fusion = _choice(env, "MEMORY_FUSION", FUSIONS, DEFAULT_FUSION)
    if env.get("MEMORY_RRF_K", "").strip() and fusion != "rrf":
        return [
            f"MEMORY_RRF_K does nothing: hybrid retrieval fuses by scores (MEMORY_FUSION="
            f"{fusion}), not by ranks; set MEMORY_FUSION=rrf for Reciprocal Rank Fusion "
            "with that k, or unset MEMORY_RRF_K"
        ]
    return []


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    try:
        value = int(float(env.get(name, "")))
    except (ValueError, OverflowError):  # "abc", "nan"; "inf", "1e400"
        return default
    return max(low, min(high, value))


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    try:
        value = float(env.get(name, ""))
    except ValueError:
        return default
    return value if math.isfinite(value) else default


def _choice(env: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = env.get(name, "").strip().lower()
    return value if value in allowed else default


def _unit(env: Mapping[str, str], name: str, default: float) -> float:
    """A weight in 0..1 (out-of-range values are clamped; 0 turns the feature off)."""
    return max(0.0, min(1.0, _float(env, name, default)))


def _positive(env: Mapping[str, str], name: str, default: float, high: float) -> float:
    value = _float(env, name, default)
    return min(value, high) if value > 0 else default


def default_data_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    raw = env.get("MEMORYD_DATA_DIR", "").strip()
    return Path(raw).expanduser() if raw else Path.home() / ".memoryd"


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    """What one client key may keep and write (``engine.quotas``); 0 is no limit."""

    memories: int = 100_000
    bytes: int = 256 * 1024 * 1024
    writes_per_min: int = 600


@dataclass(frozen=True, slots=True)
class EngineConfig:
    data_dir: Path
    rrf_k: int = 60
    rrf_fts_weight: float = 1.0
    rrf_vector_weight: float = 0.7
    vec_top_k: int = 40
    #: Hybrid fusion: ``score`` (max-normalised scores, the default), ``zscore``
    #: (standardised scores) or ``rrf`` (ranks).
    fusion: str = "zscore"
    #: Context priors and the date cue of the hybrid ranking (``core.fusion``, ``core.temporal``).
    neighbour_weight: float = 0.3
    session_weight: float = 0.3
    date_boost: float = 0.1
    #: Subject prior (``core.subjects``): share of the ranking's spread added to the
    #: memories about a person the query names.
    subject_weight: float = 0.6
    #: Context-aware indexing (``storage.sql.context``): the weight of the neighbours'
    #: field in keyword search (against 1.0 for the memory's own text), and of the leg
    #: that searches the second vector (0, the default: not built; within noise on the
    #: LoCoMo ablation once the context field is in, at twice the embedding work).
    context_field_weight: float = 0.2
    context_vector_weight: float = 0.0
    vec_quantization: str = "none"
    #: Owners with at least this many memories are searched in memory
    #: (``vectors.resident``), within this many MB for all of them (0: never).
    resident_min_rows: int = 200
    resident_budget_mb: int = 1024
    embedding_cache_max: int = 1000
    embedding_cache_ttl_ms: int = 300_000
    max_content_chars: int = 32_768
    load_vec: bool = True
    #: ``postgresql://...``: the shared PostgreSQL store instead of the SQLite file.
    database_url: str | None = None
    database_pool_size: int = 10
    extraction_lease_s: float = 60.0
    #: ``serve``'s whole stop on SIGTERM: half for requests in flight, the rest to drain
    shutdown_s: float = 10.0
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
        quant = env.get("MEMORY_VEC_QUANTIZATION", "none").strip().lower()
        return cls(
            data_dir=Path(data_dir).expanduser() if data_dir else default_data_dir(env),
            rrf_k=_int(env, "MEMORY_RRF_K", 60, 1, 10_000),
            rrf_fts_weight=_float(env, "MEMORY_RRF_FTS_WEIGHT", 1.0),
            rrf_vector_weight=_float(env, "MEMORY_RRF_VECTOR_WEIGHT", 0.7),
            vec_top_k=_int(env, "MEMORY_VEC_TOP_K", 40, 1, 100),
            fusion=_choice(env, "MEMORY_FUSION", FUSIONS, DEFAULT_FUSION),
            neighbour_weight=_unit(env, "MEMORY_NEIGHBOUR_WEIGHT", 0.3),
            session_weight=_unit(env, "MEMORY_SESSION_WEIGHT", 0.3),
            date_boost=_unit(env, "MEMORY_DATE_BOOST", 0.1),
            subject_weight=_unit(env, "MEMORY_SUBJECT_WEIGHT", 0.6),
            context_field_weight=_unit(env, "MEMORY_CONTEXT_FIELD_WEIGHT", 0.2),
            context_vector_weight=max(0.0, _float(env, "MEMORY_CONTEXT_VECTOR_WEIGHT", 0.0)),
            vec_quantization=quant if quant in ("int8", "half") else "none",
            resident_min_rows=_int(env, "MEMORY_RESIDENT_MIN_ROWS", 200, 0, 1_000_000_000),
            resident_budget_mb=_int(env, "MEMORY_RESIDENT_BUDGET_MB", 1024, 0, 1_000_000),
            embedding_cache_max=_int(env, "MEMORY_EMBEDDING_CACHE_MAX", 1000, 1, 1_000_000),
            embedding_cache_ttl_ms=_int(
                env, "MEMORY_EMBEDDING_CACHE_TTL_MS", 300_000, 0, 86_400_000
            ),
            max_content_chars=_int(env, "MEMORY_MAX_CONTENT_CHARS", 32_768, 16, 1_048_576),
            load_vec=env.get("MEMORY_DISABLE_VEC", "").strip().lower() not in {"1", "true", "yes"},
            database_url=env.get("MEMORYD_DATABASE_URL", "").strip() or None,
            database_pool_size=_int(env, "MEMORYD_DATABASE_POOL_SIZE", 10, 2, 1000),
            extraction_lease_s=float(_int(env, "MEMORYD_EXTRACTION_LEASE_S", 60, 1, 86_400)),
            shutdown_s=float(_int(env, "MEMORYD_SHUTDOWN_S", 10, 2, 3600)),
            quotas=QuotaLimits(
                memories=_int(env, "MEMORYD_KEY_MAX_MEMORIES", 100_000, 0, 10**9),
                bytes=_int(env, "MEMORYD_KEY_MAX_BYTES", 256 * 1024 * 1024, 0, 2**50),
                writes_per_min=_int(env, "MEMORYD_KEY_WRITES_PER_MIN", 600, 0, 10**7),
            ),
            decay=decay_config_from_env(env),
            max_body_bytes=_int(
                env, "MEMORYD_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, 1024, 1024**3
            ),
            upstream_timeout_s=_positive(
                env, "MEMORYD_UPSTREAM_TIMEOUT_S", DEFAULT_UPSTREAM_TIMEOUT_S, 86_400.0
            ),
            mcp_max_sessions_per_key=_int(
                env, "MEMORYD_MCP_MAX_SESSIONS_PER_KEY", DEFAULT_MCP_SESSIONS_PER_KEY, 1, 10_000
            ),
            mcp_max_admin_sessions=_int(
                env, "MEMORYD_MCP_MAX_ADMIN_SESSIONS", DEFAULT_MCP_ADMIN_SESSIONS, 1, 10_000
            ),
            mcp_max_sessions=_int(
                env, "MEMORYD_MCP_MAX_SESSIONS", DEFAULT_MCP_MAX_SESSIONS, 1, 1_000_000
            ),
            mcp_session_idle_s=_positive(
                env, "MEMORYD_MCP_SESSION_IDLE_S", DEFAULT_MCP_SESSION_IDLE_S, 86_400.0
            ),
            upstream_max_connections=_int(
                env,
                "MEMORYD_UPSTREAM_MAX_CONNECTIONS",
                DEFAULT_UPSTREAM_MAX_CONNECTIONS,
                1,
                100_000,
            ),
            auth_failures_per_min=_int(
                env, "MEMORYD_AUTH_FAILURES_PER_MIN", DEFAULT_AUTH_FAILURES_PER_MIN, 1, 1_000_000
            ),
            key_max_concurrent=_int(
                env, "MEMORYD_KEY_MAX_CONCURRENT", DEFAULT_KEY_MAX_CONCURRENT, 1, 100_000
            ),
            inline_retrieval_ms=min(
                100.0,
                max(0.0, _float(env, "MEMORYD_INLINE_RETRIEVAL_MS", DEFAULT_INLINE_RETRIEVAL_MS)),
            ),
        )
