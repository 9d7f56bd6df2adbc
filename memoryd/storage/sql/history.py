"""SQL for keeping memories current: superseding the older statements of a slot, and
the history an import brings back. Superseded rows stay in ``memories``; every
retrieval ``Filter`` skips them (``superseded_at IS NULL``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memoryd.models import NewMemory, Reconcile, Reconciled, to_iso
from memoryd.storage.rows import escape_like
from memoryd.storage.sql.memories import upsert


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
    """Mark the owner's current memories of ``slots`` (or with ``ids``) as superseded
    by memory ``by`` (None: retracted); ``by`` itself is never marked. A slot ending in
    ``:*`` names every slot under that prefix; ``slot~words`` only its memories that say
    those words ("I no longer live in Berlin" retires the home in Berlin, not the one
    in Porto), and ``*~words`` the extracted memories of any slot that say them ("forget
    what I said about Perth"). Returns the ids."""
    targets: list[str] = []
    params: list[Any] = []
    for slot, _, words in (s.partition("~") for s in slots if "~" in s):
        # "~=words": the words whole ("seat" is not in "Seattle"), else anywhere
        said, content = f"%{escape_like(words)}%", "lower(content)"
        if words.startswith("="):
            said, content = f"% {escape_like(_spaced(words[1:]))} %", _WORDS
        if slot == "*":  # any slot: a retraction by what the memory says
            targets.append(f"(slot IS NOT NULL AND {content} LIKE lower(?) ESCAPE '\\')")
            params.append(said)
        elif slot.endswith(":*"):
            targets.append(f"(slot LIKE ? ESCAPE '\\' AND {content} LIKE lower(?) ESCAPE '\\')")
            params += [escape_like(slot[:-1]) + "%", said]
        else:
            targets.append(f"(slot = ? AND {content} LIKE lower(?) ESCAPE '\\')")
            params += [slot, said]
    slots = [s for s in slots if "~" not in s]
    exact = [s for s in slots if not s.endswith(":*")]
    if exact:
        targets.append(f"slot IN ({', '.join('?' for _ in exact)})")
        params += exact
    for prefix in (s[:-1] for s in slots if s.endswith(":*")):
        targets.append("slot LIKE ? ESCAPE '\\'")
        params.append(escape_like(prefix) + "%")
    if ids:
        targets.append(f"id IN ({', '.join('?' for _ in ids)})")
        params += list(ids)
    if not targets:
        return []
    rows = conn.execute(
        "UPDATE memories SET superseded_at = ?, superseded_by = ? "
        f"WHERE api_key_id = ? AND user_id = ? AND ({' OR '.join(targets)}) "
        "AND superseded_at IS NULL AND id IS DISTINCT FROM ? RETURNING id",
        [to_iso(now), by, owner, user_id, *params, by],
    )
    return [r[0] for r in rows]


#: a memory's words between spaces, punctuation read as a space (SQLite and PostgreSQL
#: both have ``replace`` and ``||``): "User's dog, Koda." is " user s dog  koda  "
_PUNCTUATION = (",", ".", "!", ";", ":", "'", '"', "(", ")", "-", "/")  # no "?": a placeholder
_WORDS = "lower(content)"
for _mark in _PUNCTUATION:
    _quoted = _mark.replace("'", "''")
    _WORDS = f"replace({_WORDS}, '{_quoted}', ' ')"
_WORDS = f"(' ' || {_WORDS} || ' ')"


def _spaced(words: str) -> str:
    """``words`` as ``_WORDS`` reads a memory: lower case, punctuation a space."""
    low = words.lower()
    for mark in _PUNCTUATION:
        low = low.replace(mark, " ")
    return " ".join(low.split())


def reconcile(
    conn: Any, item: Reconcile, new: NewMemory | None, key: str, now: datetime
) -> Reconciled:
    """One ``MemoryEngine.reconcile`` item: upsert, then retire what it replaces."""
    if new is None:
        gone = supersede(
            conn,
            item.owner,
            now=now,
            by=None,
            slots=item.supersedes,
            ids=item.retract_ids,
            user_id=item.user_id,
        )
        return Reconciled(None, False, gone)
    stored = upsert(conn, new, key, now)
    gone = supersede(
        conn,
        new.api_key_id,
        now=now,
        by=stored.memory.id,
        slots=item.supersedes,
        ids=item.retract_ids,
        user_id=new.user_id,
    )
    return Reconciled(stored.memory, stored.created, gone)


def restore_usage(
    conn: Any, rows: Sequence[tuple[str, datetime | None, int, datetime | None]]
) -> None:
    """Set memories' ``(id, updated_at, access_count, last_accessed_at)`` as another
    system kept them (an import from OmniRoute or mem0); a None time leaves it."""
    for memory_id, updated_at, count, last in rows:
        conn.execute(
            "UPDATE memories SET updated_at = COALESCE(?, updated_at), access_count = ?, "
            "last_accessed_at = COALESCE(?, last_accessed_at) WHERE id = ?",
            (
                to_iso(updated_at) if updated_at else None,
                max(0, count),
                to_iso(last) if last else None,
                memory_id,
            ),
        )


def restore_history(conn: Any, rows: Sequence[tuple[str, datetime, str | None]]) -> None:
    """Set memories' supersession ``(id, at, by)`` as an import found it."""
    for memory_id, superseded_at, superseded_by in rows:
        conn.execute(
            "UPDATE memories SET superseded_at = ?, superseded_by = ? WHERE id = ?",
            (to_iso(superseded_at), superseded_by, memory_id),
        )
