"""SQL on PostgreSQL for everything beside the memory rows: settings, client keys, the
extraction queue, the reindex flags and the external vector tier's outbox."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memoryd.models import to_iso
from memoryd.storage.base import NewJob, NewKey

KEY_COLUMNS = "id, name, prefix, created_at, revoked_at, memory_enabled"


# -- settings ----------------------------------------------------------------------------


def settings(conn: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    rows = conn.execute(
        "SELECT key, value FROM settings WHERE left(key, %s) = %s", (len(prefix), prefix)
    ).fetchall()
    for key, value in rows:
        try:
            out[key[len(prefix) :]] = json.loads(value)
        except (TypeError, ValueError):
            continue
    return out


def setting(conn: Any, key: str, default: Any = None) -> Any:
    row = conn.execute("SELECT value FROM settings WHERE key = %s", (key,)).fetchone()
    if row is None:
        return default
    try:
        return json.loads(row[0])
    except (TypeError, ValueError):
        return default


def write_settings(conn: Any, values: Mapping[str, Any], now: datetime, prefix: str) -> None:
    for key, value in values.items():
        conn.execute(
            "INSERT INTO settings (key, value, updated_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
            "updated_at = excluded.updated_at",
            (prefix + key, json.dumps(value, ensure_ascii=False), to_iso(now)),
        )


def delete_settings(conn: Any, keys: Iterable[str], prefix: str) -> None:
    names = [prefix + k for k in keys]
    if names:
        conn.execute("DELETE FROM settings WHERE key = ANY(%s)", (names,))


# -- client keys ---------------------------------------------------------------------------


def _key_row(row: Sequence[Any] | None) -> tuple[Any, ...] | None:
    return None if row is None else tuple(row)


def key(conn: Any, key_id: str) -> tuple[Any, ...] | None:
    return _key_row(
        conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = %s", (key_id,)).fetchone()
    )


def key_by_hash(conn: Any, key_hash: str) -> tuple[Any, ...] | None:
    return _key_row(
        conn.execute(
            f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = %s", (key_hash,)
        ).fetchone()
    )


def keys(conn: Any, *, include_revoked: bool) -> list[tuple[Any, ...]]:
    where = "" if include_revoked else "WHERE revoked_at IS NULL "
    rows = conn.execute(
        f"SELECT {KEY_COLUMNS} FROM api_keys {where}ORDER BY created_at DESC, rowid DESC"
    ).fetchall()
    return [tuple(r) for r in rows]


def insert_key(conn: Any, key: NewKey) -> bool:
    flag = None if key.memory_enabled is None else int(key.memory_enabled)
    cur = conn.execute(
        "INSERT INTO api_keys (id, name, key_hash, prefix, created_at, revoked_at, "
        "memory_enabled) VALUES (%s, %s, %s, %s, %s, NULL, %s) ON CONFLICT (id) DO NOTHING",
        (key.key_id, key.name, key.key_hash, key.prefix, key.created_at, flag),
    )
    return bool(cur.rowcount)


def revoke_key(conn: Any, key_id: str, revoked_at: str) -> bool:
    cur = conn.execute(
        "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
        (revoked_at, key_id),
    )
    return bool(cur.rowcount)


def set_key_memory_enabled(conn: Any, key_id: str, value: bool | None) -> bool:
    flag = None if value is None else int(value)
    cur = conn.execute("UPDATE api_keys SET memory_enabled = %s WHERE id = %s", (flag, key_id))
    return bool(cur.rowcount)


# -- the extraction queue ------------------------------------------------------------------


def queue_extraction(conn: Any, job: NewJob) -> int:
    texts = json.dumps([list(t) for t in job.texts])
    row = conn.execute(
        "INSERT INTO extraction_queue (api_key_id, session_id, texts, created_at, user_id) "
        "VALUES (%s, %s, %s, %s, %s) RETURNING id",
        (job.owner, job.session_id, texts, to_iso(job.created_at), job.user_id),
    ).fetchone()
    return int(row[0])


def unqueue_extraction(conn: Any, job_id: int) -> None:
    conn.execute("DELETE FROM extraction_queue WHERE id = %s", (job_id,))


def queued_extractions(conn: Any) -> list[tuple[int, str, str, list[tuple[str, str]], str]]:
    jobs = []
    for job_id, owner, session_id, raw, user_id in conn.execute(
        "SELECT id, api_key_id, session_id, texts, user_id FROM extraction_queue ORDER BY id"
    ).fetchall():
        try:
            texts = [(str(t), str(s)) for t, s in json.loads(raw)]
        except (ValueError, TypeError):
            texts = []
        jobs.append((int(job_id), str(owner), str(session_id), texts, str(user_id or "")))
    return jobs


# -- the reindex flags ---------------------------------------------------------------------


def reindex_pending(conn: Any) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM memories WHERE needs_reindex = 1").fetchone()[0])


def _flagged(rows: Iterable[Sequence[Any]]) -> list[tuple[str, str, str]]:
    return [(r[0], r[1], r[2]) for r in rows]


def flagged(conn: Any, memory_ids: Sequence[str]) -> list[tuple[str, str, str]]:
    if not memory_ids:
        return []
    return _flagged(
        conn.execute(
            "SELECT id, api_key_id, content FROM memories WHERE needs_reindex = 1 AND id = ANY(%s)",
            (list(memory_ids),),
        ).fetchall()
    )


def oldest_flagged(conn: Any, limit: int) -> list[tuple[str, str, str]]:
    return _flagged(
        conn.execute(
            "SELECT id, api_key_id, content FROM memories WHERE needs_reindex = 1 "
            "ORDER BY created_at, seq LIMIT %s",
            (limit,),
        ).fetchall()
    )


def newest_flagged_of(conn: Any, owner: str, limit: int) -> list[tuple[str, str, str]]:
    return _flagged(
        conn.execute(
            "SELECT id, api_key_id, content FROM memories WHERE needs_reindex = 1 "
            "AND api_key_id = %s ORDER BY created_at DESC LIMIT %s",
            (owner, limit),
        ).fetchall()
    )


def mark_all_reindex(conn: Any) -> int:
    cur = conn.execute("UPDATE memories SET needs_reindex = 1 WHERE needs_reindex = 0")
    return int(cur.rowcount)


def clear_flag_if_unchanged(conn: Any, memory_id: str, content: str) -> bool:
    cur = conn.execute(
        "UPDATE memories SET needs_reindex = 0 WHERE id = %s AND content = %s",
        (memory_id, content),
    )
    return bool(cur.rowcount)


# -- the external vector tier's outbox -----------------------------------------------------


def outbox_active(conn: Any) -> bool:
    return bool(conn.execute("SELECT active FROM outbox_state WHERE id = 1").fetchone()[0])


def create_outbox(conn: Any) -> None:
    """Switch the triggers on (the tables exist from the first migration)."""
    conn.execute("UPDATE outbox_state SET active = TRUE WHERE id = 1 AND NOT active")


def outbox_pending(conn: Any) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM qdrant_pending").fetchone()[0])


def outbox_pushable(conn: Any) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM qdrant_pending p JOIN memories m ON m.seq = p.seq "
            "WHERE m.needs_reindex = 0"
        ).fetchone()[0]
    )


def outbox_rows(conn: Any, after: int, limit: int) -> list[Any]:
    """As the SQLite outbox: ``emb`` float32 bytes from pgvector, or None."""
    has_vectors = conn.execute("SELECT to_regclass('vec_memories') IS NOT NULL").fetchone()[0]
    vector = "v.emb::real[]" if has_vectors else "NULL::real[]"
    join = "LEFT JOIN vec_memories v ON v.seq = p.seq " if has_vectors else ""
    rows = conn.execute(
        "SELECT p.seq, p.gen, m.id, m.api_key_id, m.session_id, m.type, m.key, m.content, "
        f"m.created_at, m.expires_at, {vector} FROM qdrant_pending p "
        f"JOIN memories m ON m.seq = p.seq {join}"
        "WHERE m.needs_reindex = 0 AND p.seq > %s ORDER BY p.seq LIMIT %s",
        (after, limit),
    ).fetchall()
    out = []
    for row in rows:
        emb = row[10]
        blob = np.asarray(emb, dtype=np.float32).tobytes() if emb is not None else None
        out.append((*row[:10], blob))
    return out


def outbox_done(conn: Any, done: Sequence[tuple[int, int]]) -> None:
    for seq, gen in done:
        conn.execute("DELETE FROM qdrant_pending WHERE seq = %s AND gen = %s", (seq, gen))


def outbox_tombstones(conn: Any, limit: int) -> list[str]:
    rows = conn.execute("SELECT memory_id FROM qdrant_tombstones LIMIT %s", (limit,)).fetchall()
    return [str(r[0]) for r in rows]


def outbox_drop_tombstones(conn: Any, memory_ids: Sequence[str]) -> None:
    if memory_ids:
        conn.execute("DELETE FROM qdrant_tombstones WHERE memory_id = ANY(%s)", (list(memory_ids),))


def outbox_queue_all(conn: Any) -> int:
    conn.execute("DELETE FROM qdrant_tombstones")
    cur = conn.execute(
        "INSERT INTO qdrant_pending (seq, memory_id, gen) SELECT seq, id, 1 FROM memories "
        "ON CONFLICT (seq) DO UPDATE SET gen = qdrant_pending.gen + 1"
    )
    return int(cur.rowcount)
