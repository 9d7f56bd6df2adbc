"""Every setting of memoryd, in one room.

- ``options``: the environment variables, each declared once (default, type, bounds,
  doc); ``ENVIRONMENT`` is their names.
- ``static``: ``EngineConfig``, the typed configuration read from them at start.
- ``settings``: the memory settings stored in the database (``memory.*``).
- ``qdrant``: the Qdrant settings stored in the database (``qdrant.*``), with their
  ``QDRANT_*`` fallbacks.
- ``upstreams``: the upstream providers (stored ``providers`` plus the
  ``MEMORYD_UPSTREAM_*``/``MEMORYD_ANTHROPIC_*`` ones).

The static configuration is re-exported here (``from memoryd.config import
EngineConfig``); the stored ones load a store, so they are imported from their module.
"""

from __future__ import annotations

from memoryd.config.options import (
    ENVIRONMENT,
    FUSIONS,
    OPTIONS,
    Option,
    inert_variables,
    ours,
    unknown_variables,
)
from memoryd.config.static import (
    DEFAULT_AUTH_FAILURES_PER_MIN,
    DEFAULT_FUSION,
    DEFAULT_HOST,
    DEFAULT_INLINE_RETRIEVAL_MS,
    DEFAULT_KEY_MAX_CONCURRENT,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MCP_ADMIN_SESSIONS,
    DEFAULT_MCP_MAX_SESSIONS,
    DEFAULT_MCP_SESSION_IDLE_S,
    DEFAULT_MCP_SESSIONS_PER_KEY,
    DEFAULT_PORT,
    DEFAULT_UPSTREAM_MAX_CONNECTIONS,
    DEFAULT_UPSTREAM_TIMEOUT_S,
    EngineConfig,
    QuotaLimits,
    default_data_dir,
)

__all__ = [
    "DEFAULT_AUTH_FAILURES_PER_MIN",
    "DEFAULT_FUSION",
    "DEFAULT_HOST",
    "DEFAULT_INLINE_RETRIEVAL_MS",
    "DEFAULT_KEY_MAX_CONCURRENT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MCP_ADMIN_SESSIONS",
    "DEFAULT_MCP_MAX_SESSIONS",
    "DEFAULT_MCP_SESSIONS_PER_KEY",
    "DEFAULT_MCP_SESSION_IDLE_S",
    "DEFAULT_PORT",
    "DEFAULT_UPSTREAM_MAX_CONNECTIONS",
    "DEFAULT_UPSTREAM_TIMEOUT_S",
    "ENVIRONMENT",
    "FUSIONS",
    "OPTIONS",
    "EngineConfig",
    "Option",
    "QuotaLimits",
    "default_data_dir",
    "inert_variables",
    "ours",
    "unknown_variables",
]
