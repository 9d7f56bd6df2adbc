"""SQL for the ``memories`` table and its FTS5 index. No business rules here.

Every function takes a connection: read functions any connection, write functions
the writer's (they run inside ``Database.write``). Times are bound as canonical ISO
strings (``models.to_iso``), so comparisons are plain string comparisons that can use
the indexes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from memoryd.models import GLOBAL_OWNER, Memory, MemoryPatch, NewMemory, to_iso
from memoryd.storage.contract.memories import (
    Clearing,
    Deleted,
    Filter,
    ListQuery,
    OwnerRow,
    Page,
    Upserted,
)
from memoryd.storage.rows import CAREFUL, COLUMNS, NCOLS, derived, escape_like, row_to_memory
from memoryd.storage.sql import context

#: ``rows.derived``'s columns, as an UPDATE's SET list.
DERIVED = "metadata = ?, slot = ?, subjects = ?, attribute = ?, pinned = ?"


def filter_sql(flt: Filter, branch: str = "") -> tuple[str, list[Any]]:
    """``flt`` as a WHERE clause over ``memories m`` and its parameters. ``branch``
    narrows a profile filter to its pinned rows or to its attributes' ones (``recent``
    asks for each with its own index)."""
    clauses = ["(m.expires_at IS NULL OR m.expires_at > ?)"]
    params: list[Any] = [to_iso(flt.now)]
    if flt.current_only:
        clauses.append("m.superseded_at IS NULL")
    _end_user(flt, clauses, params)
    if flt.profile is not None:
        # each branch repeats its partial index's WHERE, so the planner may use it
        marks = ", ".join("?" for _ in flt.profile) or "NULL"
        # pinned, or carried as a constraint (``rows.CAREFUL``); an attribute's own rows
        # are those nobody pinned or unpinned
        pinned = "(m.pinned IS NOT NULL AND m.pinned = 1)"
        careful = f"(m.pinned IS NOT NULL AND m.pinned = {CAREFUL})"
        of = (
            f"(m.attribute IS NOT NULL AND m.attribute IN ({marks}) "
            f"AND (m.pinned IS NULL OR m.pinned = {CAREFUL}))"
        )
        if branch == "pinned":
            clauses.append(pinned)
        elif branch == "careful":
            clauses.append(careful)
        else:
            clauses.append(of if branch == "attribute" else f"({pinned} OR {careful} OR {of})")
            params += flt.profile
    if flt.owners is not None:
        marks = ", ".join("?" for _ in flt.owners) or "NULL"
        clauses.insert(0, f"m.api_key_id IN ({marks})")
        params[:0] = flt.owners
    if flt.session_id is not None:
        clauses.append("m.session_id = ?")
        params.append(flt.session_id)
    if flt.created_after is not None:
        clauses.append("m.created_at >= ?")
        params.append(to_iso(flt.created_after))
    if flt.type is not None:
        clauses.append("m.type = ?")
        params.append(flt.type.value)
    return " AND ".join(clauses), params


def _end_user(flt: Filter, clauses: list[str], params: list[Any]) -> None:
    """Which end users' rows a filter sees: a named one's own, and the key's shared
    ones unless the key keeps them from its end users (and never the ``unshared``
    attributes of them); with no end user named, the shared ones alone. (For a
    profile the column is an expression: its own indexes find its few rows, not the
    (owner, end user) one, which would walk all of them.)"""
    if flt.user_id is None:
        return
    user = "(m.user_id || '')" if flt.profile is not None else "m.user_id"
    if not flt.user_id:
        clauses.append(f"{user} = ''")
    elif not flt.shared and GLOBAL_OWNER in (flt.owners or ()):
        # the global pool is everyone's (its instructions excepted), whatever the key shares
        marks = ", ".join("?" for _ in flt.unshared) or "NULL"
        clauses.append(
            f"({user} = ? OR (m.api_key_id = ? AND {user} = '' AND (m.attribute IS NULL OR "
            f"m.attribute NOT IN ({marks}))))"
        )
        params += [flt.user_id, GLOBAL_OWNER, *flt.unshared]
    elif not flt.shared:
        clauses.append(f"{user} = ?")
        params.append(flt.user_id)
    elif flt.unshared:
        marks = ", ".join("?" for _ in flt.unshared)
        clauses.append(
            f"({user} = ? OR ({user} = '' AND (m.attribute IS NULL OR "
            f"m.attribute NOT IN ({marks}))))"
        )
        params += [flt.user_id, *flt.unshared]
    else:
        clauses.append(f"{user} IN ('', ?)")
        params.append(flt.user_id)


# -- reads ---------------------------------------------------------------------------


def get(conn: Any, memory_id: str) -> Memory | None:
    rows = conn.execute(f"SELECT {COLUMNS} FROM memories m WHERE m.id = ?", (memory_id,))
    row = next(iter(rows), None)
    return row_to_memory(row) if row else None


def get_many(conn: Any, ids: Sequence[str]) -> dict[str, Memory]:
    found: dict[str, Memory] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for row in conn.execute(f"SELECT {COLUMNS} FROM memories m WHERE m.id IN ({marks})", chunk):
            found[row[0]] = row_to_memory(row)
    return found


def existing_ids(conn: Any, ids: Sequence[str], flt: Filter | None = None) -> set[str]:
    """Those of ``ids`` that exist (and pass ``flt``): vector tiers outside SQLite can lag
    a delete or an edit, so SQL has the last word on what they return."""
    if not ids:
        return set()
    where, params = filter_sql(flt) if flt is not None else ("TRUE", [])
    marks = ", ".join("?" for _ in ids)
    query = f"SELECT m.id FROM memories m WHERE m.id IN ({marks}) AND {where}"
    return {r[0] for r in conn.execute(query, [*ids, *params])}


def count(conn: Any) -> int:
    """Every stored memory, every owner (history included)."""
    (n,) = next(iter(conn.execute("SELECT COUNT(*) FROM memories")))
    return int(n)


#: Each memory's neighbours, for the rows a WHERE clause appended to it picks.
NEIGHBOURS = (
    "SELECT m.id, "
    "(SELECT p.id FROM memories p WHERE p.api_key_id = m.api_key_id "
    " AND p.session_id = m.session_id AND p.seq < m.seq ORDER BY p.seq DESC LIMIT 1), "
    "(SELECT n.id FROM memories n WHERE n.api_key_id = m.api_key_id "
    " AND n.session_id = m.session_id AND n.seq > m.seq ORDER BY n.seq LIMIT 1) "
    "FROM memories m WHERE "
)


def neighbours(conn: Any, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The memories written just before and just after each of ``ids`` by the same
    owner in the same session (by ``seq``, the write order). Two index seeks per id
    on ``(api_key_id, session_id)``, whose entries are ordered by rowid."""
    found: dict[str, tuple[str, ...]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        found |= neighbour_rows(conn.execute(f"{NEIGHBOURS}m.id IN ({marks})", chunk))
    return found


def neighbour_rows(rows: Any) -> dict[str, tuple[str, ...]]:
    return {str(m): tuple(x for x in (b, a) if x is not None) for m, b, a in rows}


def get_by_key(conn: Any, owner: str, key: str, user_id: str = "") -> Memory | None:
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE m.api_key_id = ? AND m.user_id = ? AND m.key = ?",
        (owner, user_id, key),
    )
    row = next(iter(rows), None)
    return row_to_memory(row) if row else None


