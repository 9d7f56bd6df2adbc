"""Large owners' vectors kept in memory and searched exactly, with one matrix product.

sqlite-vec computes every distance inside SQL, about a microsecond a row with the join
and the filter: 0.3 ms for 200 memories, 1 ms for 600, 2.2 ms for 1k, 12 ms for 10k
and 200 ms for 100k, per view. An owner (one API key) with at least ``min_rows``
memories (200 by default, where a copy's ~0.3 ms starts to win) gets a resident copy
of each view instead: its unit-length
float32 vectors as one matrix, so a search is a product and an ``argpartition``
(0.6 ms at 10k, 8 ms at 100k for 384 dimensions). The search stays exact: no recall
is traded, so no approximate index to tune or to prove.

- **Fresh in every process.** Every vector written or dropped and every memory that
  changes owner appends its seq to ``vec_changes`` (SQLite triggers, whichever process
  writes). Before it searches, a copy applies the changes after the last one it saw,
  inside the caller's snapshot; one that the log's pruning left behind is rebuilt.
- **The filter still decides.** The copy knows only the owner; the best candidates go
  through the retrieval filter in SQL (end user, session, expiry, superseded), and when
  fewer than ``k`` pass, the filter is selective and the caller runs the SQL search,
  which is then cheap (it reads only the rows the filter's indexes keep).
- **One owner at a time.** A search over several owners (the global scope: the key
  and the global owner) asks each on its own and merges their nearest.
- **Bounded.** Copies hold at most ``budget_bytes`` together; the least recently used
  go first, and an owner too large for the budget alone is searched in SQL.

Float32 vectors only: an int8 store keeps its SQL search.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memoryd.cache import TTLCache, evict_to_budget
from memoryd.storage.base import Filter
from memoryd.storage.sqlite import vectors as vec_sql

#: Candidates checked against the filter per wanted hit (and at least ``MIN_CANDIDATES``).
OVERFETCH = 4
MIN_CANDIDATES = 64
#: How long an owner's memory count decides whether it gets a copy.
SIZE_TTL_S = 30.0


@dataclass
class _Copy:
    """One owner's vectors of one view: rows ``[0, size)`` of ``matrix`` are live."""

    dim: int
    seen: int
    matrix: np.ndarray
    seqs: np.ndarray
    size: int = 0
    rows: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.seqs.nbytes)

    def put(self, seq: int, vector: np.ndarray) -> None:
        row = self.rows.get(seq)
        if row is None:
            if self.size == len(self.seqs):
                grown = max(16, self.size + self.size // 2)
                self.matrix = np.resize(self.matrix, (grown, self.dim))
                self.seqs = np.resize(self.seqs, grown)
            row = self.rows[seq] = self.size
            self.size += 1
        self.matrix[row] = vector
        self.seqs[row] = seq

    def drop(self, seq: int) -> None:
        """Swap the last live row into the gap: the live rows stay contiguous."""
        row = self.rows.pop(seq, None)
        if row is None:
            return
        last = self.size - 1
        if row != last:
            moved = int(self.seqs[last])
            self.matrix[row] = self.matrix[last]
            self.seqs[row] = moved
            self.rows[moved] = row
        self.size = last

    def best(self, query: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The ``n`` highest cosines as ``(seq, cosine)``, best first."""
        if self.size == 0:
            return []
        scores = self.matrix[: self.size] @ query
        if n < self.size:
            top = np.argpartition(-scores, n - 1)[:n]
            top = top[np.argsort(-scores[top], kind="stable")]
        else:
            top = np.argsort(-scores, kind="stable")
        return [(int(self.seqs[i]), float(scores[i])) for i in top]


def _unit(blob: bytes | np.ndarray, dim: int) -> np.ndarray:
    vector = np.frombuffer(blob, dtype=np.float32, count=dim) if isinstance(blob, bytes) else blob
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm > 0 else vector).astype(np.float32, copy=False)


class ResidentVectors:
    """The resident copies of one SQLite file's vectors (one per process)."""

    def __init__(
        self,
        *,
        min_rows: int,
        budget_bytes: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_rows = min_rows
        self.budget_bytes = budget_bytes
        self._copies: OrderedDict[tuple[str, str], _Copy] = OrderedDict()
        self._sizes: TTLCache[str, int] = TTLCache(4096, SIZE_TTL_S, clock=clock)
        self._lock = threading.Lock()  # the copies and counters; each copy has its own lock
        self.searches = 0
        self.fallbacks = 0
        self.builds = 0

    @property
    def enabled(self) -> bool:
        return self.budget_bytes > 0

    def search(
        self, conn: Any, view: str, flt: Filter, query: np.ndarray, k: int, dim: int
    ) -> list[tuple[str, float]] | None:
        """``(id, cosine distance)`` of the ``k`` nearest rows ``flt`` lets through, or
        None when the SQL search should answer (a small owner, several owners: the caller
        asks one at a time, over budget, or a filter that keeps too few of the best
        candidates)."""
        if not self.enabled or flt.owners is None or len(flt.owners) != 1:
            return None
        owner = flt.owners[0]
        if self._owner_rows(conn, owner) < self.min_rows:
            return None
        copy = self._current(conn, owner, view, dim)
        if copy is None:
            return None
        wanted = max(k * OVERFETCH, MIN_CANDIDATES)
        with copy.lock:
            best = copy.best(_unit(np.asarray(query, dtype=np.float32), dim), wanted)
            total = copy.size
        hits = self._filtered(conn, best, flt, k)
        if len(hits) < k and len(best) < total:
            with self._lock:
                self.fallbacks += 1
            return None
        with self._lock:
            self.searches += 1
        return hits

    @staticmethod
    def _filtered(
        conn: Any, best: list[tuple[int, float]], flt: Filter, k: int
    ) -> list[tuple[str, float]]:
        """The first ``k`` of ``best`` the filter lets through, as ``(id, distance)``.

        The filter usually keeps nearly all of an owner's rows, so the first
        ``vec_sql.first_checked(k)`` candidates are checked first, the rest only when too
        few of those pass."""
        first = min(len(best), vec_sql.first_checked(k))
        ids = vec_sql.passing(conn, [seq for seq, _ in best[:first]], flt)
        if len(ids) < k and first < len(best):
            ids |= vec_sql.passing(conn, [seq for seq, _ in best[first:]], flt)
        return [(ids[seq], 1.0 - cos) for seq, cos in best if seq in ids][:k]

    def _owner_rows(self, conn: Any, owner: str) -> int:
        found, known = self._sizes.lookup(owner)
        if found and known is not None:
            return known
        count = vec_sql.owner_rows(conn, owner)
        self._sizes.set(owner, count)
        return count

    def _current(self, conn: Any, owner: str, view: str, dim: int) -> _Copy | None:
        """The owner's copy brought up to the caller's snapshot (built on first use)."""
        key = (owner, view)
        with self._lock:
            copy = self._copies.get(key)
            if copy is not None:
                self._copies.move_to_end(key)
        if copy is not None and copy.dim == dim:
            with copy.lock:
                if self._catch_up(conn, copy, owner, view):
                    return copy
        return self._build(conn, owner, view, dim)

    def _catch_up(self, conn: Any, copy: _Copy, owner: str, view: str) -> bool:
        """Apply the logged changes since ``copy.seen``; False when the log no longer
        reaches back that far (the copy must be rebuilt)."""
        changes = vec_sql.changes_since(conn, copy.seen, view)
        if not changes:
            return True
        first = vec_sql.first_change(conn)
        if first is not None and first > copy.seen + 1:
            return False
        blob_len = copy.dim * 4
        for change, seq, row_owner, blob in changes:
            if row_owner == owner and blob is not None and len(blob) == blob_len:
                copy.put(seq, _unit(bytes(blob), copy.dim))
            else:
                copy.drop(seq)
            copy.seen = change
        return True

    def _build(self, conn: Any, owner: str, view: str, dim: int) -> _Copy | None:
        seen = vec_sql.last_change(conn)  # first: a change after it is applied again later
        rows = vec_sql.owner_vectors(conn, owner, view, dim * 4)
        need = len(rows) * (dim * 4 + 8)
        if need > self.budget_bytes:
            return None
        matrix = np.frombuffer(b"".join(bytes(b) for _, b in rows), dtype=np.float32)
        matrix = matrix.reshape(len(rows), dim).copy()
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms > 0, norms, 1.0)
        seqs = np.fromiter((s for s, _ in rows), dtype=np.int64, count=len(rows))
        copy = _Copy(dim, seen, matrix, seqs, len(rows), {int(s): i for i, s in enumerate(seqs)})
        with self._lock:
            self._copies[(owner, view)] = copy
            self.builds += 1
            self._evict()
        return copy

    def _evict(self) -> None:
        evict_to_budget(self._copies, self.budget_bytes, lambda c: c.nbytes)

    def forget(self) -> None:
        """Drop every copy (a new embedder: the next search rebuilds)."""
        with self._lock:
            self._copies.clear()
            self._sizes.clear()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            copies = list(self._copies.items())
            return {
                "minRows": self.min_rows,
                "budgetMb": round(self.budget_bytes / 2**20, 1),
                "owners": len({owner for (owner, _), _ in copies}),
                "vectors": sum(c.size for _, c in copies),
                "mb": round(sum(c.nbytes for _, c in copies) / 2**20, 1),
                "searches": self.searches,
                "fallbacks": self.fallbacks,
                "builds": self.builds,
            }
