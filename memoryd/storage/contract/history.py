"""Keeping memories current: superseding what a new statement replaces, and the
history (and usage) an import brings back. Superseded rows stay, as history."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from memoryd.models import NewMemory, Reconcile, Reconciled


class HistoryWrites(Protocol):
    def reconcile(
        self, item: Reconcile, new: NewMemory | None, key: str, now: datetime
    ) -> Reconciled:
        """Upsert ``new`` (None: only retract), then supersede what it replaces: the
        owner's current memories in ``item.supersedes`` slots (``prefix:*`` = every
        slot under it) or with ``item.retract_ids``."""
        ...

    def restore_history(self, rows: Sequence[tuple[str, datetime, str | None]]) -> None:
        """Set ``(id, superseded_at, superseded_by)`` as an import found it."""
        ...

    def restore_usage(
        self, rows: Sequence[tuple[str, datetime | None, int, datetime | None]]
    ) -> None:
        """Set ``(id, updated_at, access_count, last_accessed_at)`` as another system
        kept them (a None time is left as it is)."""
        ...