def list_page(conn: Any, query: ListQuery) -> Page:
    owner, session_id, q, user_id = query.owner, query.session_id, query.q, query.user_id
    include_superseded = query.include_superseded
    clauses: list[str] = [] if include_superseded else ["m.superseded_at IS NULL"]
    params: list[Any] = []
    if user_id is not None:  # one end user's own memories ("" = the key's shared ones)
        clauses.append("m.user_id = ?")
        params.append(user_id)
    if owner is not None:
        clauses.append("m.api_key_id = ?")
        params.append(owner)
    if session_id is not None:
        clauses.append("m.session_id = ?")
        params.append(session_id)
    if q:
        pattern = f"%{escape_like(q.lower())}%"
        clauses.append("(lower(m.content) LIKE ? ESCAPE '\\' OR lower(m.key) LIKE ? ESCAPE '\\')")
        params += [pattern, pattern]
    base_where = " AND ".join(clauses) or "TRUE"
    # byType ignores the type filter, so a UI can show every type's count as tabs.
    by_type = {
        t: int(n)
        for t, n in conn.execute(
            f"SELECT m.type, COUNT(*) FROM memories m WHERE {base_where} GROUP BY m.type", params
        )
    }
    where, page_params = base_where, list(params)
    if query.type is not None:
        where += " AND m.type = ?"
        page_params.append(query.type.value)
    (total, tokens) = next(
        iter(
            conn.execute(
                "SELECT COUNT(*), COALESCE(SUM((length(m.content) + 3) / 4), 0) "
                f"FROM memories m WHERE {where}",
                page_params,
            )
        )
    )
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE {where} "
        "ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?",
        [*page_params, query.limit, query.offset],
    )
    return Page([row_to_memory(r) for r in rows], int(total), by_type, int(tokens))


