"""What one owner keeps in the store, for the per-key quotas (``engine.quotas``)."""

from __future__ import annotations

from typing import Any

from memoryd.storage.contract.usage import Usage


def usage(conn: Any, owner: str) -> Usage:
    """``owner``'s memories, every end user and history included, and what they take on
    disk (content as UTF-8 plus metadata; the indexes come on top)."""
    rows = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(octet_length(content) + octet_length(metadata)), 0) "
        "FROM memories WHERE api_key_id = ?",
        (owner,),
    )
    count, size = next(iter(rows))
    return Usage(int(count), int(size))
