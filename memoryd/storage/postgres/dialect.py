"""What PostgreSQL does its own way: keyword search over the stored ``tsvector`` and
the outbox for the external vector tier, kept by a trigger that ``create_outbox``
switches on. Functions take a ``PgConn`` (the portable ``?`` placeholders)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.core import bm25
from memoryd.core.fts_query import query_tokens
from memoryd.storage.base import Filter, KeywordHit, OutboxRow
from memoryd.storage.sql import context, memories
from memoryd.storage.sql.memories import filter_sql, get_many

if TYPE_CHECKING:
    from memoryd.storage.postgres.keywords import ResidentKeywords


def tsquery_text(query: str) -> str | None:
    """The query's words (stop words dropped, as for FTS5) ORed for ``to_tsquery``;
    only word characters reach PostgreSQL's parser, so no user text can break it."""
    words = [w for w in query_tokens(query) if w.isalnum()]
    return " | ".join(words) if words else None


def _quoted(lexeme: str) -> str:
    """One lexeme as a ``tsquery`` literal."""
    return "'" + lexeme.replace("'", "''") + "'"


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def _bytes(vector: Any) -> bytes | None:
    """A pgvector value as the float32 blob SQLite would hold (None stays None)."""
    return None if vector is None else np.asarray(vector, np.float32).tobytes()


#: Below this many documents a lexeme always picks candidates (scoring them is cheap).
COMMON = 500
#: Candidates scored exactly: ``limit`` times this, at least ``MIN_POOL``.
POOL_FACTOR = 4
MIN_POOL = 200
#: How long the collection's counts are reused: BM25 barely moves with a few writes.
STATS_TTL_S = 60.0