def hidden_counts(conn: Any, flt: Filter) -> dict[str, int]:
    """Current memories of ``flt``'s owners (and session) that its expiry and retention
    cut exclude: ``{"expired": n, "retention": n}``."""
    clauses = ["m.superseded_at IS NULL"]
    params: list[Any] = []
    if flt.owners is not None:
        clauses.append(f"m.api_key_id IN ({', '.join('?' for _ in flt.owners) or 'NULL'})")
        params += flt.owners
    if flt.session_id is not None:
        clauses.append("m.session_id = ?")
        params.append(flt.session_id)
    _end_user(flt, clauses, params)
    where = " AND ".join(clauses)
    # Two narrow counts rather than one pass over every memory of the owner: few
    # memories carry an expiry (the expires_at index finds them: an expression for the
    # owner keeps SQLite's planner off the owner index, which walked all 100k memories
    # of a large owner), and the retention count runs only when a retention cut exists
    # (the owner/created_at index).
    unindexed = where.replace("m.api_key_id IN", "(m.api_key_id || '') IN")
    (expired,) = next(
        iter(
            conn.execute(
                f"SELECT COUNT(*) FROM memories m WHERE {unindexed} "
                "AND m.expires_at IS NOT NULL AND m.expires_at <= ?",
                [*params, to_iso(flt.now)],
            )
        )
    )
    old = 0
    if flt.created_after is not None:
        (old,) = next(
            iter(
                conn.execute(
                    f"SELECT COUNT(*) FROM memories m WHERE {where} AND m.created_at < ? "
                    "AND (m.expires_at IS NULL OR m.expires_at > ?)",
                    [*params, to_iso(flt.created_after), to_iso(flt.now)],
                )
            )
        )
    return {"expired": int(expired), "retention": int(old)}


def known_subjects(conn: Any, flt: Filter) -> list[str]:
    """Every subject of the memories ``flt`` lets a retrieval see, lowercased."""
    where, params = filter_sql(flt)
    rows = conn.execute(
        f"SELECT DISTINCT m.subjects FROM memories m WHERE {where} AND m.subjects IS NOT NULL",
        params,
    )
    return sorted({name for (value,) in rows for name in str(value).split("|") if name})


def tokens_used(conn: Any, owner: str | None = None) -> int:
    sql = "SELECT COALESCE(SUM((length(content) + 3) / 4), 0) FROM memories"
    rows = conn.execute(sql + " WHERE api_key_id = ?", (owner,)) if owner else conn.execute(sql)
    (total,) = next(iter(rows))
    return int(total)


def recent(conn: Any, flt: Filter, limit: int) -> list[Memory]:
    if flt.profile is not None:
        return _profile_rows(conn, flt, limit)
    where, params = filter_sql(flt)
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE {where} "
        "ORDER BY m.created_at DESC, m.seq DESC LIMIT ?",
        [*params, limit],
    )
    return [row_to_memory(r) for r in rows]


def _profile_rows(conn: Any, flt: Filter, limit: int) -> list[Memory]:
    """A profile's rows, newest first: its pinned ones and its attributes' ones, each
    found by its own partial index and sorted here (one query with both, or ordered by
    ``created_at``, walked every row of the owner on its (owner, created_at) index)."""
    found: dict[str, tuple[Any, ...]] = {}
    # each branch fills what the ones before it left, so the rows capture marked careful
    # never crowd out a person's pins or the profile's own attributes
    for branch in ("pinned", "attribute", "careful") if flt.pinned else ("attribute",):
        room = limit - len(found)
        if branch == "careful":
            room = min(room, CAREFUL_ROWS)
        if room <= 0:
            break
        where, params = filter_sql(flt, branch)
        for row in conn.execute(
            f"SELECT {COLUMNS}, m.seq FROM memories m WHERE {where} "
            "ORDER BY m.created_at || '' DESC, m.seq + 0 DESC LIMIT ?",
            [*params, room],
        ):
            found.setdefault(row[0], tuple(row))
    newest = sorted(found.values(), key=lambda r: (str(r[7]), int(r[NCOLS])), reverse=True)
    return [row_to_memory(r) for r in newest[:limit]]


