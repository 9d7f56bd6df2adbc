"""SQL for ``quarantine``: messages the guard refused, held for review."""

from __future__ import annotations

from typing import Any

from memoryd.models import Held, parse_iso, to_iso
from memoryd.storage.contract.quarantine import NewHeld

_COLUMNS = "id, api_key_id, user_id, session_id, text, source, reason, said_at, request_id"


def hold(conn: Any, item: NewHeld) -> int:
    rows = conn.execute(
        "INSERT INTO quarantine (api_key_id, user_id, session_id, text, source, reason, "
        "said_at, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            item.api_key_id,
            item.user_id,
            item.session_id,
            item.text,
            item.source,
            item.reason,
            to_iso(item.said_at),
            item.request_id,
        ),
    )
    return int(next(iter(rows))[0])


def listed(conn: Any, owner: str | None, user_id: str | None, limit: int) -> list[Held]:
    where, params = [], []
    if owner is not None:
        where.append("api_key_id = ?")
        params.append(owner)
    if user_id is not None:
        where.append("user_id = ?")
        params.append(user_id)
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM quarantine {clause}ORDER BY id DESC LIMIT ?", [*params, limit]
    )
    return [_held(r) for r in rows]


def one(conn: Any, held_id: int) -> Held | None:
    for row in conn.execute(f"SELECT {_COLUMNS} FROM quarantine WHERE id = ?", (held_id,)):
        return _held(row)
    return None


def unhold(conn: Any, held_id: int) -> Held | None:
    for row in conn.execute(
        f"DELETE FROM quarantine WHERE id = ? RETURNING {_COLUMNS}", (held_id,)
    ):
        return _held(row)
    return None


def drop(conn: Any, owner: str, user_id: str | None) -> int:
    where, params = "api_key_id = ?", [owner]
    if user_id is not None:
        where += " AND user_id = ?"
        params.append(user_id)
    return len(list(conn.execute(f"DELETE FROM quarantine WHERE {where} RETURNING id", params)))


def _held(row: Any) -> Held:
    return Held(
        int(row[0]),
        str(row[1]),
        str(row[2] or ""),
        str(row[3] or ""),
        str(row[4]),
        str(row[5]),
        str(row[6]),
        parse_iso(str(row[7])),
        str(row[8]) if row[8] else None,
    )
