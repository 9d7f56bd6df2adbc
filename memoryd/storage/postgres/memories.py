"""SQL for ``memories`` on PostgreSQL: the rows, their full-text search and supersession.

The same statements as ``storage/sqlite/memories.py`` and ``history.py`` in
PostgreSQL's dialect (``%s`` parameters, ``IS DISTINCT FROM``, a stored ``tsvector``
with a GIN index for keyword search). Every function takes a psycopg connection: read
functions any, write functions the one inside the caller's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from memoryd.core.fts_query import query_tokens
from memoryd.models import Memory, MemoryPatch, NewMemory, Reconcile, Reconciled, to_iso
from memoryd.storage.base import Clearing, Filter, ListQuery, Page
from memoryd.storage.rows import COLUMNS, NCOLS, escape_like, row_to_memory, slot_of
from memoryd.storage.rows import dumps as _dumps


def filter_sql(flt: Filter) -> tuple[str, list[Any]]:
    """``flt`` as a WHERE clause over ``memories m`` and its parameters."""
    clauses = ["(m.expires_at IS NULL OR m.expires_at > %s)"]
    params: list[Any] = [to_iso(flt.now)]
    if flt.owners is not None:
        clauses.insert(0, "m.api_key_id = ANY(%s)")
        params.insert(0, list(flt.owners))
    if flt.current_only:
        clauses.append("m.superseded_at IS NULL")
    if flt.user_id is not None:
        clauses.append("m.user_id IN ('', %s)")
        params.append(flt.user_id)
    if flt.session_id is not None:
        clauses.append("m.session_id = %s")
        params.append(flt.session_id)
    if flt.created_after is not None:
        clauses.append("m.created_at >= %s")
        params.append(to_iso(flt.created_after))
    if flt.type is not None:
        clauses.append("m.type = %s")
        params.append(flt.type.value)
    return " AND ".join(clauses), params


def _memories(conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Memory]:
    return [row_to_memory(r) for r in conn.execute(sql, params).fetchall()]


# -- reads -----------------------------------------------------------------------------


def get(conn: Any, memory_id: str) -> Memory | None:
    found = _memories(conn, f"SELECT {COLUMNS} FROM memories m WHERE m.id = %s", (memory_id,))
    return found[0] if found else None


def get_many(conn: Any, ids: Sequence[str]) -> dict[str, Memory]:
    if not ids:
        return {}
    rows = _memories(conn, f"SELECT {COLUMNS} FROM memories m WHERE m.id = ANY(%s)", (list(ids),))
    return {m.id: m for m in rows}


def get_by_key(conn: Any, owner: str, key: str, user_id: str = "") -> Memory | None:
    found = _memories(
        conn,
        f"SELECT {COLUMNS} FROM memories m "
        "WHERE m.api_key_id = %s AND m.user_id = %s AND m.key = %s",
        (owner, user_id, key),
    )
    return found[0] if found else None


def existing_ids(conn: Any, ids: Sequence[str], flt: Filter | None = None) -> set[str]:
    if not ids:
        return set()
    where, params = filter_sql(flt) if flt is not None else ("TRUE", [])
    rows = conn.execute(
        f"SELECT m.id FROM memories m WHERE m.id = ANY(%s) AND {where}", [list(ids), *params]
    ).fetchall()
    return {r[0] for r in rows}


def count(conn: Any) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])


def owners(conn: Any) -> list[str]:
    rows = conn.execute("SELECT DISTINCT api_key_id FROM memories ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def tokens_used(conn: Any, owner: str | None = None) -> int:
    sql = "SELECT COALESCE(SUM((length(content) + 3) / 4), 0) FROM memories"
    row = (
        conn.execute(sql + " WHERE api_key_id = %s", (owner,)) if owner else conn.execute(sql)
    ).fetchone()
    return int(row[0])


def recent(conn: Any, flt: Filter, limit: int) -> list[Memory]:
    where, params = filter_sql(flt)
    return _memories(
        conn,
        f"SELECT {COLUMNS} FROM memories m WHERE {where} "
        "ORDER BY m.created_at DESC, m.seq DESC LIMIT %s",
        [*params, limit],
    )


def tsquery_text(query: str) -> str | None:
    """The query's words (stop words dropped, as for FTS5) ORed for ``to_tsquery``;
    only word characters reach PostgreSQL's parser, so no user text can break it."""
    words = [w for w in query_tokens(query) if w.isalnum()]
    return " | ".join(words) if words else None


