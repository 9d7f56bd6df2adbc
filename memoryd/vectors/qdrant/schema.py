"""Qdrant tier vocabulary: its SQLite bookkeeping schema, tuning constants, and the
small protocol both Qdrant backends implement (kept apart from ``qdrant_tier``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from memoryd.storage import memories as sql
from memoryd.vectors.base import VectorItem

SYNC_KEY = "qdrant_sync"
BATCH = 256
#: How long reads skip a backend after it failed (a retry costs a timeout at worst).
COOLDOWN_S = 10.0
#: The worker looks for work this often even without a notification (payload-only
#: edits, settings changed by another process).
TICK_S = 5.0
MAX_BACKOFF_S = 120.0
HEALTH_TTL_S = 2.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS qdrant_pending (
    seq INTEGER PRIMARY KEY, memory_id TEXT NOT NULL, gen INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS qdrant_tombstones (
    memory_id TEXT PRIMARY KEY, deleted_at TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS qdrant_memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO qdrant_pending (seq, memory_id, gen) VALUES (new.seq, new.id, 1)
    ON CONFLICT (seq) DO UPDATE SET gen = gen + 1;
END;
CREATE TRIGGER IF NOT EXISTS qdrant_memories_au
AFTER UPDATE OF api_key_id, session_id, type, key, content, created_at, expires_at ON memories
WHEN old.api_key_id IS NOT new.api_key_id OR old.session_id IS NOT new.session_id
  OR old.type IS NOT new.type OR old.key IS NOT new.key OR old.content IS NOT new.content
  OR old.created_at IS NOT new.created_at OR old.expires_at IS NOT new.expires_at
BEGIN
    INSERT INTO qdrant_pending (seq, memory_id, gen) VALUES (new.seq, new.id, 1)
    ON CONFLICT (seq) DO UPDATE SET gen = gen + 1;
END;
CREATE TRIGGER IF NOT EXISTS qdrant_memories_ad AFTER DELETE ON memories BEGIN
    DELETE FROM qdrant_pending WHERE seq = old.seq;
    INSERT OR REPLACE INTO qdrant_tombstones (memory_id, deleted_at)
    VALUES (old.id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
"""
_SCHEMA_NAMES = (
    "qdrant_pending",
    "qdrant_tombstones",
    "qdrant_memories_ai",
    "qdrant_memories_au",
    "qdrant_memories_ad",
)

_PENDING_ROWS = (
    "SELECT p.seq, p.gen, m.id, m.api_key_id, m.session_id, m.type, m.key, m.content, "
    "m.created_at, m.expires_at, v.emb FROM qdrant_pending p "
    "JOIN memories m ON m.seq = p.seq LEFT JOIN vec_memories v ON v.seq = p.seq "
    "WHERE m.needs_reindex = 0 AND p.seq > ? ORDER BY p.seq LIMIT ?"
)
_PUSHABLE = (
    "SELECT COUNT(*) FROM qdrant_pending p JOIN memories m ON m.seq = p.seq "
    "WHERE m.needs_reindex = 0"
)


def _executemany(query: str, params: list[tuple[Any, ...]]) -> Callable[[Any], None]:
    def apply(conn: Any) -> None:
        conn.executemany(query, params)

    return apply


class Backend(Protocol):
    """What the tier needs from a Qdrant backend (both implement it)."""

    name: str
    collection: str
    guard: str | None

    @property
    def dimensions(self) -> int | None: ...

    def ensure_ready(self, signature: str, dimensions: int | None) -> Any: ...

    def upsert(self, items: Sequence[VectorItem]) -> None: ...

    def delete(self, memory_ids: Sequence[str]) -> None: ...

    def search_payloads(
        self, vector: np.ndarray, k: int, flt: sql.Filter, fields: Sequence[str] | bool = ()
    ) -> list[tuple[str, float, dict[str, Any]]]: ...

    def count(self) -> int: ...

    def cleanup(self, retention_days: int, now: Any = None) -> int: ...

    def memory_ids(self, batch: int = 1000) -> Any: ...

    def stats(self) -> dict[str, Any]: ...

    def health(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Target:
    kind: str  # "qdrant" | "qdrant-edge"
    key: tuple[Any, ...]  # what makes a different backend instance
    location: str
    collection: str
