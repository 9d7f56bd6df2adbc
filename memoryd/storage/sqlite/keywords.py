"""Owners' keyword postings kept in memory: FTS5's own BM25 scores, without its per-row
cost.

FTS5 ranks a query by calling ``bm25()`` on every row that matches it, a position list
and a size record read each, about 2 us a row: a person's name in a query matches
nearly all of that person's memories, so a search of an owner with 650 memories spent
1.6 ms ranking them, half of a static-embedder hybrid search. An owner with at least
``min_rows`` memories (and at most ``MAX_ROWS``) gets a copy of its postings instead:
per term, the rows that hold it and how often in each column, tokenized by FTS5's own
tokenizer (through apsw), as numpy arrays; a query is a few array operations.

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
- **Bounded.** A build tokenizes every row of the owner (~0.1 ms a row), so owners
  above ``MAX_ROWS`` stay in SQL; copies share ``budget_bytes``, least recently used
  out first. Queries whose words FTS5 would read as phrases go to SQL too.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw
import numpy as np

from memoryd.cache import TTLCache, evict_to_budget
from memoryd.models import Memory
from memoryd.storage.base import Filter
from memoryd.storage.rows import COLUMNS, NCOLS, row_to_memory
from memoryd.storage.sql.memories import filter_sql
from memoryd.storage.sqlite.vectors import owner_rows

#: FTS5's ``bm25()`` constants.
K1 = 1.2
B = 0.75
#: Owners above this many memories keep the SQL search (a build tokenizes every row).
MAX_ROWS = 10_000
#: Candidates ranked per wanted hit before the filter checks them (``dialect``'s too).
BEST_FIRST = 4
#: Checked beyond ``limit`` first; the rest of the candidates only when too few pass.
FIRST_EXTRA = 8
#: Overlay rows past which a copy is rebuilt: an eighth of it, and at least this many.
MIN_OVERLAY = 64
SIZE_TTL_S = 30.0
#: The tokenizer migration 0011 gives ``memory_fts``.
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])

#: A row's length in tokens (all columns, as ``bm25()`` counts it) and per term its
#: occurrences in content, key and context.
Terms = dict[str, list[int]]
#: Column weights: content, key, context.
Weights = tuple[float, float, float]


class Tokenizer:
    """FTS5's tokenizer on a private in-memory connection (the same code as the
    file's index, so the same tokens)."""

    def __init__(self) -> None:
        self._conn = apsw.Connection(":memory:")
        self._tokenize = self._conn.fts5_tokenizer(*TOKENIZER)
        self._lock = threading.Lock()

    def _run(self, text: str | None, reason: int) -> list[str]:
        if not text:
            return []
        with self._lock:
            found = self._tokenize(text.encode("utf-8"), reason, None, include_offsets=False)
        return [str(t[0]) for t in found]

    def document(self, text: str | None) -> list[str]:
        return self._run(text, apsw.FTS5_TOKENIZE_DOCUMENT)

    def query(self, word: str) -> list[str]:
        return self._run(word, apsw.FTS5_TOKENIZE_QUERY)

    def row(
        self, content: str, key: str | None, context: str | None, scope: str
    ) -> tuple[int, Terms]:
        terms: Terms = {}
        length = 0
        for column, text in enumerate((content, key, context)):
            tokens = self.document(text)
            length += len(tokens)
            for token in tokens:
                counts = terms.get(token)
                if counts is None:
                    counts = terms[token] = [0, 0, 0]
                counts[column] += 1
        return length + len(self.document(scope)), terms


def varints(blob: bytes) -> list[int]:
    """SQLite's varints (FTS5's averages record is a list of them)."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def averages(conn: Any) -> tuple[int, int]:
    """``(rows, tokens in every column)`` of the whole index: FTS5's own figures."""
    row = conn.execute("SELECT block FROM memory_fts_data WHERE id = 1").fetchone()
    values = varints(bytes(row[0])) if row is not None and row[0] else []
    return (values[0], sum(values[1:])) if values else (0, 0)


def last_change(conn: Any) -> int:
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM kw_changes").fetchone()[0])


