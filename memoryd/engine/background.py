"""Background jobs off the request path (extraction now, embedding later).

One daemon thread runs jobs in submission order. A job's failure is logged and
counted, never raised to whoever submitted it. ``join()`` waits for the queue to
drain: tests use it, and so does a graceful shutdown, so pending work is not lost.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from memoryd.priority import lower_this_thread

log = logging.getLogger(__name__)


class BackgroundWorker:
    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: queue.Queue[tuple[Callable[..., Any], tuple[Any, ...]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"memoryd-{name}", daemon=True)
        self._closed = False
        self._lock = threading.Lock()
        self.submitted = 0
        self.completed = 0
        self.failed = 0
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Queue ``fn(*args)``; False (and nothing queued) once the worker is closed."""
        with self._lock:
            if self._closed:
                return False
            self.submitted += 1
            self._queue.put((fn, args))
        return True

    def _run(self) -> None:
        lower_this_thread()  # a request's thread comes first for a core
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                fn, args = item
                try:
                    fn(*args)
                    self.completed += 1
                except Exception:
                    self.failed += 1
                    log.exception("background job failed", extra={"worker": self.name})
            finally:
                self._queue.task_done()

    @property
    def pending(self) -> int:
        return self.submitted - self.completed - self.failed

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every job submitted so far has run; False on timeout."""
        done = threading.Event()

        def waiter() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        return done.wait(timeout)

    def stop(self, timeout: float | None) -> int:
        """Take no more jobs, drop the queued ones not started (each extraction job is
        in its table: the next start, or another server, runs it), and wait up to
        ``timeout`` for the one running. How many were dropped."""
        dropped = 0
        with self._lock:
            self._closed = True
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                self._queue.task_done()
                dropped += item is not None
            self._queue.put(None)
        self._thread.join(timeout)
        return dropped

    def close(self, timeout: float | None = 30.0) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join(timeout)
