"""The part of a user's turn that retrieval reads.

A client may send megabytes in one message (a pasted log, a whole document). The
tokenizer of an embedding model reads all of it before truncating to its window, so
an uncut 3.8 MB turn once cost 130 s and 2.5 GB. Retrieval reads only the *end* of
the turn, where the question usually is, cut at a word boundary: a 3.5 MB message
then costs what a 4 KB one does. Extraction has its own windows
(``core.extraction.segment``).
"""

from __future__ import annotations

#: Characters of the user's turn that retrieval and query embedding see (the last ones).
MAX_QUERY_CHARS = 4000
#: How far back from the cut a word boundary is looked for.
_BOUNDARY_SLACK = 200


def query_window(text: str, max_chars: int = MAX_QUERY_CHARS) -> tuple[str, bool]:
    """``(the last max_chars characters of text, starting at a word), was it cut``."""
    if len(text) <= max_chars:
        return text, False
    tail = text[-max_chars:]
    space = -1
    for index, char in enumerate(tail[:_BOUNDARY_SLACK]):
        if char.isspace():
            space = index
            break
    if space >= 0:
        tail = tail[space + 1 :]
    return tail.strip(), True
