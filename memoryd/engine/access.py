"""Access bookkeeping (``access_count``, ``last_accessed_at``), coalesced.

Every retrieval that injects memories bumps them. One writer transaction per chat for
that was a measurable share of the gateway's CPU (in a profile of the gateway: the writer's
commits 8%, the bump itself 3%); the counts only feed decay and the dashboard, which
need them within seconds, not per request. So bumps are summed in memory and written
once per ``interval_s`` (and on ``flush``: ``drain`` and ``close`` call it) in one
transaction. A crash loses at most the last interval's counts, never a memory.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from datetime import datetime

from memoryd.models import utcnow
from memoryd.storage.base import Store, Writer

#: Seconds between flushes while bumps arrive.
INTERVAL_S = 1.0


class AccessBumps:
    def __init__(
        self,
        store: Store,
        on_written: Callable[[list[str]], None],
        *,
        interval_s: float = INTERVAL_S,
    ) -> None:
        self.store, self.on_written, self.interval_s = store, on_written, interval_s
        self._pending: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def add(self, ids: Iterable[str]) -> None:
        with self._lock:
            self._pending.update(i for i in ids if i)
            if self._pending and self._timer is None and not self._closed:
                self._timer = threading.Timer(self.interval_s, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> Future[object] | None:
        """Write what is pending in one transaction (returns its future, if any)."""
        with self._flushing:  # a timer flush and ``close`` never interleave
            return self._flush()

    def _flush(self) -> Future[object] | None:
        with self._lock:
            pending, self._pending = self._pending, Counter()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if not pending:
            return None
        now = utcnow()
        # grouped by count: most ids were bumped once, so nearly always one UPDATE
        groups: dict[int, list[str]] = {}
        for memory_id, count in pending.items():
            groups.setdefault(count, []).append(memory_id)

        def write(tx: Writer) -> None:
            _bump_groups(tx, groups, now)

        future: Future[object] = self.store.submit(write)
        ids = list(pending)
        future.add_done_callback(lambda _: self.on_written(ids))
        return future

    def close(self, timeout: float = 30.0) -> None:
        """Write what is pending and wait for it, before the store closes. Bumps added
        afterwards are not counted (the engine is shutting down)."""
        with self._lock:
            self._closed = True
        with self._flushing:  # waits out a timer flush in progress
            future = self._flush()
        if future is not None:
            # a store fault at shutdown: the counts are advisory
            with contextlib.suppress(Exception):
                future.result(timeout)


def _bump_groups(tx: Writer, groups: dict[int, list[str]], now: datetime) -> None:
    """One UPDATE per distinct count: the memories a busy key's requests keep injecting
    are bumped dozens of times a second, and one UPDATE per unit of count was 6 % of
    the gateway's CPU under load."""
    tx.lock_memories([i for ids in groups.values() for i in ids])  # in one order
    for count, ids in groups.items():
        tx.bump_access(ids, now, times=count)
