"""The engine's lifecycle calls (summaries, decay, expiry, clearing, export and
import): ``MemoryEngine`` inherits them, ``engine.lifecycle`` does the work."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, cast

from memoryd.engine import erasure, lifecycle, quarantine
from memoryd.engine.reports import DecayReport, ImportResult, SessionSummary, SummaryReport
from memoryd.engine.validation import require_owner
from memoryd.models import Erasure, Held, Reconciled, utcnow


class Lifecycle:
    @property
    def _host(self) -> lifecycle.LifecycleHost:
        return cast(lifecycle.LifecycleHost, self)

    def summarize(
        self, owner: str, session_id: str | None = None, max_tokens: int = 4000
    ) -> SessionSummary:
        return lifecycle.summarize(self._host, require_owner(owner), session_id, max_tokens)

    def summarize_older_than(self, owner: str, days: int, **options: Any) -> SummaryReport:
        """``lifecycle.summarize_older_than`` (``dry_run``, ``user_id``)."""
        return lifecycle.summarize_older_than(self._host, require_owner(owner), days, **options)

    def summarize_every_owner(self, days: int, *, dry_run: bool = False) -> SummaryReport:
        """``summarize_older_than`` for each owner, one after another (never merged)."""
        return lifecycle.summarize_every_owner(self._host, days, dry_run=dry_run)

    def sweep_decay(
        self, *, dry_run: bool = False, owner: str | None = None, now: datetime | None = None
    ) -> DecayReport:
        return lifecycle.sweep_decay(self._host, dry_run=dry_run, owner=owner, now=now)

    def gc(self, now: datetime | None = None) -> int:
        return lifecycle.delete_expired(self._host, now or utcnow())

    def clear(self, owner: str, **filters: Any) -> int:
        """``lifecycle.clear``: every match of ``type``, ``older_than``, ``user_id``."""
        return lifecycle.clear(self._host, require_owner(owner), **filters)

    def forget(self, owner: str, user_id: str | None = None) -> Erasure:
        """``erasure.forget``: one end user of the key (``user_id``), or all of it."""
        return erasure.forget(self._host, require_owner(owner), user_id)

    def erasures(self, owner: str | None = None, limit: int = 100) -> list[Erasure]:
        """The erasure receipts, newest first (every key's with ``owner`` None)."""
        return erasure.receipts(self._host, require_owner(owner) if owner else None, limit)

    def held(
        self, owner: str | None = None, user_id: str | None = None, limit: int = 100
    ) -> list[Held]:
        """Messages the guard held for review (``quarantine``), newest first."""
        owner = require_owner(owner) if owner else None
        return quarantine.listed(self._quarantine, owner, user_id, limit)

    def release_held(self, held_id: int, owner: str | None = None) -> list[Reconciled]:
        """Extract a held message as if the guard had let it pass (``owner``: only its)."""
        return quarantine.release(self._quarantine, held_id, owner)

    def discard_held(self, held_id: int, owner: str | None = None) -> Held:
        return quarantine.discard(self._quarantine, held_id, owner)

    @property
    def _quarantine(self) -> quarantine.QuarantineHost:
        return cast(quarantine.QuarantineHost, self)

    def export(self, owner: str, user_id: str | None = None) -> Iterator[dict[str, Any]]:
        return lifecycle.export(self._host, require_owner(owner), user_id)

    def import_jsonl(
        self, lines: Iterable[str | bytes], *, owner: str | None = None, user_id: str | None = None
    ) -> ImportResult:
        owner = require_owner(owner) if owner is not None else None
        return lifecycle.import_jsonl(self._host, lines, owner=owner, user_id=user_id)
