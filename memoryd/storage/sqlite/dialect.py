"""What SQLite does its own way: keyword search with FTS5's BM25, and the Qdrant
outbox (``qdrant_sync``): the ``Dialect`` ``SqlSession`` runs the portable SQL with."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import apsw

from memoryd.cache import TTLCache
from memoryd.core.fts_query import query_tokens, quote_token
from memoryd.storage.base import Filter, KeywordHit, OutboxRow
from memoryd.storage.rows import COLUMNS, NCOLS, row_to_memory
from memoryd.storage.sql import memories
from memoryd.storage.sql.memories import filter_sql
from memoryd.storage.sqlite import qdrant_sync
from memoryd.storage.sqlite.keywords import ResidentKeywords, last_change, passing_best
from memoryd.storage.sqlite.postings import Tokenizer


def scope_token(value: str) -> str:
    """The index token of an owner or end-user id: SQLite's ``hex()`` of its UTF-8
    (migration 0011), one token whatever characters the id has."""
    return value.encode("utf-8").hex().upper()


def scope_match(flt: Filter, *, owners: bool = True, user: bool = True) -> str | None:
    """The ``fts_scope`` terms that narrow a MATCH to the filter's owners and end user
    ("" when none apply; None when the filter names no owner at all). A superset of
    what the SQL filter keeps: the filter still decides, this only spares FTS5 from
    ranking other tenants' matches. ``owners``/``user`` leave a part out."""
    parts = []
    if flt.owners is not None:
        if not flt.owners:
            return None
        if owners:
            tokens = " OR ".join(quote_token(scope_token(o)) for o in dict.fromkeys(flt.owners))
            parts.append(f"fts_scope : ({tokens})")
    if flt.user_id is not None and user:
        parts.append(f'fts_scope : ("u" OR {quote_token("u" + scope_token(flt.user_id))})')
    return " AND ".join(parts)


def fts_search(
    conn: Any,
    match: str,
    flt: Filter,
    limit: int,
    context_weight: float = 0.0,
    *,
    scoped: tuple[bool, bool] = (True, True),
) -> list[KeywordHit]:
    """BM25-ranked matches, relevance > 0, higher better.

    FTS5's ``bm25()`` is negative (more negative = better); it is negated here. The
    FTS side drives the join (one index lookup, then rowid lookups into memories), and
    the owner and end-user tokens keep it to the filter's tenants. Columns weigh
    content 1.0, key 0.5 and the context field ``context_weight`` (the scope 0);
    without it, only matches in the memory's own text count. ``scoped`` says whether
    the owner and the end-user tokens are used: one that keeps most rows anyway costs
    more to intersect than it spares.
    """
    scope = scope_match(flt, owners=scoped[0], user=scoped[1])
    if scope is None:
        return []
    fields = "{content key context}" if context_weight > 0 else "{content key}"
    match = f"{fields} : ({match})"
    if scope:
        match = f"{scope} AND {match}"
    where, params = filter_sql(flt)
    weight = max(context_weight, 0.0)
    found = _best_first(conn, match, weight, where, params, limit)
    if found is not None:
        return found
    rows = conn.execute(
        f"SELECT {COLUMNS}, bm25(memory_fts, 1.0, 0.5, ?, 0.0) AS rank FROM memory_fts "
        # CROSS JOIN pins the loop order: SQLite would otherwise drive from the
        # memories owner index and re-run the MATCH once per candidate row.
        "CROSS JOIN memories m ON m.seq = memory_fts.rowid "
        f"WHERE memory_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
        [weight, match, *params, limit],
    )
    return [KeywordHit(row_to_memory(r), -float(r[NCOLS])) for r in rows]


#: The columns a search with the context field reads: every one but the scope.
ALL_TEXT = "{content key context}"
#: What a scope token looks like after tokenizing (hex ids, "u" + hex for end users).
_SCOPE_LIKE = re.compile(r"u?[0-9a-f]*")

#: Matches ranked by the index alone per wanted hit, before the filter checks them.
BEST_FIRST = 4


def _best_first(
    conn: Any, match: str, weight: float, where: str, params: list[Any], limit: int
) -> list[KeywordHit] | None:
    """The index's best ``BEST_FIRST * limit`` matches, then the filter on those only;
    None when too few pass (the caller's join answers). The join checks the filter on
    every match before it sorts, a rowid lookup into ``memories`` each: with "coffee"
    in thousands of an owner's memories that was half of a search. The answer is the
    same: when ``limit`` of the best candidates pass, they are the first ``limit`` the
    join would keep."""
    wanted = max(limit, 1) * BEST_FIRST
    ranked = conn.execute(
        "SELECT rowid, bm25(memory_fts, 1.0, 0.5, ?, 0.0) AS rank FROM memory_fts "
        "WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?",
        [weight, match, wanted],
    ).fetchall()
    found = passing_best(conn, [(r[0], -float(r[1])) for r in ranked], where, params, limit)
    if len(found) < limit and len(ranked) == wanted:
        return None  # the filter keeps few of the best: more may pass further down
    return found


