"""What makes ``storage.postings`` score as FTS5 does on SQLite: rows tokenized by FTS5's
own tokenizer through apsw, and the file-wide figures ``bm25()`` uses (FTS5's averages
record and its IDF), so a query's scores equal ``bm25()``'s.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import apsw

from memoryd.storage.postings import K1, MIN_OVERLAY, B, Postings, Terms, Weights, best

__all__ = ["K1", "MIN_OVERLAY", "B", "Postings", "Terms", "Tokenizer", "Weights", "best"]

#: The tokenizer migration 0011 gives ``memory_fts``.
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])


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


def idf(rows: int, hits: int) -> float:
    """FTS5's IDF: floored at 1e-6 for a term in half the rows or more."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0 else 1e-6
