"""SQL for ``erasures``: the receipts of erased subjects. A receipt holds who
was erased, when and how much went where, never what."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from memoryd.models import Erasure, parse_iso, to_iso

_COLUMNS = "id, api_key_id, user_id, erased_at, counts"


def record(conn: Any, erasure: Erasure) -> None:
    conn.execute(
        f"INSERT INTO erasures ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
        (
            erasure.id,
            erasure.api_key_id,
            erasure.user_id,
            to_iso(erasure.erased_at),
            json.dumps(erasure.counts, sort_keys=True),
        ),
    )


def listed(conn: Any, owner: str | None, limit: int) -> list[Erasure]:
    """Newest first; every owner's when ``owner`` is None (admin)."""
    where, params = ("WHERE api_key_id = ? ", [owner]) if owner is not None else ("", [])
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM erasures {where}ORDER BY erased_at DESC, id LIMIT ?",
        [*params, limit],
    )
    return [_erasure(r) for r in rows]


def erased_since(conn: Any, owner: str, user_id: str, since: datetime) -> bool:
    """Whether ``owner``'s end user ``user_id`` (or the whole key) was erased at or
    after ``since``: a job queued before an erasure stores nothing after it."""
    row = conn.execute(
        "SELECT 1 FROM erasures WHERE api_key_id = ? AND (user_id IS NULL OR user_id = ?) "
        "AND erased_at >= ? LIMIT 1",
        (owner, user_id, to_iso(since)),
    ).fetchone()
    return row is not None


def _erasure(row: Any) -> Erasure:
    try:
        counts = {str(k): int(v) for k, v in json.loads(row[4]).items()}
    except (TypeError, ValueError, AttributeError):
        counts = {}
    return Erasure(str(row[0]), str(row[1]), row[2], parse_iso(str(row[3])), counts)
