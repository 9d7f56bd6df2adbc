"""What one owner keeps in the store, for the per-key quotas (``engine.quotas``)."""

from __future__ import annotations

from typing import Any


def usage(conn: Any, owner: str) -> tuple[int, int]:
    """``(rows, bytes)`` of ``owner``'s memories, every end user and history included:
    what they take on disk (content as UTF-8 plus metadata; the indexes come on top)."""
    rows = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(octet_length(content) + octet_length(metadata)), 0) "
        "FROM memories WHERE api_key_id = ?",
        (owner,),
    )
    count, size = next(iter(rows))
    return int(count), int(size)
