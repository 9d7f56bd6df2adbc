"""The change feed: ``LISTEN memoryd_changes`` on a connection of its own.

Triggers (migration 0003) announce every committed change to a memory, a key or a
setting as ``"<table>:<key>"``; this thread hands each one to the store's watchers,
so a revoke on one server is in force on every other one within milliseconds rather
than after a cache TTL. A notification sent while the listening connection was down is
lost for good, so a lost connection is reported as ``Change(ANY)`` (drop every cache)
both when it breaks and when it is back; the caches' short TTLs cover the gap between.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from memoryd.storage.base import ANY, Change

log = logging.getLogger(__name__)

CHANNEL = "memoryd_changes"
#: How often the thread wakes to check for ``close()`` while nothing is announced.
POLL_S = 0.5
RETRY_S = (0.5, 1.0, 2.0, 5.0)


def parse(payload: str) -> Change:
    table, sep, key = payload.partition(":")
    return Change(table, key) if sep and table else Change(ANY)


class ChangeListener:
    """One thread, one connection, every watcher of one store."""

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0) -> None:
        self.url = url
        self.connect_timeout_s = connect_timeout_s
        self._watchers: list[Callable[[Change], None]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conn: psycopg.Connection[Any] | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.received = 0
        self.reconnects = 0
        self.listening = False

    def add(self, fn: Callable[[Change], None]) -> None:
        with self._lock:
            self._watchers.append(fn)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memoryd-pg-listen", daemon=True
                )
                self._thread.start()
        # Changes committed after ``watch`` returns must not be missed: wait (briefly)
        # for the LISTEN to be in place. A database that is down is reported by the
        # thread once it is back (Change(ANY)), so there is nothing to wait for then.
        self._ready.wait(self.connect_timeout_s)

    def status(self) -> dict[str, Any]:
        return {
            "listening": self.listening,
            "received": self.received,
            "reconnects": self.reconnects,
        }

    def _dispatch(self, change: Change) -> None:
        with self._lock:
            watchers = list(self._watchers)
        for fn in watchers:
            try:
                fn(change)
            except Exception:  # one watcher's bug must not stop the others' feed
                log.exception("a change watcher failed on %s", change)

    def _run(self) -> None:
        failures = 0
        connected_before = False
        while not self._stop.is_set():
            conn: psycopg.Connection[Any] | None = None
            try:
                conn = psycopg.connect(
                    self.url, autocommit=True, connect_timeout=max(1, int(self.connect_timeout_s))
                )
                conn.execute(f"LISTEN {CHANNEL}")
            except psycopg.Error as exc:
                if conn is not None:
                    with contextlib.suppress(psycopg.Error):
                        conn.close()
                self._ready.set()
                delay = RETRY_S[min(failures, len(RETRY_S) - 1)]
                failures += 1
                log.debug("change feed: cannot listen (%s); retrying in %.1f s", exc, delay)
                self._stop.wait(delay)
                continue
            self._conn = conn
            self.listening = True
            if failures or connected_before:
                self.reconnects += int(connected_before)
                self._dispatch(Change(ANY))  # whatever was announced while away
            failures = 0
            connected_before = True
            self._ready.set()
            try:
                while not self._stop.is_set():
                    for notify in conn.notifies(timeout=POLL_S):
                        self.received += 1
                        self._dispatch(parse(notify.payload))
            except psycopg.Error as exc:
                if not self._stop.is_set():
                    log.warning("change feed: the connection broke (%s); reconnecting", exc)
                    self._dispatch(Change(ANY))
                    failures = 1
            finally:
                self.listening = False
                self._conn = None
                with contextlib.suppress(psycopg.Error):
                    conn.close()
            if failures:
                self._stop.wait(RETRY_S[0])

    @property
    def backend_pid(self) -> int | None:
        """The listening connection's server process (what an outage test terminates)."""
        conn = self._conn
        return None if conn is None else conn.info.backend_pid

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=POLL_S * 4 + self.connect_timeout_s)