@dataclass
class _Copy:
    """One owner's postings: a term's entries are ``rows[offsets[t]:offsets[t + 1]]``
    with their counts in ``counts``; rows changed since the build live in ``overlay``
    (their base entries are dead in ``live``)."""

    seen: int
    vocab: dict[str, int]
    offsets: np.ndarray
    rows: np.ndarray
    counts: np.ndarray
    seqs: np.ndarray
    lengths: np.ndarray
    live: np.ndarray
    position: dict[int, int]
    overlay: dict[int, tuple[int, Terms]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def build(cls, seen: int, parsed: Sequence[tuple[int, int, Terms]]) -> _Copy:
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        rows: list[int] = []
        counts: list[list[int]] = []
        for row, (_, _, terms) in enumerate(parsed):
            for term, per_column in terms.items():
                term_ids.append(vocab.setdefault(term, len(vocab)))
                rows.append(row)
                counts.append(per_column)
        ids = np.asarray(term_ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(ids, minlength=len(vocab)), out=offsets[1:])
        seqs = np.fromiter((p[0] for p in parsed), dtype=np.int64, count=len(parsed))
        return cls(
            seen=seen,
            vocab=vocab,
            offsets=offsets,
            rows=np.asarray(rows, dtype=np.int32)[order],
            counts=np.asarray(counts, dtype=np.float64).reshape(-1, 3)[order],
            seqs=seqs,
            lengths=np.fromiter((p[1] for p in parsed), dtype=np.float64, count=len(parsed)),
            live=np.ones(len(parsed), dtype=bool),
            position={int(s): i for i, s in enumerate(seqs)},
        )

    @property
    def size(self) -> int:
        return int(self.live.sum()) + len(self.overlay)

    @property
    def nbytes(self) -> int:
        arrays = (self.offsets, self.rows, self.counts, self.seqs, self.lengths, self.live)
        return sum(a.nbytes for a in arrays) + 120 * (len(self.vocab) + len(self.position))

    def put(self, seq: int, length: int, terms: Terms) -> None:
        row = self.position.get(seq)
        if row is not None:
            self.live[row] = False
        self.overlay[seq] = (length, terms)

    def drop(self, seq: int) -> None:
        row = self.position.get(seq)
        if row is not None:
            self.live[row] = False
        self.overlay.pop(seq, None)

    def stale(self) -> bool:
        return len(self.overlay) > max(MIN_OVERLAY, len(self.seqs) // 8)

    def score(
        self,
        phrases: Sequence[tuple[str, float]],
        weights: tuple[float, float, float],
        avgdl: float,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(seqs, bm25 scores)`` of every row a phrase matches in a weighted column,
        summed phrase by phrase in query order, as FTS5 does."""
        scores = np.zeros(len(self.seqs))
        matched = np.zeros(len(self.seqs), dtype=bool)
        w = np.asarray(weights)
        for term, idf in phrases:
            tid = self.vocab.get(term)
            if tid is None:
                continue
            lo, hi = int(self.offsets[tid]), int(self.offsets[tid + 1])
            rows, freq = self.rows[lo:hi], self.counts[lo:hi] @ w
            hit = freq > 0
            if not hit.all():
                rows, freq = rows[hit], freq[hit]
            norm = K1 * (1 - B + B * self.lengths[rows] / avgdl)
            scores[rows] += idf * ((freq * (K1 + 1)) / (freq + norm))
            matched[rows] = True
        found = np.flatnonzero(matched & self.live)
        seqs, values = self.seqs[found], scores[found]
        extra = [(seq, total) for seq, total in self._overlay_scores(phrases, weights, avgdl)]
        if extra:
            seqs = np.concatenate([seqs, np.fromiter((e[0] for e in extra), dtype=np.int64)])
            values = np.concatenate([values, np.fromiter((e[1] for e in extra), dtype=np.float64)])
        return seqs, values

    def _overlay_scores(
        self,
        phrases: Sequence[tuple[str, float]],
        weights: tuple[float, float, float],
        avgdl: float,
    ) -> Iterator[tuple[int, float]]:
        for seq, (length, terms) in self.overlay.items():
            total, hit_any = 0.0, False
            for term, idf in phrases:
                per_column = terms.get(term)
                if per_column is None:
                    continue
                freq = sum(c * x for c, x in zip(per_column, weights, strict=True))
                if freq <= 0:
                    continue
                hit_any = True
                total += idf * ((freq * (K1 + 1)) / (freq + K1 * (1 - B + B * length / avgdl)))
            if hit_any:
                yield seq, total


def best(seqs: np.ndarray, scores: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The ``n`` highest scores as ``(seq, score)``, ties to the older row."""
    if n < len(seqs):
        cut = np.partition(scores, len(scores) - n)[len(scores) - n]
        keep = np.flatnonzero(scores >= cut)  # ties at the cut stay in, sorted below
        seqs, scores = seqs[keep], scores[keep]
    order = np.lexsort((seqs, -scores))[:n]
    return list(zip(seqs[order].tolist(), scores[order].tolist(), strict=True))


class ResidentKeywords:
    """The resident keyword copies of one SQLite file (one per process)."""

    def __init__(
        self, *, min_rows: int, budget_bytes: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.min_rows = min_rows
        self.budget_bytes = budget_bytes
        self.tokenizer = Tokenizer()
        self._copies: OrderedDict[str, _Copy] = OrderedDict()
        self._sizes: TTLCache[str, int] = TTLCache(4096, SIZE_TTL_S, clock=clock)
        self._lock = threading.Lock()
        self.searches = 0
        self.fallbacks = 0
        self.builds = 0

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
    ) -> list[tuple[Memory, float]] | None:
        """The SQL keyword search's answer for one owner's query words (after the
        dialect's choice of words), or None when the SQL search should give it.
        ``doc_count(word)``: the file's rows with ``word`` in the searched columns,
        exact for the caller's snapshot (FTS5's IDF counts them so)."""
        if not self.enabled or not words or flt.owners is None or len(flt.owners) != 1:
            return None
        owner = flt.owners[0]
        if not self.min_rows <= self._owner_rows(conn, owner) <= MAX_ROWS:
            if owner in self._copies:  # it outgrew (or shrank below) its copy
                with self._lock:
                    self._copies.pop(owner, None)
            return None
        stems = [self.tokenizer.query(word) for word in words]
        if any(len(s) != 1 for s in stems):
            return None  # FTS5 would read a phrase there
        copy = self._current(conn, owner)
        if copy is None:
            return None
        rows, tokens = averages(conn)
        if rows <= 0:
            return []
        phrases = [
            (s[0], _idf(rows, doc_count(word))) for s, word in zip(stems, words, strict=True)
        ]
        weights = (1.0, 0.5, context_weight if context_weight > 0 else 0.0)
        with copy.lock:
            seqs, scores = copy.score(phrases, weights, tokens / rows)
        candidates = best(seqs, scores, max(limit, 1) * BEST_FIRST)
        first = min(len(candidates), limit + max(limit // 2, FIRST_EXTRA))
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

    def _current(self, conn: Any, owner: str) -> _Copy | None:
        """The owner's copy brought up to the caller's snapshot (built on first use)."""
        with self._lock:
            copy = self._copies.get(owner)
            if copy is not None:
                self._copies.move_to_end(owner)
        if copy is not None:
            with copy.lock:
                if self._catch_up(conn, copy, owner) and not copy.stale():
                    return copy
        return self._build(conn, owner)

    def _catch_up(self, conn: Any, copy: _Copy, owner: str) -> bool:
        """Apply the logged changes since ``copy.seen``; False when the log no longer
        reaches back that far (the copy must be rebuilt)."""
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
        for seq, (_, _, row_owner, content, key, context, scope) in latest.items():
            if row_owner == owner:
                copy.put(seq, *self.tokenizer.row(content, key, context, scope))
            else:
                copy.drop(seq)
        copy.seen = int(changes[-1][0])
        return True

    def _build(self, conn: Any, owner: str) -> _Copy | None:
        seen = last_change(conn)  # first: a change after it is applied again later
        rows = conn.execute(
            "SELECT seq, content, key, context, fts_scope FROM memories WHERE api_key_id = ?",
            [owner],
        ).fetchall()
        copy = None
        if len(rows) <= MAX_ROWS:
            parsed = [(int(r[0]), *self.tokenizer.row(r[1], r[2], r[3], r[4])) for r in rows]
            copy = _Copy.build(seen, parsed)
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
                "maxRows": MAX_ROWS,
                "owners": len(copies),
                "memories": sum(c.size for c in copies),
                "mb": round(sum(c.nbytes for c in copies) / 2**20, 1),
                "searches": self.searches,
                "fallbacks": self.fallbacks,
                "builds": self.builds,
            }


def _idf(rows: int, hits: int) -> float:
    """FTS5's IDF: floored at 1e-6 for a term in half the rows or more."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else 1e-6


def passing_best(
    conn: Any, candidates: Sequence[tuple[int, float]], where: str, params: list[Any], limit: int
) -> list[tuple[Memory, float]]:
    """The first ``limit`` of the ranked ``(seq, score)`` candidates the filter
    (``where``, ``params``) lets through, as ``(memory, score)``, best first."""
    if not candidates:
        return []
    rows = conn.execute(
        f"SELECT {COLUMNS}, c.key FROM json_each(?) c CROSS JOIN memories m "
        f"ON m.seq = c.value WHERE {where} ORDER BY c.key LIMIT ?",
        [json.dumps([seq for seq, _ in candidates]), *params, limit],
    ).fetchall()
    return [(row_to_memory(r), candidates[r[NCOLS]][1]) for r in rows]