def optimize_fts(conn: Any) -> None:
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")


#: How long a tenant's share of the file is reused to decide whether to scope.
SHARE_TTL_S = 30.0
#: Scope the MATCH when the filter keeps less than this share of all memories.
NARROW_SHARE = 0.5
#: Files smaller than this keep every query term (see ``SqliteDialect._informative``).
SPARSE_MIN_ROWS = 500
#: Shares (and term counts) remembered at most (tenants seen within SHARE_TTL_S, in practice).
MAX_SHARES = 4096
#: Neighbour entries kept for one file state (then the cache starts over).
MAX_NEIGHBOURS = 100_000


class SqliteDialect:
    def __init__(
        self,
        *,
        fts5: bool,
        clock: Callable[[], float] = time.monotonic,
        keywords: ResidentKeywords | None = None,
    ) -> None:
        self.fts5 = fts5
        self.keywords = keywords if fts5 else None
        self._tokenizer = (
            (keywords.tokenizer if keywords is not None else Tokenizer()) if fts5 else None
        )
        self._clock = clock
        self._total: tuple[float, int] | None = None
        self._shares: TTLCache[tuple[Any, ...], tuple[bool, bool]]
        self._shares = TTLCache(MAX_SHARES, SHARE_TTL_S, clock=clock)
        self._counts: TTLCache[tuple[str, str], tuple[int, int]]
        self._counts = TTLCache(MAX_SHARES, SHARE_TTL_S, clock=clock)
        #: Neighbours looked up at one ``kw_changes`` id (None: the id does not exist).
        self._near: tuple[int, dict[str, tuple[str, ...] | None]] | None = None

    def neighbours(self, conn: Any, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """``memories.neighbours``, remembered until ``kw_changes`` moves: it logs every
        insert, delete and change of owner or session (migration 0015), all that decides
        which memories were written next to which. Two index seeks per id cost a sixth
        of a hybrid search at the LoCoMo owner size; most candidates come back search
        after search."""
        version = last_change(conn)
        known = self._near
        if known is None or known[0] != version or len(known[1]) > MAX_NEIGHBOURS:
            known = self._near = (version, {})
        cache = known[1]
        missing = [i for i in dict.fromkeys(ids) if i not in cache]
        if missing:
            found = memories.neighbours(conn, missing)
            for memory_id in missing:
                cache[memory_id] = found.get(memory_id)
        out: dict[str, tuple[str, ...]] = {}
        for memory_id in ids:
            near = cache.get(memory_id)
            if near is not None:
                out[memory_id] = near
        return out

    def keyword_search(
        self, conn: Any, query: str, flt: Filter, limit: int, context_weight: float = 0.0
    ) -> list[KeywordHit]:
        tokens = query_tokens(query) if self.fts5 and isinstance(query, str) else []
        if not tokens:
            return []
        fields = "{content key context}" if context_weight > 0 else "{content key}"
        version = last_change(conn)
        tokens = self._informative(conn, tokens, fields, version)
        if self.keywords is not None:

            def count(token: str) -> int:
                return self._doc_count(conn, token, fields, version, exact=True)

            found = self.keywords.search(
                conn, tokens, flt, limit, context_weight, count, latest=version
            )
            if found is not None:
                return found
        match = " OR ".join(quote_token(t) for t in tokens)
        scoped = self._narrows(conn, flt)
        return fts_search(conn, match, flt, limit, context_weight, scoped=scoped)

    def _informative(self, conn: Any, tokens: list[str], fields: str, version: int) -> list[str]:
        """The query's terms without those in at least half of the file's rows.

        FTS5's BM25 floors such a term's IDF at 1e-6, so it adds nothing to any score,
        yet ranking it walks every row that has it: "user", in nearly every extracted
        fact, made a search at 100k memories rank all 100k. Counted per term over the
        same columns (cached like the shares); the rarest is kept when every term is
        that common, and a small file keeps them all (nothing to spare there)."""
        total = self._file_rows(conn)
        if total < SPARSE_MIN_ROWS:
            return tokens
        counts = {t: self._doc_count(conn, t, fields, version) for t in tokens}
        kept = [t for t in tokens if 2 * counts[t] < total]
        return kept or [min(tokens, key=counts.__getitem__)]

    def _file_rows(self, conn: Any) -> int:
        now = self._clock()
        if self._total is None or now - self._total[0] >= SHARE_TTL_S:
            self._total = (now, int(conn.execute("SELECT count(*) FROM memories").fetchone()[0]))
        return self._total[1]

    def _doc_count(
        self, conn: Any, token: str, fields: str, version: int, *, exact: bool = False
    ) -> int:
        """Rows with ``token`` in ``fields``, as FTS5 counts them for its IDF. Reused
        for ``SHARE_TTL_S`` to choose query terms; ``exact`` (the resident copies'
        scores) only while the file has not changed since (``version``: the last
        ``kw_changes`` id), so both ask FTS5 once per term and file state."""
        found, known = self._counts.lookup((fields, token))
        if found and known is not None and (not exact or known[0] == version):
            return known[1]
        count = self._vocab_count(conn, token, fields)
        if count is None:
            match = f"{fields} : {quote_token(token)}"
            count = int(
                conn.execute(
                    "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", [match]
                ).fetchone()[0]
            )
        self._counts.set((fields, token), (version, count))
        return count

    def _vocab_count(self, conn: Any, token: str, fields: str) -> int | None:
        """The count from ``memory_fts_rows`` (migration 0014), which counts a term in
        any column: the same as the MATCH count when the search covers every column
        but the scope and the term cannot be a scope token; otherwise None."""
        if fields != ALL_TEXT or self._tokenizer is None:
            return None
        stems = self._tokenizer.query(token)
        if len(stems) != 1 or _SCOPE_LIKE.fullmatch(stems[0]):
            return None
        try:
            row = conn.execute("SELECT doc FROM memory_fts_rows WHERE term = ?", stems).fetchone()
        except apsw.SQLError:  # a file whose migration 0014 waits for FTS5
            self._tokenizer = None
            return None
        return int(row[0]) if row is not None else 0

    def _narrows(self, conn: Any, flt: Filter) -> tuple[bool, bool]:
        """Whether the owner tokens (the owners hold under ``NARROW_SHARE`` of the file)
        and the end-user tokens (the end user and the shared rows, under that share of
        the owners') are worth intersecting: with one key and no end users they cover
        every row, and intersecting them made a search at 1k memories half again as
        slow. The counts come from indexes and are cached per tenant."""
        if flt.owners is None or not flt.owners:
            return (False, False)
        key = (flt.owners, flt.user_id)
        found, known = self._shares.lookup(key)
        if found and known is not None:
            return known
        total = self._file_rows(conn)
        marks = ", ".join("?" for _ in flt.owners)
        owned = f"SELECT count(*) FROM memories WHERE api_key_id IN ({marks})"
        held = int(conn.execute(owned, list(flt.owners)).fetchone()[0])
        by_user = False
        if flt.user_id is not None:
            seen = int(
                conn.execute(
                    f"{owned} AND user_id IN ('', ?)", [*flt.owners, flt.user_id]
                ).fetchone()[0]
            )
            by_user = seen < held * NARROW_SHARE
        decision = (held < total * NARROW_SHARE, by_user)
        self._shares.set(key, decision)
        return decision

    def optimize_keyword_index(self, conn: Any) -> None:
        if self.fts5:
            optimize_fts(conn)

    def lock_rows(self, conn: Any, ids: Sequence[str]) -> None:
        return None  # one writer at a time: a write transaction holds the whole file

    def outbox_ready(self, conn: Any) -> bool:
        return qdrant_sync.schema_complete(conn)

    def outbox_exists(self, conn: Any) -> bool:
        return qdrant_sync.pending_table_exists(conn)

    def outbox_pending(self, conn: Any) -> int:
        return qdrant_sync.count_pending(conn)

    def outbox_pushable(self, conn: Any) -> int:
        return qdrant_sync.count_pushable(conn)

    def outbox_rows(self, conn: Any, after: int, limit: int) -> list[OutboxRow]:
        return qdrant_sync.pending_rows(conn, after, limit)

    def outbox_tombstones(self, conn: Any, limit: int) -> list[str]:
        return qdrant_sync.tombstones(conn, limit)

    def create_outbox(self, conn: Any) -> None:
        qdrant_sync.create_schema(conn)

    def outbox_queue_all(self, conn: Any) -> int:
        return qdrant_sync.queue_all(conn)

    def outbox_done(self, conn: Any, done: Sequence[tuple[int, int]]) -> None:
        qdrant_sync.drop_pending(conn, done)

    def outbox_drop_tombstones(self, conn: Any, memory_ids: Sequence[str]) -> None:
        qdrant_sync.drop_tombstones(conn, memory_ids)
