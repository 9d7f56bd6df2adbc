"""Large owners' keyword postings kept in memory on PostgreSQL.

The SQL search ranks every row that holds a query word: a name in the question matches
most of a large owner's memories, and at 100,000 memories per owner a search took 67 ms
(p50), nearly all of it in that ranking. An owner with at least ``min_rows`` memories
gets a copy of its postings instead, built from the stored ``tsvector`` (per lexeme the
positions of each weight: content A, key B, context C) into ``storage.postings``, so a
query is a few array operations with the SQL search's own BM25 figures.

- **Built where it costs no request.** The first search of a large owner schedules the
  build on a background thread (one at a time) and the SQL search answers meanwhile.
- **Fresh across servers.** The change feed (``changes.py``) names every memory
  committed by any server; a copy collects them from the moment its build starts and
  applies them, inside the caller's snapshot, before it answers: changed rows are read
  again into its overlay, deleted ones dropped. A lost feed (``Change(ANY)``) drops
  every copy. A write committed a few milliseconds before a search whose notice has not
  arrived yet is missed by the keyword tier of that one search (the vector tier still
  finds it).
- **The filter still decides.** The best candidates go through the retrieval filter in
  SQL; when fewer than ``limit`` pass, the SQL search answers.
- **Bounded.** Copies share ``budget_bytes``, least recently used out first.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryd.models import Memory
from memoryd.storage.base import ANY, Change, Filter, KeywordHit
from memoryd.storage.postgres.database import PgConn
from memoryd.storage.postings import Postings, Terms, best
from memoryd.storage.rows import COLUMNS, row_to_memory
from memoryd.storage.sql.memories import filter_sql

log = logging.getLogger(__name__)

#: A lexeme of ``tsvector::text`` and its positions, if kept ("'word':1A,5,7B").
_LEXEME = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")
_WEIGHT_COLUMN = {"A": 0, "B": 1, "C": 2, "D": 1}  # D scores as B does in SQL (0.5)
#: How long an owner's row count is trusted before it is counted again.
COUNT_TTL_S = 30.0
#: Candidates checked against the filter per needed result, before SQL takes over.
CHECKED_PER_RESULT = 4


def parse_tsvector(text: str) -> tuple[int, Terms]:
    """``(length, terms)`` of a ``tsvector``'s text: its number of lexemes (what SQL's
    ``length(tsv)`` counts), and per lexeme how many positions it has of each weight
    (content, key, context)."""
    terms: Terms = {}
    length = 0
    for lexeme, positions in _LEXEME.findall(text or ""):
        length += 1
        if not positions:
            continue  # a stripped lexeme scores nothing in SQL either
        counts = [0, 0, 0]
        for position in positions.split(","):
            counts[_WEIGHT_COLUMN.get(position[-1:], 1)] += 1
        terms[lexeme.replace("''", "'")] = counts
    return length, terms


@dataclass
class _Copy:
    postings: Postings
    ids: list[str]
    seq_of: dict[str, int]
    pending: set[str] = field(default_factory=set)


class ResidentKeywords:
    """Copies of large owners' postings for one PostgreSQL store (one per process)."""

    def __init__(self, db: Any, *, min_rows: int = 2000, budget_bytes: int = 256 * 2**20) -> None:
        self._db = db
        self.min_rows = min_rows
        self.budget_bytes = budget_bytes
        self._copies: OrderedDict[str, _Copy] = OrderedDict()
        self._counts: dict[str, tuple[float, int]] = {}
        self._building: dict[str, set[str]] = {}  # owner -> ids changed during its build
        self._queue: list[str] = []
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self.builds = 0
        self.last_build_s: float | None = None
        self.answered = 0

    def changed(self, change: Change) -> None:
        """The change feed's watcher: collect what the copies must read again."""
        with self._lock:
            if change.table == ANY:
                self._copies.clear()
                self._counts.clear()
                for pending in self._building.values():
                    pending.add(ANY)
            elif change.table == "memories" and change.key:
                for copy in self._copies.values():
                    copy.pending.add(change.key)
                for pending in self._building.values():
                    pending.add(change.key)

    def search(
        self,
        conn: Any,
        flt: Filter,
        phrases: Sequence[tuple[str, float]],
        picks: frozenset[str],
        weights: tuple[float, float, float],
        avgdl: float,
        limit: int,
    ) -> list[KeywordHit] | None:
        """The best ``limit`` memories for a single owner's filter from its copy, or
        None when the SQL search must answer (a small owner, no copy yet, too few
        candidates passing the filter)."""
        if self.min_rows <= 0 or flt.owners is None or len(flt.owners) != 1:
            return None
        owner = flt.owners[0]
        copy = self._copy(conn, owner)
        if copy is None:
            return None
        with copy.postings.lock:
            self._catch_up(conn, owner, copy)
            seqs, scores = copy.postings.score(phrases, weights, avgdl, picks)
        checked = max(limit * CHECKED_PER_RESULT, 50)
        ranked = best(seqs, scores, checked)
        ids = [copy.ids[seq] for seq, _ in ranked]
        passing = self._passing(conn, ids, flt) if ids else set()
        kept = [
            (mid, score)
            for mid, (_, score) in zip(ids, ranked, strict=True)
            if mid in passing and score > 0
        ]
        if len(kept) < limit and len(ranked) == checked:
            return None  # the filter took too many of the best: SQL ranks what passes
        kept = kept[:limit]
        found = self._memories(conn, [mid for mid, _ in kept])
        self.answered += 1
        return [KeywordHit(found[mid], score) for mid, score in kept if mid in found]

    # Both reads take their ids as one array parameter: the statement's text, and so its
    # conversion and plan, is the same whatever their number.

    @staticmethod
    def _passing(conn: Any, ids: list[str], flt: Filter) -> set[str]:
        where, params = filter_sql(flt)
        query = f"SELECT m.id FROM memories m WHERE m.id = ANY(?) AND {where}"
        return {str(r[0]) for r in conn.execute(query, [ids, *params])}

    @staticmethod
    def _memories(conn: Any, ids: list[str]) -> dict[str, Memory]:
        if not ids:
            return {}
        rows = conn.execute(f"SELECT {COLUMNS} FROM memories m WHERE m.id = ANY(?)", [ids])
        return {str(r[0]): row_to_memory(r) for r in rows}

    def _copy(self, conn: Any, owner: str) -> _Copy | None:
        with self._lock:
            copy = self._copies.get(owner)
            if copy is not None:
                self._copies.move_to_end(owner)
                return copy
            counted = self._counts.get(owner)
        now = time.monotonic()
        if counted is None or now - counted[0] > COUNT_TTL_S:
            (rows,) = conn.execute(
                "SELECT COUNT(*) FROM memories WHERE api_key_id = ?", [owner]
            ).fetchone()
            counted = (now, int(rows))
            with self._lock:
                self._counts[owner] = counted
        if counted[1] >= self.min_rows:
            self._schedule(owner)
        return None

    def _schedule(self, owner: str) -> None:
        with self._lock:
            if owner in self._building or owner in self._queue:
                return
            self._queue.append(owner)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._build_queued, name="memoryd-pg-keywords", daemon=True
                )
                self._worker.start()

    def _build_queued(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._worker = None
                    return
                owner = self._queue.pop(0)
                self._building[owner] = set()  # changes from now on are this copy's
            try:
                copy = self._build(owner)
            except Exception:  # the SQL search keeps answering
                log.warning("keyword copy of an owner could not be built", exc_info=True)
                copy = None
            with self._lock:
                pending = self._building.pop(owner, set())
                if copy is None or ANY in pending:
                    continue
                copy.pending |= pending
                self._copies[owner] = copy
                self._evict()

    def _build(self, owner: str) -> _Copy:
        started = time.perf_counter()
        ids: list[str] = []

        def rows() -> Any:
            with self._db.snapshot() as raw:
                for mid, tsv in PgConn(raw).execute(
                    "SELECT id, tsv::text FROM memories WHERE api_key_id = ?", [owner]
                ):
                    ids.append(str(mid))
                    length, terms = parse_tsvector(tsv)
                    yield len(ids) - 1, length, terms

        postings = Postings.build(0, rows())
        self.builds += 1
        self.last_build_s = time.perf_counter() - started
        return _Copy(postings, ids, {mid: i for i, mid in enumerate(ids)})

    def _catch_up(self, conn: Any, owner: str, copy: _Copy) -> None:
        """Apply the changes collected for ``copy`` (under its lock, in ``conn``'s
        snapshot); a copy whose overlay grew past an eighth of it is rebuilt."""
        with self._lock:
            changed, copy.pending = copy.pending, set()
        if not changed:
            return
        found = {
            str(mid): (str(key), tsv)
            for mid, key, tsv in conn.execute(
                "SELECT id, api_key_id, tsv::text FROM memories WHERE id = ANY(?)",
                [sorted(changed)],
            )
        }
        for mid in changed:
            seq = copy.seq_of.get(mid)
            row = found.get(mid)
            if row is None or row[0] != owner:
                if seq is not None:
                    copy.postings.drop(seq)
                continue
            if seq is None:
                seq = copy.seq_of[mid] = len(copy.ids)
                copy.ids.append(mid)
            length, terms = parse_tsvector(row[1])
            copy.postings.put(seq, length, terms)
        if copy.postings.stale():
            with self._lock:
                self._copies.pop(owner, None)
            self._schedule(owner)

    def _evict(self) -> None:
        total = sum(c.postings.nbytes for c in self._copies.values())
        while total > self.budget_bytes and len(self._copies) > 1:
            _, gone = self._copies.popitem(last=False)
            total -= gone.postings.nbytes

    def wait_for_builds(self, timeout: float = 600.0) -> bool:
        """Whether every scheduled build finished within ``timeout`` (benchmarks, tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._queue and not self._building:
                    return True
            time.sleep(0.02)
        return False

    def stats(self) -> dict[str, Any]:
        with self._lock:
            copies = list(self._copies.values())
        return {
            "owners": len(copies),
            "rows": sum(c.postings.size for c in copies),
            "mb": round(sum(c.postings.nbytes for c in copies) / 2**20, 1),
            "minRows": self.min_rows,
            "builds": self.builds,
            "answered": self.answered,
            "lastBackgroundBuildS": (
                None if self.last_build_s is None else round(self.last_build_s, 2)
            ),
        }
