"""Turn arbitrary user text into a safe FTS5 MATCH expression.

User queries are natural language ("what's my favorite editor?"), but FTS5 parses
MATCH strings as a query language in which ``"``, ``*``, ``-``, ``:``, ``^``,
parentheses and the bare words AND/OR/NOT/NEAR are syntax. Passing user text through
raw either raises a syntax error or silently changes meaning. Instead we extract word
tokens, drop stop-words (which would match nearly every row), quote each token as a
string literal and OR them together, letting BM25 rank by how many terms match.
"""

from __future__ import annotations

import re

#: Standard English stop-words, plus the fragments left when contractions are split
#: on the apostrophe ("what's" -> "what", "s"; "don't" -> "don", "t").
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at
    be because been before being below between both but by
    can cannot could
    d did do does doing don down during
    each ever
    few for from further
    had has have having he her here hers herself him himself his how
    however i if in into is it its itself
    just
    let lets
    ll
    m me might more most must my myself
    near no nor not now
    of off on once only or other ought our ours ourselves out over own
    re
    s same shall she should so some such
    t than that the their theirs them themselves then there these they this those
    through to too
    under until up
    ve very
    was we were what whats when where which while who whom whose why will with
    within without would
    yet
    you your yours yourself yourselves
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

#: Upper bound on OR terms: keeps the query cheap for FTS5 when a client sends a
#: whole document as the "query".
MAX_QUERY_TOKENS = 32

_WORD = re.compile(r"\w+")


def query_tokens(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Case-folded Unicode word tokens of ``text``, deduplicated in order.

    Underscores count as separators (``\\w`` includes them, the FTS5 tokenizer does
    not), so ``snake_case`` yields ``snake`` and ``case``.
    """
    tokens: list[str] = []
    seen: set[str] = set()
    for word in _WORD.findall(text.casefold()):
        for token in word.split("_"):
            if not token or token in seen:
                continue
            if not keep_stopwords and token in STOPWORDS:
                continue
            seen.add(token)
            tokens.append(token)
            if len(tokens) >= MAX_QUERY_TOKENS:
                return tokens
    return tokens


def quote_token(token: str) -> str:
    """An FTS5 string literal: wrapped in ``"`` with inner ``"`` doubled."""
    return '"' + token.replace('"', '""') + '"'


def build_fts_query(text: object) -> str | None:
    """A MATCH expression ORing the quoted tokens of ``text``, or None if none remain.

    None (rather than an empty string, which FTS5 rejects) tells callers to skip the
    FTS tier entirely for non-strings, blank input and stop-word-only questions.
    """
    if not isinstance(text, str):
        return None
    tokens = query_tokens(text)
    if not tokens:
        return None
    return " OR ".join(quote_token(token) for token in tokens)
