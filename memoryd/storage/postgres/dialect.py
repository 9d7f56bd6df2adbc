"""What PostgreSQL does its own way: keyword search over the stored ``tsvector`` and
the outbox for the external vector tier, kept by a trigger that ``create_outbox``
switches on. Functions take a ``PgConn`` (the portable ``?`` placeholders)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memoryd.core.fts_query import query_tokens
from memoryd.models import Memory
from memoryd.storage.base import Filter
from memoryd.storage.rows import COLUMNS, NCOLS, row_to_memory
from memoryd.storage.sql.memories import filter_sql


def tsquery_text(query: str) -> str | None:
    """The query's words (stop words dropped, as for FTS5) ORed for ``to_tsquery``;
    only word characters reach PostgreSQL's parser, so no user text can break it."""
    words = [w for w in query_tokens(query) if w.isalnum()]
    return " | ".join(words) if words else None


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


class PostgresDialect:
    def keyword_search(
        self, conn: Any, query: str, flt: Filter, limit: int
    ) -> list[tuple[Memory, float]]:
        """``ts_rank_cd`` over the stored ``tsvector`` (content weighted over the key)
        for the ORed words; best first, relevance > 0."""
        text = tsquery_text(query)
        if text is None:
            return []
        where, params = filter_sql(flt)
        rows = conn.execute(
            f"SELECT {COLUMNS}, ts_rank_cd(m.tsv, q, 1) AS rank "
            "FROM memories m, to_tsquery('english', ?) q "
            f"WHERE m.tsv @@ q AND {where} ORDER BY rank DESC, m.seq DESC LIMIT ?",
            [text, *params, limit],
        ).fetchall()
        return [(row_to_memory(r), max(float(r[NCOLS]), 1e-9)) for r in rows]

    def optimize_keyword_index(self, conn: Any) -> None:
        return None  # a GIN index needs no compaction after deletes (autovacuum does it)

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

    def outbox_rows(self, conn: Any, after: int, limit: int) -> list[Any]:
        """As SQLite's: ``emb`` as float32 bytes from pgvector, or None."""
        has = conn.execute("SELECT to_regclass('vec_memories') IS NOT NULL").fetchone()[0]
        vector = "v.emb::real[]" if has else "NULL::real[]"
        join = "LEFT JOIN vec_memories v ON v.seq = p.seq " if has else ""
        rows = conn.execute(
            "SELECT p.seq, p.gen, m.id, m.api_key_id, m.session_id, m.type, m.key, "
            f"m.content, m.created_at, m.expires_at, {vector} FROM qdrant_pending p "
            f"JOIN memories m ON m.seq = p.seq {join}"
            "WHERE m.needs_reindex = 0 AND p.seq > ? ORDER BY p.seq LIMIT ?",
            [after, limit],
        ).fetchall()
        return [
            (*row[:10], None if row[10] is None else np.asarray(row[10], np.float32).tobytes())
            for row in rows
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