def keyword_search(conn: Any, query: str, flt: Filter, limit: int) -> list[tuple[Memory, float]]:
    """``ts_rank_cd`` over the stored ``tsvector`` (content weighted over key), with
    ``to_tsquery`` over the ORed words; best first, relevance > 0."""
    text = tsquery_text(query)
    if text is None:
        return []
    where, params = filter_sql(flt)
    rows = conn.execute(
        f"SELECT {COLUMNS}, ts_rank_cd(m.tsv, q, 1) AS rank "
        "FROM memories m, to_tsquery('english', %s) q "
        f"WHERE m.tsv @@ q AND {where} ORDER BY rank DESC, m.seq DESC LIMIT %s",
        [text, *params, limit],
    ).fetchall()
    return [(row_to_memory(r), max(float(r[NCOLS]), 1e-9)) for r in rows]


def hidden_counts(conn: Any, flt: Filter) -> dict[str, int]:
    clauses = ["m.superseded_at IS NULL"]
    params: list[Any] = []
    if flt.owners is not None:
        clauses.append("m.api_key_id = ANY(%s)")
        params.append(list(flt.owners))
    if flt.session_id is not None:
        clauses.append("m.session_id = %s")
        params.append(flt.session_id)
    if flt.user_id is not None:
        clauses.append("m.user_id IN ('', %s)")
        params.append(flt.user_id)
    after = to_iso(flt.created_after) if flt.created_after else ""
    now = to_iso(flt.now)
    row = conn.execute(
        "SELECT COUNT(*) FILTER (WHERE m.expires_at IS NOT NULL AND m.expires_at <= %s), "
        "COUNT(*) FILTER (WHERE m.created_at < %s AND (m.expires_at IS NULL "
        f"OR m.expires_at > %s)) FROM memories m WHERE {' AND '.join(clauses)}",
        [now, after, now, *params],
    ).fetchone()
    return {"expired": int(row[0]), "retention": int(row[1])}


def neighbours(conn: Any, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT m.id, "
        "(SELECT p.id FROM memories p WHERE p.api_key_id = m.api_key_id "
        " AND p.session_id = m.session_id AND p.seq < m.seq ORDER BY p.seq DESC LIMIT 1), "
        "(SELECT n.id FROM memories n WHERE n.api_key_id = m.api_key_id "
        " AND n.session_id = m.session_id AND n.seq > m.seq ORDER BY n.seq LIMIT 1) "
        "FROM memories m WHERE m.id = ANY(%s)",
        (list(ids),),
    ).fetchall()
    return {r[0]: tuple(x for x in (r[1], r[2]) if x is not None) for r in rows}


def list_page(conn: Any, query: ListQuery) -> Page:
    owner, session_id, q, user_id = query.owner, query.session_id, query.q, query.user_id
    include_superseded = query.include_superseded
    clauses: list[str] = [] if include_superseded else ["m.superseded_at IS NULL"]
    params: list[Any] = []
    if user_id is not None:
        clauses.append("m.user_id = %s")
        params.append(user_id)
    if owner is not None:
        clauses.append("m.api_key_id = %s")
        params.append(owner)
    if session_id is not None:
        clauses.append("m.session_id = %s")
        params.append(session_id)
    if q:
        pattern = f"%{escape_like(q.lower())}%"
        clauses.append("(lower(m.content) LIKE %s ESCAPE '\\' OR lower(m.key) LIKE %s ESCAPE '\\')")
        params += [pattern, pattern]
    base = " AND ".join(clauses) or "TRUE"
    by_type = {
        str(t): int(n)
        for t, n in conn.execute(
            f"SELECT m.type, COUNT(*) FROM memories m WHERE {base} GROUP BY m.type", params
        ).fetchall()
    }
    where, page_params = base, list(params)
    if query.type is not None:
        where += " AND m.type = %s"
        page_params.append(query.type.value)
    counted = conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {where}", page_params)
    total = int(counted.fetchone()[0])
    rows = _memories(
        conn,
        f"SELECT {COLUMNS} FROM memories m WHERE {where} "
        "ORDER BY m.created_at DESC, m.seq DESC LIMIT %s OFFSET %s",
        [*page_params, query.limit, query.offset],
    )
    return Page(rows, total, by_type)


