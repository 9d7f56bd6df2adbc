"""Counters of LLM extraction and the tokens it spent this UTC day.

Apart from the call (``engine.llm_extraction``) so the collaborators of the extraction
path (``engine.extraction_clients``) can name them without importing the call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memoryd.core.llm_ops import REASONS, LlmOp, Reason
from memoryd.models import utcnow

if TYPE_CHECKING:
    from memoryd.storage.base import Store

log = logging.getLogger("memoryd.engine.llm_extraction")  # its name before the move

USAGE_KEY = "extraction.llmUsage"


def _utc_day() -> str:
    return utcnow().date().isoformat()


class LlmStats:
    """Thread-safe counters of LLM extraction, and the tokens spent this UTC day.

    With a database the day's total is also kept in the settings table
    (``USAGE_KEY``), so a restart does not reset the daily cap."""

    def __init__(self, store: Store | None = None, today: Callable[[], str] = _utc_day) -> None:
        self._store, self._today = store, today
        self._lock = threading.Lock()
        names = ("calls", "requests", "ok", "promptTokens", "completionTokens")
        self._counts: dict[str, int] = dict.fromkeys(names, 0)
        self._fallbacks: dict[str, int] = dict.fromkeys(REASONS, 0)
        self._applied: dict[str, int] = dict.fromkeys(("add", "update", "delete", "none"), 0)
        self._day: str | None = None  # None until read from the database
        self._tokens_today = 0
        self._last_error: str | None = None
        #: per key: upstream requests, prompt and completion tokens (cost per key)
        self._by_key: dict[str, list[int]] = {}

    def _roll(self) -> None:
        """Start a new day's total when the UTC day changed (the lock is held)."""
        day = self._today()
        if self._day is None and self._store is not None:
            stored = self._store.read().setting(USAGE_KEY)
            if isinstance(stored, dict) and stored.get("day") == day:
                tokens = stored.get("tokens")
                self._tokens_today = tokens if isinstance(tokens, int) and tokens > 0 else 0
                self._day = day
        if self._day != day:
            self._day, self._tokens_today = day, 0

    def tokens_today(self) -> int:
        with self._lock:
            self._roll()
            return self._tokens_today

    def record_request(self, owner: str = "") -> None:
        with self._lock:
            self._counts["requests"] += 1
            if owner:
                self._by_key.setdefault(owner, [0, 0, 0])[0] += 1

    def record_usage(self, prompt: int, completion: int, owner: str = "") -> None:
        with self._lock:
            self._roll()
            self._counts["promptTokens"] += prompt
            self._counts["completionTokens"] += completion
            if owner:
                spent = self._by_key.setdefault(owner, [0, 0, 0])
                spent[1] += prompt
                spent[2] += completion
            self._tokens_today += prompt + completion
            usage = {"day": self._day, "tokens": self._tokens_today}
        if self._store is not None:
            try:  # queued, not awaited: the writer keeps the order, the last total wins
                self._store.submit(lambda tx: tx.write_settings({USAGE_KEY: usage}, utcnow()))
            except Exception as exc:
                log.warning("could not keep the LLM extraction token total: %s", exc)

    def record_ok(self, ops: Sequence[LlmOp]) -> None:
        with self._lock:
            self._counts["calls"] += 1
            self._counts["ok"] += 1
            for op in ops:
                self._applied[op.op.lower()] += 1

    def record_fallback(self, reason: Reason, message: str) -> None:
        with self._lock:
            self._counts["calls"] += 1
            self._fallbacks[reason] += 1
            self._last_error = f"{reason}: {message}"[:300]

    def snapshot(self) -> dict[str, Any]:
        """``calls`` counts runs (ok + fallbacks), ``requests`` the upstream calls made."""
        with self._lock:
            self._roll()
            return {
                **self._counts,
                "fallbacks": dict(self._fallbacks),
                "applied": dict(self._applied),
                "tokensToday": self._tokens_today,
                "day": self._day,
                "lastError": self._last_error,
                "byKey": {
                    k: {"requests": r, "promptTokens": p, "completionTokens": c}
                    for k, (r, p, c) in self._by_key.items()
                },
            }
