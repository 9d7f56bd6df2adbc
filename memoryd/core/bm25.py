"""Okapi BM25 from term statistics, for stores whose own ranking is not BM25.

FTS5 ranks with BM25 (k1 1.2, b 0.75, content weighted 1.0 and key 0.5); PostgreSQL's
``ts_rank_cd`` ranks by cover density and knows no document frequencies, which cost
LoCoMo recall@10 .065 in our measurement. The PostgreSQL store re-scores its keyword
candidates with this, from the ``tsvector`` of each candidate and the collection's
counts, so both stores rank keyword hits the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

K1 = 1.2
B = 0.75
#: FTS5's lower bound for a term's idf (a term in over half the documents).
IDF_FLOOR = 1e-6
#: Per weight class of a ``tsvector`` position: A = content, B = key (as FTS5's columns).
WEIGHTS = {"A": 1.0, "B": 0.5, "C": 0.5, "D": 0.5}

_ENTRY = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")


@dataclass(frozen=True, slots=True)
class Collection:
    documents: int
    average_length: float  # distinct lexemes per document
    frequency: Mapping[str, int]  # documents containing each query lexeme


def parse_tsvector(text: str) -> dict[str, float]:
    """``'berlin':3A 'live':2A,5B`` -> weighted term frequencies per lexeme."""
    out: dict[str, float] = {}
    for lexeme, positions in _ENTRY.findall(text):
        lexeme = lexeme.replace("''", "'")
        if not positions:
            out[lexeme] = 1.0
            continue
        out[lexeme] = sum(
            WEIGHTS.get(p[-1] if p[-1].isalpha() else "D", 0.5) for p in positions.split(",")
        )
    return out


def idf(documents: int, frequency: int) -> float:
    """FTS5's: log((N - n + 0.5) / (n + 0.5)), never below a small positive floor.
    Counts taken at different moments (a cached total, a fresh term count) may have
    ``n > N``: the term is then in every document as far as anyone knows."""
    documents = max(documents, frequency, 0)
    return max(math.log((documents - frequency + 0.5) / (max(frequency, 0) + 0.5)), IDF_FLOOR)


def score(terms: Mapping[str, float], query: Sequence[str], stats: Collection) -> float:
    """BM25 of one document (its weighted term frequencies) for the query lexemes."""
    length = len(terms)
    norm = K1 * (1 - B + B * length / stats.average_length) if stats.average_length else K1
    total = 0.0
    for lexeme in query:
        tf = terms.get(lexeme, 0.0)
        if tf:
            df = stats.frequency.get(lexeme, 1)
            total += idf(stats.documents, df) * tf * (K1 + 1) / (tf + norm)
    return total