def for_owner(conn: Any, owner: str, session_id: str | None = None) -> list[Memory]:
    sql = f"SELECT {COLUMNS} FROM memories m WHERE m.api_key_id = %s"
    params: list[Any] = [owner]
    if session_id is not None:
        sql += " AND m.session_id = %s"
        params.append(session_id)
    return _memories(conn, sql + " ORDER BY m.created_at DESC, m.seq DESC", params)


def owner_rows(conn: Any, owner: str, *, after: int, batch: int) -> list[tuple[int, Memory]]:
    rows = conn.execute(
        f"SELECT m.seq, {COLUMNS} FROM memories m WHERE m.api_key_id = %s AND m.seq > %s "
        "ORDER BY m.seq LIMIT %s",
        (owner, after, batch),
    ).fetchall()
    return [(int(r[0]), row_to_memory(r[1:])) for r in rows]


def older_than(conn: Any, owner: str, cutoff: datetime) -> list[Memory]:
    return _memories(
        conn,
        f"SELECT {COLUMNS} FROM memories m WHERE m.api_key_id = %s AND m.created_at < %s "
        "AND m.superseded_at IS NULL ORDER BY m.created_at ASC, m.seq ASC",
        (owner, to_iso(cutoff)),
    )


def decay_candidates(conn: Any, owner: str | None, limit: int) -> list[Memory]:
    sql = f"SELECT {COLUMNS} FROM memories m"
    params: list[Any] = []
    if owner:
        sql += " WHERE m.api_key_id = %s"
        params.append(owner)
    sql += " ORDER BY m.created_at ASC, m.seq ASC LIMIT %s"
    return _memories(conn, sql, [*params, max(1, limit)])


# -- writes ----------------------------------------------------------------------------


def upsert(conn: Any, new: NewMemory, key: str, now: datetime) -> tuple[Memory, bool]:
    """Insert, or update in place on ``(owner, end user, key)``: ``(memory, created)``."""
    existing = get_by_key(conn, new.api_key_id, key, new.user_id)
    expires = to_iso(new.expires_at) if new.expires_at else None
    if existing is not None:
        merged = {**existing.metadata, **(new.metadata or {})}
        conn.execute(
            "UPDATE memories SET content = %s, type = %s, session_id = %s, expires_at = %s, "
            "metadata = %s, slot = %s, updated_at = %s, superseded_at = NULL, "
            "superseded_by = NULL, needs_reindex = CASE WHEN content IS DISTINCT FROM %s "
            "THEN 1 ELSE needs_reindex END WHERE id = %s",
            (
                new.content,
                new.type.value,
                new.session_id,
                expires,
                _dumps(merged),
                slot_of(merged),
                to_iso(now),
                new.content,
                existing.id,
            ),
        )
        stored = get(conn, existing.id)
        assert stored is not None
        return stored, False
    memory_id = new.id if new.id and get(conn, new.id) is None else str(uuid.uuid4())
    created = to_iso(new.created_at or now)
    conn.execute(
        "INSERT INTO memories (id, api_key_id, user_id, session_id, type, key, content, "
        "metadata, slot, created_at, updated_at, expires_at, needs_reindex) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 1)",
        (
            memory_id,
            new.api_key_id,
            new.user_id,
            new.session_id,
            new.type.value,
            key,
            new.content,
            _dumps(new.metadata or {}),
            slot_of(new.metadata or {}),
            created,
            created,
            expires,
        ),
    )
    stored = get(conn, memory_id)
    assert stored is not None
    return stored, True


def supersede(
    conn: Any,
    owner: str,
    *,
    now: datetime,
    by: str | None,
    slots: Sequence[str] = (),
    ids: Sequence[str] = (),
    user_id: str = "",
) -> list[str]:
    targets: list[str] = []
    params: list[Any] = []
    exact = [s for s in slots if not s.endswith(":*")]
    if exact:
        targets.append("slot = ANY(%s)")
        params.append(exact)
    for prefix in (s[:-1] for s in slots if s.endswith(":*")):
        targets.append("slot LIKE %s ESCAPE '\\'")
        params.append(escape_like(prefix) + "%")
    if ids:
        targets.append("id = ANY(%s)")
        params.append(list(ids))
    if not targets:
        return []
    rows = conn.execute(
        "UPDATE memories SET superseded_at = %s, superseded_by = %s "
        f"WHERE api_key_id = %s AND user_id = %s AND ({' OR '.join(targets)}) "
        "AND superseded_at IS NULL AND id IS DISTINCT FROM %s RETURNING id",
        [to_iso(now), by, owner, user_id, *params, by],
    ).fetchall()
    return [r[0] for r in rows]


