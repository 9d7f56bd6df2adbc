"""Owners' keyword postings kept in memory: FTS5's own BM25 scores, without its per-row
cost.

FTS5 ranks a query by calling ``bm25()`` on every row that matches it, a position list
and a size record read each, about 2 us a row: a person's name in a query matches
nearly all of that person's memories, so a search of an owner with 650 memories spent
1.6 ms ranking them, half of a static-embedder hybrid search. An owner with at least
``min_rows`` memories (and at most ``MAX_ROWS``) gets a copy of its postings instead:
per term, the rows that hold it and how often in each column, tokenized by FTS5's own
tokenizer (through apsw), as numpy arrays (``postings.Postings``); a query is a few
array operations.

- **The same scores.** FTS5's formula (k1 1.2, b 0.75, the column weights) over the
  same file-wide figures FTS5 uses: the row count and column totals from its averages
  record, each term's document count from a MATCH count over the same columns (cached
  until the file changes). Rankings equal the SQL search's; tests compare them.
- **Fresh in every process.** ``kw_changes`` (migration 0013) logs every memory written,
  changed in an indexed column or deleted, whichever process does it. Before it
  searches, a copy applies the log since it last looked, inside the caller's snapshot,
  as an overlay of re-tokenized rows over its arrays; it is rebuilt when the overlay
  grows past an eighth of it or the log's pruning left it behind.
- **The filter still decides.** The best candidates go through the retrieval filter in
  SQL, and when fewer than ``limit`` pass, the SQL search answers (``dialect``'s rule).
- **Built where it costs no request.** A build tokenizes every row of the owner
  (~0.1 ms a row with the context column): up to ``sync_max_rows`` the search that
  first needs the copy builds it; a larger owner (up to ``MAX_ROWS``) gets it from a
  background thread, one build at a time, while the SQL search answers.
- **Bounded.** Copies share ``budget_bytes``, least recently used out first. Queries
  whose words FTS5 would read as phrases go to SQL.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from memoryd.cache import TTLCache, evict_to_budget
from memoryd.storage.base import Filter, KeywordHit
from memoryd.storage.rows import COLUMNS, NCOLS, row_to_memory
from memoryd.storage.sql.memories import filter_sql
from memoryd.storage.sqlite.postings import (
    Postings,
    Terms,
    Tokenizer,
    averages,
    best,
    idf,
)
from memoryd.storage.sqlite.vectors import first_checked, owner_rows

log = logging.getLogger(__name__)

#: Owners up to this many memories: the search that needs the copy builds it (at most
#: ~0.2 s, once); larger ones get it from a background thread, as every rebuild of a
#: copy whose overlay outgrew it does.
SYNC_MAX_ROWS = 2_000
#: Owners above this many memories keep the SQL search (a build is ~4-10 s at 100k).
MAX_ROWS = 250_000
#: A search applies at most this many of the owner's logged changes; more (an import)
#: and the copy is rebuilt instead.
CATCH_UP_MAX = 256
#: Candidates ranked per wanted hit before the filter checks them (``dialect``'s too).
BEST_FIRST = 4
SIZE_TTL_S = 30.0
#: A background build lets other threads run every this many rows (~1-3 ms of work).
YIELD_EVERY = 32


def last_change(conn: Any) -> int:
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM kw_changes").fetchone()[0])


class ResidentKeywords:
    """The resident keyword copies of one SQLite file (one per process)."""

    def __init__(
        self,
        *,
        min_rows: int,
        budget_bytes: int,
        sync_max_rows: int = SYNC_MAX_ROWS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_rows = min_rows
        self.budget_bytes = budget_bytes
        self.sync_max_rows = sync_max_rows
        self.tokenizer = Tokenizer()
        #: A read snapshot of the file for background builds (the store sets it); with
        #: none, owners above ``sync_max_rows`` stay in SQL.
        self.reader: Callable[[], contextlib.AbstractContextManager[Any]] | None = None
        self._copies: OrderedDict[str, Postings] = OrderedDict()
        self._sizes: TTLCache[str, int] = TTLCache(4096, SIZE_TTL_S, clock=clock)
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, None] = OrderedDict()
        self._builder: threading.Thread | None = None
        self.searches = 0
        self.fallbacks = 0
        self.builds = 0
        self.background_builds = 0
        self.last_build_s: float | None = None
        self._totals: tuple[int, tuple[int, int]] | None = None

    @property
    def enabled(self) -> bool:
        return self.budget_bytes > 0

    def search(
        self,
        conn: Any,
        words: Sequence[str],
        flt: Filter,
        limit: int,
        context_weight: float,
        doc_count: Callable[[str], int],
        latest: int | None = None,
    ) -> list[KeywordHit] | None:
        """The SQL keyword search's answer for one owner's query words (after the
        dialect's choice of words), or None when the SQL search should give it.
        ``doc_count(word)``: the file's rows with ``word`` in the searched columns,
        exact for the caller's snapshot (FTS5's IDF counts them so). ``latest``: the
        last ``kw_changes`` id in that snapshot, when the caller read it already (a
        copy that has seen it reads no log, and the index's averages are reused)."""
        if not self.enabled or not words or flt.owners is None or len(flt.owners) != 1:
            return None
        owner = flt.owners[0]
        size = self._owner_rows(conn, owner)
        if not self.min_rows <= size <= MAX_ROWS:
            if owner in self._copies:  # it outgrew (or shrank below) its copy
                with self._lock:
                    self._copies.pop(owner, None)
            return None
        stems = [self.tokenizer.query(word) for word in words]
        if any(len(s) != 1 for s in stems):
            return None  # FTS5 would read a phrase there
        copy = self._current(conn, owner, background=size > self.sync_max_rows, latest=latest)
        if copy is None:
            return None
        rows, tokens = self._averages(conn, latest)
        if rows <= 0:
            return []
        phrases = [(s[0], idf(rows, doc_count(word))) for s, word in zip(stems, words, strict=True)]
        weights = (1.0, 0.5, context_weight if context_weight > 0 else 0.0)
        with copy.lock:
            seqs, scores = copy.score(phrases, weights, tokens / rows)
        candidates = best(seqs, scores, max(limit, 1) * BEST_FIRST)
        first = min(len(candidates), first_checked(limit))
        where, params = filter_sql(flt)
        found = passing_best(conn, candidates[:first], where, params, limit)
        if len(found) < limit and first < len(candidates):
            found = passing_best(conn, candidates, where, params, limit)
        if len(found) < limit and len(candidates) < len(seqs):
            with self._lock:
                self.fallbacks += 1
            return None  # the filter keeps few of the best: the SQL search answers
        with self._lock:
            self.searches += 1
        return found

    def _owner_rows(self, conn: Any, owner: str) -> int:
        found, known = self._sizes.lookup(owner)
        if found and known is not None:
            return known
        count = owner_rows(conn, owner)
        self._sizes.set(owner, count)
        return count

    def _averages(self, conn: Any, latest: int | None) -> tuple[int, int]:
        """FTS5's row and token totals, read once per file state: they change only
        with what ``kw_changes`` logs (a row in or out, an indexed column changed)."""
        known = self._totals
        if latest is not None and known is not None and known[0] == latest:
            return known[1]
        totals = averages(conn)
        if latest is not None:
            self._totals = (latest, totals)
        return totals

    def _current(
        self, conn: Any, owner: str, *, background: bool, latest: int | None = None
    ) -> Postings | None:
        """The owner's copy brought up to the caller's snapshot, built on first use:
        here, or (``background``) by the builder thread while this search goes to SQL."""
        with self._lock:
            copy = self._copies.get(owner)
            if copy is not None:
                self._copies.move_to_end(owner)
        if copy is not None:
            with copy.lock:
                # nothing logged past what it has seen: no log to read
                fresh = (latest is not None and latest <= copy.seen) or self._catch_up(
                    conn, copy, owner
                )
                stale = copy.stale()
            if fresh:
                if stale:  # right, only slower: a new build replaces it when done
                    self._schedule(owner)
                return copy
        if not background:
            return self._build(conn, owner)
        self._schedule(owner)
        return None

    def _schedule(self, owner: str) -> None:
        with self._lock:
            if self.reader is None or owner in self._pending:
                return
            self._pending[owner] = None
            if self._builder is None:
                self._builder = threading.Thread(
                    target=self._build_pending, name="memoryd-keywords", daemon=True
                )
                self._builder.start()

    def _build_pending(self) -> None:
        """The builder thread: one owner at a time, in its own read snapshot, until
        none waits. A build that fails (the file closing) leaves the owner in SQL."""
        assert self.reader is not None
        while True:
            with self._lock:
                if not self._pending:
                    self._builder = None
                    return
                owner = next(iter(self._pending))
            try:
                start = time.perf_counter()
                with self.reader() as conn:
                    if self._build(conn, owner, background=True) is not None:
                        with self._lock:
                            self.background_builds += 1
                            self.last_build_s = time.perf_counter() - start
            except Exception:
                log.warning("keyword postings for one owner not built", exc_info=True)
            finally:
                with self._lock:
                    self._pending.pop(owner, None)

    def wait_for_builds(self, timeout: float | None = None) -> bool:
        """Block until no background build runs or waits (tests, the bench)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                builder = self._builder
            if builder is None:
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            builder.join(remaining)

    def _catch_up(self, conn: Any, copy: Postings, owner: str) -> bool:
        """Apply the logged changes since ``copy.seen``; False when the log no longer
        reaches back that far, or more than ``CATCH_UP_MAX`` of them are the owner's (the
        copy must be rebuilt)."""
        mine = "CASE WHEN m.api_key_id = ?1 THEN m.{} END"  # others' text is not read
        changes = conn.execute(
            "SELECT c.id, c.seq, m.api_key_id, "
            + ", ".join(mine.format(col) for col in ("content", "key", "context", "fts_scope"))
            + " FROM kw_changes c LEFT JOIN memories m ON m.seq = c.seq WHERE c.id > ?2 "
            "ORDER BY c.id",
            [owner, copy.seen],
        ).fetchall()
        if not changes:
            return True
        first = conn.execute("SELECT min(id) FROM kw_changes").fetchone()[0]
        if first is not None and first > copy.seen + 1:
            return False
        latest = {int(row[1]): row for row in changes}  # each row's state now, once
        if sum(1 for row in latest.values() if row[2] == owner) > CATCH_UP_MAX:
            return False  # a bulk write: rebuilding costs what tokenizing them would
        for seq, (_, _, row_owner, content, key, context, scope) in latest.items():
            if row_owner == owner:
                copy.put(seq, *self.tokenizer.row(content, key, context, scope))
            else:
                copy.drop(seq)
        copy.seen = int(changes[-1][0])
        return True

    def _parse(self, rows: Sequence[Any], *, yielding: bool) -> Iterator[tuple[int, int, Terms]]:
        for i, (seq, content, key, context, scope) in enumerate(rows):
            if yielding and i % YIELD_EVERY == 0:
                time.sleep(0)  # hand the GIL to waiting searches: a build takes seconds
            yield (int(seq), *self.tokenizer.row(content, key, context, scope))

    def _build(self, conn: Any, owner: str, *, background: bool = False) -> Postings | None:
        seen = last_change(conn)  # first: a change after it is applied again later
        rows = conn.execute(
            "SELECT seq, content, key, context, fts_scope FROM memories WHERE api_key_id = ?",
            [owner],
        ).fetchall()
        copy = None
        if len(rows) <= MAX_ROWS:
            copy = Postings.build(seen, self._parse(rows, yielding=background))
        if copy is None or copy.nbytes > self.budget_bytes:
            with self._lock:  # an owner that outgrew its copy keeps no stale one
                self._copies.pop(owner, None)
            return None
        with self._lock:
            self._copies[owner] = copy
            self.builds += 1
            evict_to_budget(self._copies, self.budget_bytes, lambda c: c.nbytes)
        return copy

    def stats(self) -> dict[str, Any]:
        with self._lock:
            copies = list(self._copies.values())
            return {
                "minRows": self.min_rows,
                "syncMaxRows": self.sync_max_rows,
                "maxRows": MAX_ROWS,
                "owners": len(copies),
                "memories": sum(c.size for c in copies),
                "mb": round(sum(c.nbytes for c in copies) / 2**20, 1),
                "searches": self.searches,
                "fallbacks": self.fallbacks,
                "builds": self.builds,
                "backgroundBuilds": self.background_builds,
                "building": len(self._pending),
                "lastBackgroundBuildS": (
                    None if self.last_build_s is None else round(self.last_build_s, 2)
                ),
            }


def passing_best(
    conn: Any, candidates: Sequence[tuple[int, float]], where: str, params: list[Any], limit: int
) -> list[KeywordHit]:
    """The first ``limit`` of the ranked ``(seq, score)`` candidates the filter
    (``where``, ``params``) lets through, best first."""
    if not candidates:
        return []
    seqs = json.dumps([seq for seq, _ in candidates])
    join = f"SELECT {COLUMNS}, c.key FROM json_each(?) c CROSS JOIN memories m ON m.seq = c.value"
    if len(candidates) <= first_checked(limit):
        # Few beyond ``limit``: every passing row, sorted here, costs less than SQL's
        # temporary B-tree for the ORDER BY (120 against 160 us for 60 candidates).
        rows = conn.execute(f"{join} WHERE {where}", [seqs, *params]).fetchall()
        rows = sorted(rows, key=lambda r: r[NCOLS])[:limit]
    else:
        rows = conn.execute(
            f"{join} WHERE {where} ORDER BY c.key LIMIT ?", [seqs, *params, limit]
        ).fetchall()
    return [KeywordHit(row_to_memory(r), candidates[r[NCOLS]][1]) for r in rows]
