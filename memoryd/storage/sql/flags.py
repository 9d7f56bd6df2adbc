"""The reindex queue: ``memories.needs_reindex`` flags the memories whose vector the
in-store index lacks. Set by every write of new text (``memories.upsert``/``update``),
cleared by the indexer in the transaction that stores the vector."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.storage.contract.flags import Flagged
from memoryd.storage.sql import context
from memoryd.storage.sql.context import SEPARATOR

#: What the indexer embeds (``Flagged``'s fields): id, owner, text, dense context view.
_ROW = f"m.id, m.api_key_id, m.content, {context.view_text_sql('m')}"


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def count_pending(conn: Any) -> int:
    (n,) = next(iter(conn.execute("SELECT COUNT(*) FROM memories WHERE needs_reindex = 1")))
    return int(n)


def mark_all_reindex(conn: Any) -> int:
    conn.execute("UPDATE memories SET needs_reindex = 1 WHERE needs_reindex = 0")
    return int(conn.changes())


def mark_reindex(conn: Any, memory_id: str, flag: bool) -> None:
    conn.execute("UPDATE memories SET needs_reindex = ? WHERE id = ?", (int(flag), memory_id))


def reindex_queue(conn: Any, limit: int, owner: str | None = None) -> list[tuple[str, str, str]]:
    sql = "SELECT id, content, key FROM memories WHERE needs_reindex = 1"
    params: list[Any] = []
    if owner:
        sql += " AND api_key_id = ?"
        params.append(owner)
    sql += " ORDER BY created_at ASC, seq ASC LIMIT ?"
    return [(r[0], r[1], r[2]) for r in conn.execute(sql, [*params, limit])]


def flagged(conn: Any, memory_ids: Sequence[str]) -> list[Flagged]:
    """Those of ``memory_ids`` still flagged for embedding."""
    if not memory_ids:
        return []
    rows = conn.execute(
        f"SELECT {_ROW} FROM memories m WHERE m.needs_reindex = 1 "
        f"AND m.id IN ({_marks(memory_ids)})",
        [SEPARATOR, *memory_ids],
    )
    return [Flagged(r[0], r[1], r[2], r[3]) for r in rows]


def oldest_flagged(conn: Any, limit: int) -> list[Flagged]:
    rows = conn.execute(
        f"SELECT {_ROW} FROM memories m WHERE m.needs_reindex = 1 "
        "ORDER BY m.created_at, m.seq LIMIT ?",
        (SEPARATOR, limit),
    ).fetchall()
    return [Flagged(r[0], r[1], r[2], r[3]) for r in rows]


def newest_flagged_of(conn: Any, owner: str, limit: int) -> list[Flagged]:
    """One owner's flagged memories, newest first (a search backfills these)."""
    rows = conn.execute(
        f"SELECT {_ROW} FROM memories m WHERE m.needs_reindex = 1 "
        "AND m.api_key_id = ? ORDER BY m.created_at DESC LIMIT ?",
        (SEPARATOR, owner, limit),
    )
    return [Flagged(r[0], r[1], r[2], r[3]) for r in rows]


def clear_flag_if_unchanged(conn: Any, memory_id: str, content: str) -> bool:
    """Clear the flag only if the memory still has ``content`` (the text embedded), so a
    racing edit is never marked done."""
    conn.execute(
        "UPDATE memories SET needs_reindex = 0 WHERE id = ? AND content = ?",
        (memory_id, content),
    )
    return bool(conn.changes())
