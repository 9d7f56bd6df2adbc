"""Per-key quotas: how much one client key may keep, and how fast it may write.

A security review stored 814 ``memory_add`` calls of ~92 KB in 10 s with one key over
four MCP sessions; a disk filled that way answers 507 to every tenant. So each key (an
owner; all its end users together) has three limits, checked before a write the key
itself makes (MCP as that key, and the facts capture stores from its chats; an admin's
writes and imports are not limited):

- ``memories``: rows it keeps, history included (``MEMORYD_KEY_MAX_MEMORIES``);
- ``bytes``: their content and metadata as UTF-8 (``MEMORYD_KEY_MAX_BYTES``);
- ``writes``: writes a minute, at once and again each minute (``MEMORYD_KEY_WRITES_PER_MIN``).

A limit of 0 is none. Over a storage quota a write is a 413 ``quota_exceeded``, over
the rate a 429 with ``retry-after``; both name the quota. What a key keeps is read from
the store at most every ``refresh_s`` and counted forward in between (another server's
writes show at the next read), so the check costs no query on the write path.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from memoryd.config import QuotaLimits
from memoryd.errors import MemorydError
from memoryd.models import Reconcile
from memoryd.storage.base import Store

log = logging.getLogger(__name__)

REFRESH_S = 30.0


class QuotaExceededError(MemorydError):
    """A key over one of its quotas: 413 for what it keeps, 429 for its write rate."""

    code = "quota_exceeded"

    def __init__(self, quota: str, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message, details=[{"field": "quota", "message": quota}])
        self.quota = quota
        self.status = 429 if retry_after_s is not None else 413
        self.headers = {"x-memoryd-limit": f"quota-{quota}"}
        if retry_after_s is not None:
            self.headers["retry-after"] = str(max(1, math.ceil(retry_after_s)))


class Quotas:
    def __init__(
        self,
        store: Store,
        limits: QuotaLimits,
        *,
        refresh_s: float = REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store, self.limits, self.refresh_s = store, limits, refresh_s
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[int, int, float]] = {}  # owner: (rows, bytes, read at)
        self._rate: dict[str, tuple[float, float]] = {}  # owner: (writes left, at)

    def _usage(self, owner: str, max_age_s: float | None = None) -> tuple[int, int]:
        now = self._clock()
        with self._lock:
            known = self._kept.get(owner)
        age = self.refresh_s if max_age_s is None else max_age_s
        if known is not None and now - known[2] < age:
            return known[0], known[1]
        kept = self.store.read().usage(owner)
        with self._lock:
            self._kept[owner] = (kept.rows, kept.size, now)
        return kept.rows, kept.size

    def check(self, owner: str, sizes: list[int], *, rate: bool = True) -> None:
        """Raise ``QuotaExceededError`` unless ``owner`` may write rows of ``sizes``
        bytes now; when it may, they are counted (``rate``: against the write rate too).
        A refused write costs nothing."""
        limits = self.limits
        if not sizes:
            return
        if limits.memories or limits.bytes:
            rows, size = self._usage(owner)
            if self._over(rows, size, sizes):  # read again before refusing: a delete frees
                rows, size = self._usage(owner, max_age_s=1.0)
            if limits.memories and rows + len(sizes) > limits.memories:
                raise QuotaExceededError(
                    "memories",
                    f"quota exceeded (memories): this key keeps {rows} memories, its quota "
                    f"is {limits.memories} (MEMORYD_KEY_MAX_MEMORIES): delete some, or ask "
                    "the operator for more",
                )
            if limits.bytes and size + sum(sizes) > limits.bytes:
                raise QuotaExceededError(
                    "bytes",
                    f"quota exceeded (bytes): this key keeps {size} bytes of memories, its "
                    f"quota is {limits.bytes} (MEMORYD_KEY_MAX_BYTES): delete some, or ask "
                    "the operator for more",
                )
        if rate and limits.writes_per_min:
            self._take(owner, len(sizes))
        with self._lock:
            kept = self._kept.get(owner)
            if kept is not None:
                self._kept[owner] = (kept[0] + len(sizes), kept[1] + sum(sizes), kept[2])

    def _over(self, rows: int, size: int, sizes: list[int]) -> bool:
        limits = self.limits
        return bool(
            (limits.memories and rows + len(sizes) > limits.memories)
            or (limits.bytes and size + sum(sizes) > limits.bytes)
        )

    def _take(self, owner: str, writes: int) -> None:
        per_min = self.limits.writes_per_min
        now = self._clock()
        with self._lock:
            left, at = self._rate.get(owner, (float(per_min), now))
            left = min(float(per_min), left + (now - at) * per_min / 60.0)
            if left < writes:
                self._rate[owner] = (left, now)
                wait = (writes - left) * 60.0 / per_min
                raise QuotaExceededError(
                    "writes",
                    f"quota exceeded (writes): this key writes faster than its quota of "
                    f"{per_min} a minute "
                    f"(MEMORYD_KEY_WRITES_PER_MIN); retry in {max(1, math.ceil(wait))} s",
                    retry_after_s=wait,
                )
            self._rate[owner] = (left - writes, now)

    def report(self, owner: str) -> dict[str, Any]:
        """What ``owner`` keeps against its quotas (the key's usage, the dashboard)."""
        kept = self.store.read().usage(owner)
        limits = self.limits
        return {
            "memories": {"used": kept.rows, "limit": limits.memories},
            "bytes": {"used": kept.size, "limit": limits.bytes},
            "writesPerMinute": {"limit": limits.writes_per_min},
        }


def within(
    quotas: Quotas | None, owner: str, items: list[Reconcile], stats: dict[str, int]
) -> list[Reconcile]:
    """``items`` capture would store for ``owner``, or only the retractions when its new
    memories would pass what the key may keep (a full key still takes things back);
    counted as ``overQuota``. Chats are rate-limited already, so not the write rate."""
    sizes = [
        len(i.memory.content.encode()) + len(json.dumps(i.memory.metadata).encode())
        for i in items
        if i.memory is not None
    ]
    if quotas is None or not sizes:
        return items
    try:
        quotas.check(owner, sizes, rate=False)
    except QuotaExceededError as exc:
        stats["overQuota"] = stats.get("overQuota", 0) + len(sizes)
        log.warning("extraction: %d fact(s) not kept: over the %s quota", len(sizes), exc.quota)
        return [i for i in items if i.memory is None]
    return items
