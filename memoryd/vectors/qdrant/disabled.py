"""The Qdrant tier when this install cannot run one (no sqlite-vec tier to feed it).

Settings still load and save (so an operator can prepare them), and every other
answer is the API's "not available" shape with the reason, so the engine, retrieval
and the routes treat the tier the same way whether or not it exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from memoryd.config import qdrant as qdrant_config
from memoryd.config.qdrant import QdrantConfig
from memoryd.config.settings import SettingsService
from memoryd.errors import ValidationError
from memoryd.storage.base import Filter, Store
from memoryd.vectors.base import TierSearch

REASON = "Qdrant needs the sqlite-vec tier, which is not available in this install"


class UnavailableTier:
    available = False

    def __init__(
        self, store: Store, settings: SettingsService, env: Mapping[str, str] | None = None
    ) -> None:
        self.store = store
        self.settings = settings
        self.env: Mapping[str, str] = env or {}
        caps = store.capabilities
        #: Why: sqlite-vec off (``MEMORY_DISABLE_VEC``) or not loadable, else not installed.
        self.reason = REASON if caps.vec else f"Qdrant needs the sqlite-vec tier: {caps.vec_reason}"

    def config(self) -> QdrantConfig:
        return qdrant_config.load(self.store, self.env)

    def update_config(self, partial: Mapping[str, Any]) -> QdrantConfig:
        """Stored for a later install that has the tier; ``enabled`` still picks the
        ``vectorStore`` setting, as with a live tier."""
        values = qdrant_config.validate_update(partial)
        qdrant_config.save(self.store, values)
        if "enabled" in values:
            self.settings.update({"vectorStore": "qdrant" if values["enabled"] else "auto"})
        return self.config()

    def search(self, vector: np.ndarray, k: int, flt: Filter, view: str = "memory") -> TierSearch:
        return TierSearch(None, None, None)  # silent: sqlite-vec absent is reported already

    def notify(self) -> None:
        return None

    def start_backfill(self, *, force: bool = False, reconcile: bool = False) -> dict[str, Any]:
        raise ValidationError(
            f"target qdrant: {self.reason}",
            details=[{"field": "target", "message": "qdrant not available"}],
        )

    def status(self) -> dict[str, Any]:
        return {
            "enabled": False,
            "healthy": None,
            "latencyMs": None,
            "error": None,
            "pointCount": None,
            "reason": self.reason,
        }

    def health(self) -> dict[str, Any]:
        return {"ok": False, "latencyMs": 0.0, "error": self.reason}

    def test_search(self, query: str, top_k: int, owner: str) -> dict[str, Any]:
        return {"ok": False, "results": [], "error": self.reason}

    def cleanup(self, retention_days: int | None = None) -> dict[str, Any]:
        days = retention_days or self.settings.get().retention_days or 3650
        return {"ok": False, "deletedCount": 0, "retentionDays": days, "error": self.reason}

    def join(self, timeout: float | None = None) -> bool:
        return True

    def close(self) -> None:
        return None