class PostgresDialect:
    """Per store: it caches that database's term statistics."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._totals: tuple[float, int, float] | None = None
        self._frequency: dict[str, tuple[float, int]] = {}
        #: large owners' postings in memory (``keywords``), when the store keeps them
        self.resident: ResidentKeywords | None = None

    def neighbours(self, conn: Any, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """``memories.neighbours`` with the ids as one array parameter: the statement's
        text stays the same whatever their number, so psycopg converts and PostgreSQL
        plans it once (a list of marks cost ~1 ms a search)."""
        if not ids:
            return {}
        rows = conn.execute(f"{memories.NEIGHBOURS}m.id = ANY(?)", [list(ids)])
        return memories.neighbour_rows(rows)

    def keyword_search(
        self, conn: Any, query: str, flt: Filter, limit: int, context_weight: float = 0.0
    ) -> list[KeywordHit]:
        """The stored ``tsvector`` finds the candidates (GIN, the ORed words), BM25 from
        the collection's counts ranks them (the formula of ``core.bm25``), as FTS5 does
        on SQLite; best first, relevance > 0. Positions weigh by field: content (A) 1.0,
        key (B) 0.5, the neighbours' context (C) ``context_weight``; without it, a word
        only in the context does not make a candidate."""
        cw = max(context_weight, 0.0)
        text = tsquery_text(query)
        if text is None:
            return []
        lexemes = [
            str(r[0])
            for r in conn.execute(
                "SELECT unnest(tsvector_to_array(to_tsvector('english', ?)))", [text]
            )
        ]
        if not lexemes:
            return []
        where, params = filter_sql(flt)
        stats = self._collection(conn, lexemes)
        terms = list(dict.fromkeys(lexemes))
        weights = [bm25.idf(stats.documents, stats.frequency.get(t, 1)) for t in terms]
        # A lexeme in over half of many documents adds nothing (idf at its floor, as in
        # FTS5): it does not pick candidates, so "user" does not pull every memory in to
        # be scored. Matches of it alone would rank last anyway, at a score near zero.
        telling = [
            t
            for t, w in zip(terms, weights, strict=True)
            if w > bm25.IDF_FLOOR or stats.frequency.get(t, 0) <= COMMON
        ]
        avg = max(stats.average_length, 1e-9)
        if self.resident is not None:  # the same BM25 over a large owner's copy
            copied = self.resident.search(
                conn,
                flt,
                list(zip(terms, weights, strict=True)),
                frozenset(telling or terms),
                (1.0, 0.5, cw),
                avg,
                limit,
            )
            if copied is not None:
                return copied
        fields = "" if cw > 0 else ":AB"
        match = " | ".join(_quoted(t) + fields for t in telling or terms)
        # Scoring unnests each candidate's tsvector: with thousands of candidates (an
        # owner of 10k memories, a query word in one of eight) that is most of the
        # time. So the candidates are first ordered by BM25 with each word's tf taken
        # from which fields hold it (cheap ``@@`` tests against 'word:A' and 'word:B'),
        # and only the best ``pool`` are scored exactly: the same score unless a word
        # repeats within the content. Below ``pool`` candidates nothing changes.
        pool = max(limit * POOL_FACTOR, MIN_POOL)
        tf = (
            "((m.tsv @@ ?::tsquery)::int + 0.5 * (m.tsv @@ ?::tsquery)::int"
            " + ? * (m.tsv @@ ?::tsquery)::int)"
        )
        norm_m = "(1 - ? + ? * length(m.tsv) / ?)"
        one = f"(? * {tf} * ? / ({tf} + ? * {norm_m}))"
        rough = " + ".join(one for _ in terms)
        rough_params = [
            v
            for t, w in zip(terms, weights, strict=True)
            for v in (
                w,
                _quoted(t) + ":A",
                _quoted(t) + ":B",
                cw,
                _quoted(t) + ":C",
                bm25.K1 + 1,
                _quoted(t) + ":A",
                _quoted(t) + ":B",
                cw,
                _quoted(t) + ":C",
                bm25.K1,
                bm25.B,
                bm25.B,
                avg,
            )
        ]
        # BM25 in the database: per candidate only the query's lexemes are unnested from
        # its tsvector (content positions weigh 1.0, key 0.5, context ``cw``, as in FTS5).
        norm = "(1 - ? + ? * length(c.tsv) / ?)"
        rows = conn.execute(
            "WITH c AS (SELECT m.id, m.tsv FROM memories m "
            f"WHERE m.tsv @@ CAST(? AS tsquery) AND {where} "
            f"ORDER BY {rough} DESC LIMIT ?) "
            "SELECT c.id, SUM(w.idf * t.tf * ? / (t.tf + ? * "
            f"{norm})) AS score FROM c "
            "CROSS JOIN LATERAL (SELECT u.lexeme, (SELECT SUM(CASE x WHEN 'A' THEN 1.0 "
            "WHEN 'C' THEN ? ELSE 0.5 END) FROM unnest(u.weights) x) AS tf FROM unnest(c.tsv) u "
            "WHERE u.lexeme = ANY(?::text[])) t "
            "JOIN unnest(?::text[], ?::float8[]) AS w (lexeme, idf) ON w.lexeme = t.lexeme "
            "GROUP BY c.id ORDER BY score DESC LIMIT ?",
            [
                match,
                *params,
                *rough_params,
                pool,
                bm25.K1 + 1,
                bm25.K1,
                bm25.B,
                bm25.B,
                avg,
                cw,
                terms,
                terms,
                weights,
                limit,
            ],
        ).fetchall()
        best = [(str(mid), float(value)) for mid, value in rows if value and value > 0]
        found = get_many(conn, [mid for mid, _ in best])
        return [KeywordHit(found[mid], value) for mid, value in best if mid in found]

    def _collection(self, conn: Any, lexemes: Sequence[str]) -> bm25.Collection:
        now = self._clock()
        if self._totals is None or now - self._totals[0] > STATS_TTL_S:
            count, average = conn.execute(
                "SELECT COUNT(*), COALESCE(AVG(length(tsv)), 0) FROM memories"
            ).fetchone()
            self._totals = (now, int(count), float(average))
        if len(self._frequency) > 100_000:
            self._frequency.clear()
        wanted = list(dict.fromkeys(lexemes))
        stale = [
            x for x in wanted if (c := self._frequency.get(x)) is None or now - c[0] > STATS_TTL_S
        ]
        if stale:  # one round trip for every lexeme the cache lacks, not one each
            rows = conn.execute(
                "SELECT q, (SELECT COUNT(*) FROM memories WHERE tsv @@ q::tsquery) "
                "FROM unnest(?::text[]) AS q",
                [[_quoted(lexeme) for lexeme in stale]],
            ).fetchall()
            counts = dict(rows)
            for lexeme in stale:
                self._frequency[lexeme] = (now, int(counts[_quoted(lexeme)]))
        frequency = {lexeme: self._frequency[lexeme][1] for lexeme in wanted}
        return bm25.Collection(self._totals[1], self._totals[2], frequency)

    def optimize_keyword_index(self, conn: Any) -> None:
        return None  # a GIN index needs no compaction after deletes (autovacuum does it)

    def lock_rows(self, conn: Any, ids: Sequence[str]) -> None:
        """Row locks in id order (ORDER BY runs before FOR UPDATE locks): the indexer
        clearing flags and the access bumps took the same rows in different orders and
        deadlocked, each costing a second (deadlock_timeout) and a retry."""
        conn.execute(
            f"SELECT 1 FROM memories WHERE id IN ({_marks(ids)}) ORDER BY id FOR UPDATE",
            list(ids),
        )

    # -- the outbox ----------------------------------------------------------------------

    def outbox_ready(self, conn: Any) -> bool:
        return bool(conn.execute("SELECT active FROM outbox_state WHERE id = 1").fetchone()[0])

    def outbox_exists(self, conn: Any) -> bool:
        return self.outbox_ready(conn)

    def create_outbox(self, conn: Any) -> None:
        """Switch the trigger on (the tables exist from the first migration)."""
        conn.execute("UPDATE outbox_state SET active = TRUE WHERE id = 1 AND NOT active")

    def outbox_pending(self, conn: Any) -> int:
        return int(conn.execute("SELECT COUNT(*) FROM qdrant_pending").fetchone()[0])

    def outbox_pushable(self, conn: Any) -> int:
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM qdrant_pending p JOIN memories m ON m.seq = p.seq "
                "WHERE m.needs_reindex = 0"
            ).fetchone()[0]
        )

    def outbox_rows(self, conn: Any, after: int, limit: int) -> list[OutboxRow]:
        """As SQLite's: both views' vectors as float32 bytes from pgvector, or None."""
        columns, joins = [], []
        for alias, table in (("v", "vec_memories"), ("c", "vec_context")):
            has = conn.execute("SELECT to_regclass(?) IS NOT NULL", [table]).fetchone()[0]
            columns.append(f"{alias}.emb::real[]" if has else "NULL::real[]")
            joins.append(f"LEFT JOIN {table} {alias} ON {alias}.seq = p.seq " if has else "")
        rows = conn.execute(
            "SELECT p.seq, p.gen, m.id, m.api_key_id, m.session_id, m.type, m.key, "
            f"m.content, m.created_at, m.expires_at, {', '.join(columns)}, "
            f"{context.view_text_sql('m')} FROM qdrant_pending p "
            f"JOIN memories m ON m.seq = p.seq {''.join(joins)}"
            "WHERE m.needs_reindex = 0 AND p.seq > ? ORDER BY p.seq LIMIT ?",
            [context.SEPARATOR, after, limit],
        ).fetchall()
        return [
            replace(OutboxRow(*row), emb=_bytes(row[10]), ctx_emb=_bytes(row[11])) for row in rows
        ]

    def outbox_done(self, conn: Any, done: Sequence[tuple[int, int]]) -> None:
        for seq, gen in done:
            conn.execute("DELETE FROM qdrant_pending WHERE seq = ? AND gen = ?", [seq, gen])

    def outbox_tombstones(self, conn: Any, limit: int) -> list[str]:
        rows = conn.execute("SELECT memory_id FROM qdrant_tombstones LIMIT ?", [limit])
        return [str(r[0]) for r in rows]

    def outbox_drop_tombstones(self, conn: Any, memory_ids: Sequence[str]) -> None:
        if memory_ids:
            conn.execute(
                f"DELETE FROM qdrant_tombstones WHERE memory_id IN ({_marks(memory_ids)})",
                list(memory_ids),
            )

    def outbox_queue_all(self, conn: Any) -> int:
        conn.execute("DELETE FROM qdrant_tombstones")
        conn.execute(
            "INSERT INTO qdrant_pending (seq, memory_id, gen) SELECT seq, id, 1 FROM memories "
            "ON CONFLICT (seq) DO UPDATE SET gen = qdrant_pending.gen + 1"
        )
        return int(conn.changes())