def reconcile(
    conn: Any, item: Reconcile, new: NewMemory | None, key: str, now: datetime
) -> Reconciled:
    if new is None:
        gone = supersede(
            conn, item.owner, now=now, by=None, ids=item.retract_ids, user_id=item.user_id
        )
        return Reconciled(None, False, gone)
    memory, created = upsert(conn, new, key, now)
    gone = supersede(
        conn,
        new.api_key_id,
        now=now,
        by=memory.id,
        slots=item.supersedes,
        ids=item.retract_ids,
        user_id=new.user_id,
    )
    return Reconciled(memory, created, gone)


def restore_history(conn: Any, rows: Sequence[tuple[str, datetime, str | None]]) -> None:
    for memory_id, at, by in rows:
        conn.execute(
            "UPDATE memories SET superseded_at = %s, superseded_by = %s WHERE id = %s",
            (to_iso(at), by, memory_id),
        )


def update(conn: Any, memory_id: str, patch: MemoryPatch, now: datetime) -> Memory | None:
    sets: list[str] = []
    params: list[Any] = []
    if patch.type is not None:
        sets.append("type = %s")
        params.append(patch.type.value)
    if patch.key is not None:
        sets.append("key = %s")
        params.append(patch.key)
    if patch.content is not None:
        sets.append("content = %s")
        params.append(patch.content)
    if patch.metadata is not None:
        sets.append("metadata = %s, slot = %s")
        params += [_dumps(patch.metadata), slot_of(patch.metadata)]
    if patch.clear_expiry:
        sets.append("expires_at = NULL")
    elif patch.expires_at is not None:
        sets.append("expires_at = %s")
        params.append(to_iso(patch.expires_at))
    changed = [(col, val) for col, val in (("content", patch.content), ("key", patch.key)) if val]
    if changed:
        cond = " OR ".join(f"{col} IS DISTINCT FROM %s" for col, _ in changed)
        sets.append(f"needs_reindex = CASE WHEN {cond} THEN 1 ELSE needs_reindex END")
        params += [val for _, val in changed]
    sets.append("updated_at = %s")
    params.append(to_iso(now))
    cur = conn.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = %s", [*params, memory_id])
    return get(conn, memory_id) if cur.rowcount else None


def set_content(conn: Any, memory_id: str, content: str, now: datetime) -> None:
    conn.execute(
        "UPDATE memories SET content = %s, updated_at = %s, needs_reindex = 1 WHERE id = %s",
        (content, to_iso(now), memory_id),
    )


def delete(conn: Any, memory_id: str) -> int | None:
    row = conn.execute("DELETE FROM memories WHERE id = %s RETURNING seq", (memory_id,)).fetchone()
    return int(row[0]) if row else None


def _delete_returning(conn: Any, where: str, params: Sequence[Any]) -> list[tuple[str, int]]:
    rows = conn.execute(
        f"DELETE FROM memories AS m WHERE {where} RETURNING m.id, m.seq", params
    ).fetchall()
    return [(r[0], int(r[1])) for r in rows]


def delete_matching(conn: Any, clearing: Clearing) -> list[tuple[str, int]]:
    where, params = "m.api_key_id = %s", [clearing.owner]
    if clearing.user_id is not None:
        where += " AND m.user_id = %s"
        params.append(clearing.user_id)
    if clearing.type is not None:
        where += " AND m.type = %s"
        params.append(clearing.type.value)
    if clearing.older_than is not None:
        where += " AND m.created_at < %s"
        params.append(to_iso(clearing.older_than))
    return _delete_returning(conn, where, params)


def delete_expired(conn: Any, now: datetime) -> list[tuple[str, int]]:
    return _delete_returning(conn, "m.expires_at IS NOT NULL AND m.expires_at <= %s", [to_iso(now)])


def bump_access(conn: Any, ids: Iterable[str], now: datetime) -> int:
    unique = sorted({i for i in ids if isinstance(i, str) and i})
    if not unique:
        return 0
    cur = conn.execute(
        "UPDATE memories SET access_count = access_count + 1, last_accessed_at = %s "
        "WHERE id = ANY(%s)",
        (to_iso(now), unique),
    )
    return int(cur.rowcount)
