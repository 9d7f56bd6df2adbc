"""Every environment variable memoryd reads, declared once: its name, the typed value
it sets, its default, its bounds and a one-line doc.

This table is the one place a variable's default lives. ``EngineConfig.from_env``
(``config.static``) reads its variables through it; the few read elsewhere at process
start (serve's address and workers in ``server``, the connection guard in
``http.protocol.limits``, typed decay in ``core.decay``, below this layer) keep their
own stricter parsing, and ``tests/project/test_docs.py`` holds their defaults to this table.
``docs/CONFIGURATION.md`` lists exactly these variables with these defaults (tested),
and ``memoryd doctor``/``serve`` name any other ``MEMORYD_``/``MEMORY_``/``QDRANT_``
variable as a likely typo. Stdlib only: the storage layer may import it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Value = int | float | str | bool | None


@dataclass(frozen=True, slots=True)
class Option:
    """One environment variable. ``default`` is the value when unset (None: nothing);
    ``derived`` says how a default computed at start is found, as the docs state it."""

    env: str
    type: type
    default: Value
    doc: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    #: A value of 0 or less is the default (a timeout), not clamped to ``low``.
    positive: bool = False
    derived: str = ""

    def read(self, env: Mapping[str, str]) -> Any:
        """The typed value from ``env``; a missing or unusable value is the default, a
        number out of bounds is clamped, a flag is set by 1/true/yes. Never raises."""
        raw = env.get(self.env, "")
        if self.choices:
            value = raw.strip().lower()
            return value if value in self.choices else self.default
        if self.type is bool:
            return raw.strip().lower() in {"1", "true", "yes"}
        if self.type is int:
            try:
                number = int(float(raw))
            except (ValueError, OverflowError):  # "abc", "nan"; "inf", "1e400"
                return self.default
            return int(self._clamp(number))
        if self.type is float:
            try:
                value_f = float(raw)
            except ValueError:
                return self.default
            if not math.isfinite(value_f):
                return self.default
            if self.positive:
                return min(value_f, self.high or math.inf) if value_f > 0 else self.default
            return float(self._clamp(value_f))
        return raw.strip() or self.default

    def _clamp(self, value: float) -> float:
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        return max(low, min(high, value))


def _o(env: str, kind: type, default: Value, doc: str, **more: Any) -> Option:
    return Option(env, kind, default, doc, **more)


#: Hybrid fusions (``MEMORY_FUSION``); the default ranked best on LoCoMo.
FUSIONS = ("score", "zscore", "rrf")

OPTIONS: tuple[Option, ...] = (
    # -- where the data lives
    _o("MEMORYD_DATA_DIR", str, "~/.memoryd", "data directory; the database is memoryd.db"),
    _o("MEMORYD_DATABASE_URL", str, None, "postgresql:// URL of the shared store"),
    _o("MEMORYD_DATABASE_POOL_SIZE", int, 10, "PostgreSQL connections per server", low=2, high=1000),
    # -- serving
    _o("MEMORYD_HOST", str, "127.0.0.1", "interface `memoryd serve` binds"),
    _o("MEMORYD_PORT", int, 20128, "port `memoryd serve` listens on", low=0, high=65535),
    _o("MEMORYD_WORKERS", int, 1, "server processes on the one port", low=1, high=64),
    _o("MEMORYD_SHUTDOWN_S", int, 10, "seconds `serve` takes to stop on SIGTERM", low=2, high=3600),
    _o("MEMORYD_EXTRACTION_LEASE_S", int, 60, "seconds a server holds an extraction job", low=1, high=86_400),
    _o("MEMORYD_ADMIN_TOKEN", str, None, "admin token for /api (else generated)"),
    _o("MEMORYD_DEV", bool, None, "1: a development server (short admin token accepted)"),
    _o("MEMORYD_API_KEY", str, None, "client key secret for `memoryd mcp`"),
    _o("MEMORYD_LOG_LEVEL", str, "info", "serve's log level: debug, info, warning, error"),
    _o("MEMORYD_LOG_CONTENT", bool, None, "1: libraries log at the level too (may hold content)"),
    _o("MEMORYD_LOG_FORMAT", str, "auto", "json, text, or auto", choices=("auto", "json", "text")),
    # -- upstream providers
    _o("MEMORYD_UPSTREAM_BASE_URL", str, None, "the default OpenAI-compatible upstream"),
    _o("MEMORYD_UPSTREAM_API_KEY", str, None, "API key of the default upstream"),
    _o("MEMORYD_ANTHROPIC_BASE_URL", str, None, "an Anthropic Messages upstream (provider anthropic)"),
    _o("MEMORYD_ANTHROPIC_API_KEY", str, None, "API key of the anthropic provider"),
    _o("MEMORYD_UPSTREAM_TIMEOUT_S", float, 300.0, "read timeout of upstream LLM calls", positive=True, high=86_400.0),
    _o("MEMORYD_UPSTREAM_MAX_CONNECTIONS", int, 256, "pooled upstream connections, every key", low=1, high=100_000),
    _o("MEMORYD_KEY_MAX_CONCURRENT", int, 32, "upstream calls one key may hold open", low=1, high=100_000),
    _o("MEMORYD_INLINE_RETRIEVAL_MS", float, 4.0, "faster memory work runs on the event loop", low=0.0, high=100.0),
    # -- limits and quotas
    _o("MEMORYD_AUTH_FAILURES_PER_MIN", int, 10, "failed authentications per address a minute", low=1, high=1_000_000),
    _o("MEMORYD_KEY_MAX_MEMORIES", int, 100_000, "memories one key may keep (0: no limit)", low=0, high=10**9),
    _o("MEMORYD_KEY_MAX_BYTES", int, 256 * 1024 * 1024, "bytes one key may keep (0: no limit)", low=0, high=2**50),
    _o("MEMORYD_KEY_WRITES_PER_MIN", int, 600, "MCP writes one key may make a minute", low=0, high=10**7),
    _o("MEMORYD_MAX_BODY_BYTES", int, 4 * 1024 * 1024, "largest request body on every route", low=1024, high=1024**3),
    # -- the connection guard (read by http.protocol.limits; a bad value stops serve)
    _o("MEMORYD_HEADER_TIMEOUT_S", float, 10.0, "seconds a request head may take", low=0.01, high=3600),
    _o("MEMORYD_BODY_TIMEOUT_S", float, 15.0, "seconds a body may send nothing", low=0.01, high=3600),
    _o("MEMORYD_BODY_MIN_BYTES_PER_S", int, 8192, "slowest body rate after the grace", low=0, high=1024**3),
    _o("MEMORYD_MAX_CONNECTIONS", int, None, "open client connections", low=1, high=1_000_000, derived="ulimit -n \N{MINUS SIGN} 400, within 32..4096"),
    _o("MEMORYD_KEEPALIVE_TIMEOUT_S", float, 5.0, "idle keep-alive connection lifetime", low=0.01, high=3600),
    _o("MEMORYD_KEEPALIVE_MAX_REQUESTS", int, 1000, "requests per connection (0: unlimited)", low=0, high=10**9),
    _o("MEMORYD_HTTP_PARSER", str, "auto", "HTTP/1.1 parser", choices=("auto", "httptools", "h11")),
    # -- MCP sessions
    _o("MEMORYD_MCP_MAX_SESSIONS_PER_KEY", int, 16, "open /mcp sessions per client key", low=1, high=10_000),
    _o("MEMORYD_MCP_MAX_ADMIN_SESSIONS", int, 32, "open /mcp sessions for the admin token", low=1, high=10_000),
    _o("MEMORYD_MCP_MAX_SESSIONS", int, 10_000, "open /mcp sessions in all", low=1, high=1_000_000),
    _o("MEMORYD_MCP_SESSION_IDLE_S", float, 300.0, "idle /mcp session lifetime", positive=True, high=86_400.0),
    # -- Qdrant fallbacks for the stored qdrant.* settings (config.qdrant)
    _o("QDRANT_HOST", str, None, "Qdrant server host fallback"),
    _o("QDRANT_PORT", int, 6333, "Qdrant server port fallback", low=1, high=65535),
    _o("QDRANT_API_KEY", str, None, "Qdrant API key fallback"),
    _o("QDRANT_COLLECTION", str, "memoryd_memory", "Qdrant collection fallback"),
    # -- retrieval
    _o("MEMORY_FUSION", str, "zscore", "how hybrid merges its legs", choices=FUSIONS),
    _o("MEMORY_RRF_K", int, 60, "Reciprocal Rank Fusion constant", low=1, high=10_000),
    _o("MEMORY_RRF_FTS_WEIGHT", float, 1.0, "weight of the keyword leg"),
    _o("MEMORY_RRF_VECTOR_WEIGHT", float, 0.7, "weight of the vector leg"),
    _o("MEMORY_NEIGHBOUR_WEIGHT", float, 0.3, "hybrid: prior of the neighbouring memories", low=0.0, high=1.0),
    _o("MEMORY_SESSION_WEIGHT", float, 0.3, "hybrid: prior of the session's strength", low=0.0, high=1.0),
    _o("MEMORY_SUBJECT_WEIGHT", float, 0.6, "hybrid: prior of the people the query names", low=0.0, high=1.0),
    _o("MEMORY_CONTEXT_FIELD_WEIGHT", float, 0.2, "keyword weight of the context field", low=0.0, high=1.0),
    _o("MEMORY_CONTEXT_VECTOR_WEIGHT", float, 0.0, "hybrid: weight of the context-vector leg", low=0.0),
    _o("MEMORY_DATE_BOOST", float, 0.1, "hybrid: boost of a date the query names", low=0.0, high=1.0),
    _o("MEMORY_VEC_TOP_K", int, 40, "candidates per retrieval leg", low=1, high=100),
    _o("MEMORY_VEC_QUANTIZATION", str, "none", "vector storage quantization", choices=("none", "int8", "half")),
    _o("MEMORY_RESIDENT_MIN_ROWS", int, 200, "owners this large are searched in memory", low=0, high=1_000_000_000),
    _o("MEMORY_RESIDENT_BUDGET_MB", int, 1024, "memory for the resident copies", low=0, high=1_000_000),
    # -- embedding
    _o("MEMORY_EMBEDDING_CACHE_MAX", int, 1000, "entries in the embedding cache", low=1, high=1_000_000),
    _o("MEMORY_EMBEDDING_CACHE_TTL_MS", int, 300_000, "embedding cache TTL", low=0, high=86_400_000),
    _o("MEMORY_TRANSFORMERS_MODEL_DIR", str, None, "directory of a local ONNX model"),
    _o("MEMORY_STATIC_MODEL", str, None, "directory of the static model", derived="<data dir>/models/static"),
    _o("MEMORY_QUERY_ENCODER", str, "fast", "what embeds a new question for the packaged MiniLM", choices=("fast", "model")),
    _o("MEMORY_MAX_CONTENT_CHARS", int, 32_768, "longest memory content accepted", low=16, high=1_048_576),
    _o("MEMORY_DISABLE_VEC", bool, None, "1/true skips loading sqlite-vec"),
    # -- typed decay (read by core.decay)
    _o("MEMORY_TYPED_DECAY_ENABLED", bool, False, "true enables typed decay"),
    _o("MEMORY_TYPED_DECAY_EPISODIC_DAYS", int, 30, "idle days before an episodic memory decays", low=0),
    _o("MEMORY_TYPED_DECAY_ACCESS_IMMUNITY", int, 3, "injections that make a memory immune", low=0),
    _o("MEMORY_TYPED_DECAY_SWEEP_INTERVAL", int, 0, "seconds between decay sweeps", low=0),
)

#: The declarations by variable name.
BY_ENV: Mapping[str, Option] = {o.env: o for o in OPTIONS}
#: Every environment variable memoryd reads.
ENVIRONMENT = frozenset(BY_ENV)


def default(name: str) -> Any:
    """The declared default of variable ``name`` (KeyError when undeclared)."""
    return BY_ENV[name].default


def read(env: Mapping[str, str], name: str) -> Any:
    """Variable ``name`` from ``env`` as its declaration types and bounds it."""
    return BY_ENV[name].read(env)


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


def inert_variables(env: Mapping[str, str]) -> list[str]:
    """Variables memoryd reads that do nothing as set, each with why and the fix.
    OmniRoute always fuses by ranks, so its environment carries ``MEMORY_RRF_K``; here
    the default fusion ranks by scores (better recall), and switching a moved-in
    install to RRF because the variable came along would lower it unasked."""
    fusion = read(env, "MEMORY_FUSION")
    if env.get("MEMORY_RRF_K", "").strip() and fusion != "rrf":
        return [
            f"MEMORY_RRF_K does nothing: hybrid retrieval fuses by scores (MEMORY_FUSION="
            f"{fusion}), not by ranks; set MEMORY_FUSION=rrf for Reciprocal Rank Fusion "
            "with that k, or unset MEMORY_RRF_K"
        ]
    return []
