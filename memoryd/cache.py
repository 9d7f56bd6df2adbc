"""A thread-safe LRU cache with a TTL and hit/miss counters.

Used for the memory read cache (docs/design/storage.md#read-cache: 60 s, 500 entries,
negative caching) and for embeddings. A hit refreshes recency (true LRU, unlike the
reference's FIFO); an expired entry counts as a miss and is dropped.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()
#: Invalidations remembered per key; older ones fold into a floor (a fill that began
#: before the floor is refused: safe, at worst one cache miss more).
_REMEMBERED = 4096


class TTLCache(Generic[K, V]):
    def __init__(
        self, maxsize: int, ttl_s: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.maxsize = max(1, int(maxsize))
        self.ttl_s = float(ttl_s)
        self._clock = clock
        self._data: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._generation = 0
        self._invalidated: OrderedDict[K, int] = OrderedDict()
        self._floor = 0

    def lookup(self, key: K) -> tuple[bool, V | None]:
        """``(found, value)``; ``found`` distinguishes a cached None from a miss."""
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                self.misses += 1
                return False, None
            stored_at, value = entry
            if self._clock() - stored_at >= self.ttl_s:
                del self._data[key]
                self.misses += 1
                return False, None
            self._data.move_to_end(key)
            self.hits += 1
            return True, value

    def get(self, key: K) -> V | None:
        return self.lookup(key)[1]

    def set(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = (self._clock(), value)
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def generation(self) -> int:
        """A token to take before reading the source of a value ``fill`` will store."""
        with self._lock:
            return self._generation

    def fill(self, key: K, value: V, generation: int) -> bool:
        """Store ``value`` read after ``generation()`` returned ``generation``, unless
        the key was invalidated since (then the value may be stale: not stored)."""
        with self._lock:
            if generation < self._floor or self._invalidated.get(key, -1) >= generation:
                return False
            self._data[key] = (self._clock(), value)
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
            return True

    def invalidate(self, key: K) -> None:
        with self._lock:
            self._data.pop(key, None)
            self._invalidated[key] = self._generation
            self._invalidated.move_to_end(key)
            self._generation += 1
            while len(self._invalidated) > _REMEMBERED:
                _, generation = self._invalidated.popitem(last=False)
                self._floor = max(self._floor, generation + 1)

    def clear(self, *, reset_stats: bool = True) -> None:
        with self._lock:
            self._data.clear()
            if reset_stats:
                self.hits = self.misses = 0
            self._generation += 1
            self._floor = self._generation
            self._invalidated.clear()

    def __len__(self) -> int:
        return len(self._data)

    def stats(self) -> dict[str, int | float]:
        with self._lock:
            total = self.hits + self.misses
            return {
                "hits": self.hits,
                "misses": self.misses,
                "size": len(self._data),
                "maxSize": self.maxsize,
                "hitRate": self.hits / total if total else 0.0,
            }


def evict_to_budget(items: OrderedDict[K, V], budget: int, size: Callable[[V], int]) -> None:
    """Drop the least recently used of ``items`` (oldest first in the order) until their
    ``size`` adds up to at most ``budget``; the newest always stays. The resident copies'
    one memory bound (vectors and keyword postings)."""
    held = sum(size(v) for v in items.values())
    while held > budget and len(items) > 1:
        _, gone = items.popitem(last=False)
        held -= size(gone)