#: A profile read's careful rows at most: the newest constraints capture marked; a
#: profile's budget holds fewer lines than this anyway.
CAREFUL_ROWS = 8


def older_than(conn: Any, owner: str, cutoff: datetime) -> list[Memory]:
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE m.api_key_id = ? AND m.created_at < ? "
        "AND m.superseded_at IS NULL ORDER BY m.created_at ASC, m.seq ASC",
        (owner, to_iso(cutoff)),
    )
    return [row_to_memory(r) for r in rows]


def owner_rows(conn: Any, owner: str, *, after_seq: int, batch: int) -> list[OwnerRow]:
    """One keyset page of an owner's memories, oldest first (export streams these)."""
    rows = conn.execute(
        f"SELECT m.seq, {COLUMNS} FROM memories m WHERE m.api_key_id = ? AND m.seq > ? "
        "ORDER BY m.seq LIMIT ?",
        (owner, after_seq, batch),
    )
    return [OwnerRow(int(r[0]), row_to_memory(r[1:])) for r in rows]


def decay_candidates(conn: Any, owner: str | None, limit: int) -> list[Memory]:
    sql = f"SELECT {COLUMNS} FROM memories m"
    params: list[Any] = []
    if owner:
        sql += " WHERE m.api_key_id = ?"
        params.append(owner)
    sql += " ORDER BY m.created_at ASC, m.seq ASC LIMIT ?"
    return [row_to_memory(r) for r in conn.execute(sql, [*params, max(1, limit)])]


def owners(conn: Any) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT api_key_id FROM memories ORDER BY 1")]


# -- writes (run on the writer connection) -------------------------------------------


def upsert(conn: Any, new: NewMemory, key: str, now: datetime) -> Upserted:
    """Insert, or update in place on ``(owner, key)``.

    Stating a superseded memory again makes it current again (it is a refresh).
    """
    existing = get_by_key(conn, new.api_key_id, key, new.user_id)
    expires = to_iso(new.expires_at) if new.expires_at else None
    if existing is not None:
        merged = {**existing.metadata, **(new.metadata or {})}
        was = context.position_of(conn, existing.id)
        conn.execute(
            "UPDATE memories SET content = ?, type = ?, session_id = ?, expires_at = ?, "
            f"{DERIVED}, updated_at = ?, superseded_at = NULL, "
            "superseded_by = NULL, "
            "needs_reindex = CASE WHEN content IS DISTINCT FROM ? THEN 1 ELSE needs_reindex END "
            "WHERE id = ?",
            (
                new.content,
                new.type.value,
                new.session_id,
                expires,
                *derived(merged),
                to_iso(now),
                new.content,
                existing.id,
            ),
        )
        if existing.content != new.content or (was and was[2] != (new.session_id or "")):
            context.written(conn, existing.id, was)
        stored = get(conn, existing.id)
        assert stored is not None
        return Upserted(stored, created=False)
    memory_id = new.id if new.id and get(conn, new.id) is None else str(uuid.uuid4())
    created = new.created_at or now
    conn.execute(
        "INSERT INTO memories (id, api_key_id, user_id, session_id, type, key, content, "
        "metadata, slot, subjects, attribute, pinned, created_at, updated_at, expires_at, "
        "needs_reindex) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)",
        (
            memory_id,
            new.api_key_id,
            new.user_id,
            new.session_id,
            new.type.value,
            key,
            new.content,
            *derived(new.metadata or {}),
            to_iso(created),
            to_iso(created),
            expires,
        ),
    )
    context.written(conn, memory_id)
    stored = get(conn, memory_id)
    assert stored is not None
    return Upserted(stored, created=True)


