"""Qdrant tier vocabulary: tuning constants and the small protocol both Qdrant backends
implement (kept apart from ``tier``; its SQLite bookkeeping is
``storage.sqlite.qdrant_sync``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from memoryd.storage.base import Filter
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


class Backend(Protocol):
    """What the tier needs from a Qdrant backend (both implement it)."""

    name: str
    collection: str
    guard: str | None

    @property
    def dimensions(self) -> int | None: ...

    @property
    def context_unavailable(self) -> str | None:
        """Why the collection cannot hold the context view (and the fix), or None."""
        ...

    def add_context_vector(self) -> None:
        """Give an older single-vector collection its context vector, in place."""
        ...

    def ensure_ready(self, signature: str, dimensions: int | None) -> Any: ...

    def upsert(self, items: Sequence[VectorItem]) -> None: ...

    def delete(self, memory_ids: Sequence[str]) -> None: ...

    def search_payloads(
        self,
        vector: np.ndarray,
        k: int,
        flt: Filter,
        fields: Sequence[str] | bool = (),
        view: str = "memory",
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
