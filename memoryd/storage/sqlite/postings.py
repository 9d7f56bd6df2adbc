"""One owner's keyword postings as numpy arrays, scored with FTS5's BM25.

The data structure behind ``keywords.ResidentKeywords``: per term, the rows that hold
it and how often in each column (content, key, context), tokenized by FTS5's own
tokenizer through apsw, so a query's scores equal ``bm25()``'s over the same file-wide
figures (FTS5's averages record and document counts). Rows changed since the build live
in an overlay until the next build.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw
import numpy as np

#: FTS5's ``bm25()`` constants.
K1 = 1.2
B = 0.75
#: Overlay rows past which a copy is rebuilt: an eighth of it, and at least this many.
MIN_OVERLAY = 64
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


@dataclass
class Postings:
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
    def build(cls, seen: int, parsed: Iterable[tuple[int, int, Terms]]) -> Postings:
        """From ``(seq, length, terms)`` rows, consumed one by one into flat arrays: a
        large owner's parsed rows never all exist at once."""
        vocab: dict[str, int] = {}
        term_ids, rows, counts = array("q"), array("i"), array("f")  # counts are exact
        seq_list, length_list = array("q"), array("d")
        for row, (seq, length, terms) in enumerate(parsed):
            seq_list.append(seq)
            length_list.append(length)
            for term, per_column in terms.items():
                term_ids.append(vocab.setdefault(term, len(vocab)))
                rows.append(row)
                counts.extend(per_column)
        ids = np.frombuffer(term_ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(ids, minlength=len(vocab)), out=offsets[1:])
        seqs = np.frombuffer(seq_list, dtype=np.int64).copy()
        return cls(
            seen=seen,
            vocab=vocab,
            offsets=offsets,
            rows=np.frombuffer(rows, dtype=np.int32)[order],
            counts=np.frombuffer(counts, dtype=np.float32).reshape(-1, 3)[order],
            seqs=seqs,
            lengths=np.frombuffer(length_list, dtype=np.float64).copy(),
            live=np.ones(len(seqs), dtype=bool),
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


def idf(rows: int, hits: int) -> float:
    """FTS5's IDF: floored at 1e-6 for a term in half the rows or more."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else 1e-6