def update(conn: Any, memory_id: str, patch: MemoryPatch, now: datetime) -> Memory | None:
    sets: list[str] = []
    params: list[Any] = []
    if patch.type is not None:
        sets.append("type = ?")
        params.append(patch.type.value)
    if patch.key is not None:
        sets.append("key = ?")
        params.append(patch.key)
    if patch.content is not None:
        sets.append("content = ?")
        params.append(patch.content)
    if patch.metadata is not None:
        sets.append(DERIVED)
        params += derived(patch.metadata)
    if patch.clear_expiry:
        sets.append("expires_at = NULL")
    elif patch.expires_at is not None:
        sets.append("expires_at = ?")
        params.append(to_iso(patch.expires_at))
    changed = [(col, val) for col, val in (("content", patch.content), ("key", patch.key)) if val]
    if changed:
        # Re-embed only when the embedded text or the key really changed.
        cond = " OR ".join(f"{col} IS DISTINCT FROM ?" for col, _ in changed)
        sets.append(f"needs_reindex = CASE WHEN {cond} THEN 1 ELSE needs_reindex END")
        params += [val for _, val in changed]
    sets.append("updated_at = ?")
    params.append(to_iso(now))
    before = get(conn, memory_id) if patch.content is not None else None
    conn.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", [*params, memory_id])
    if conn.changes() == 0:
        return None
    if before is not None and before.content != patch.content:
        context.written(conn, memory_id, context.position_of(conn, memory_id))
    return get(conn, memory_id)


def delete(conn: Any, memory_id: str) -> int | None:
    """Delete one row; returns its seq (for the vector tiers) or None if unknown."""
    gone = _delete_returning(conn, "m.id = ?", [memory_id])
    return gone[0].seq if gone else None


def _delete_returning(conn: Any, where: str, params: Sequence[Any]) -> list[Deleted]:
    """Delete, then refresh the context of the memories that were next to the deleted
    ones (none of a deleted memory's text stays in another's index)."""
    rows = list(
        conn.execute(
            f"DELETE FROM memories AS m WHERE {where} "
            "RETURNING id, seq, api_key_id, user_id, session_id",
            params,
        )
    )
    context.removed(conn, [(str(r[2]), str(r[3]), str(r[4]), int(r[1])) for r in rows if r[4]])
    return [Deleted(str(r[0]), int(r[1])) for r in rows]


def delete_matching(conn: Any, clearing: Clearing) -> list[Deleted]:
    where, params = "m.api_key_id = ?", [clearing.owner]
    if clearing.user_id is not None:
        where += " AND m.user_id = ?"
        params.append(clearing.user_id)
    if clearing.type is not None:
        where += " AND m.type = ?"
        params.append(clearing.type.value)
    if clearing.older_than is not None:
        where += " AND m.created_at < ?"
        params.append(to_iso(clearing.older_than))
    return _delete_returning(conn, where, params)


def delete_expired(conn: Any, now: datetime) -> list[Deleted]:
    return _delete_returning(conn, "m.expires_at IS NOT NULL AND m.expires_at <= ?", [to_iso(now)])


def bump_access(conn: Any, ids: Iterable[str], now: datetime, times: int = 1) -> int:
    unique = sorted({i for i in ids if isinstance(i, str) and i})
    if not unique or times < 1:
        return 0
    marks = ", ".join("?" for _ in unique)
    conn.execute(
        "UPDATE memories SET access_count = access_count + ?, last_accessed_at = ? "
        f"WHERE id IN ({marks})",
        [int(times), to_iso(now), *unique],
    )
    return int(conn.changes())


def set_content(conn: Any, memory_id: str, content: str, now: datetime) -> None:
    conn.execute(
        "UPDATE memories SET content = ?, updated_at = ?, needs_reindex = 1 WHERE id = ?",
        (content, to_iso(now), memory_id),
    )
    context.written(conn, memory_id, context.position_of(conn, memory_id))


def for_owner(conn: Any, owner: str, session_id: str | None = None) -> list[Memory]:
    """Every memory of an owner (optionally one session), newest first."""
    sql = f"SELECT {COLUMNS} FROM memories m WHERE m.api_key_id = ?"
    params: list[Any] = [owner]
    if session_id is not None:
        sql += " AND m.session_id = ?"
        params.append(session_id)
    sql += " ORDER BY m.created_at DESC, m.seq DESC"
    return [row_to_memory(r) for r in conn.execute(sql, params)]
