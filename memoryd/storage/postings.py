"""One owner's keyword postings as numpy arrays, scored with BM25: the structure behind
each store's resident keyword copies (``sqlite.keywords``, ``postgres.keywords``).

Per term, the rows that hold it and how often in each of three weighted columns; rows
changed since the build live in an overlay until the next build. Each store tokenizes
rows its own way (FTS5's tokenizer, PostgreSQL's ``tsvector``), so the scores equal its
own SQL search's over the same collection figures.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

#: BM25's constants, as FTS5's ``bm25()`` and ``core.bm25`` use them.
K1 = 1.2
B = 0.75
#: Overlay rows past which a copy is rebuilt: an eighth of it, and at least this many.
MIN_OVERLAY = 64

#: Per term, its occurrences in the three weighted columns (content, key, context).
Terms = dict[str, list[int]]
#: Column weights: content, key, context.
Weights = tuple[float, float, float]


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
        picks: frozenset[str] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(seqs, bm25 scores)`` of every row a phrase matches in a weighted column,
        summed phrase by phrase in query order, as FTS5 does. With ``picks``, only those
        terms make a row a candidate (the others still add to its score)."""
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
            if picks is None or term in picks:
                matched[rows] = True
        found = np.flatnonzero(matched & self.live)
        seqs, values = self.seqs[found], scores[found]
        extra = list(self._overlay_scores(phrases, weights, avgdl, picks))
        if extra:
            seqs = np.concatenate([seqs, np.fromiter((e[0] for e in extra), dtype=np.int64)])
            values = np.concatenate([values, np.fromiter((e[1] for e in extra), dtype=np.float64)])
        return seqs, values

    def _overlay_scores(
        self,
        phrases: Sequence[tuple[str, float]],
        weights: tuple[float, float, float],
        avgdl: float,
        picks: frozenset[str] | None = None,
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
                hit_any = hit_any or picks is None or term in picks
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
