"""Context-aware indexing: each memory of a conversation indexed with its
neighbours.

Memories written in sequence (one owner, one end user, one session, in ``seq``
order) are turns of a conversation, and a turn alone often lacks the words of what it
answers ("Yes, every Sunday" after "Do you still swim?"). Two things are kept per
memory:

- ``memories.context``: the text of up to ``FIELD`` memories before and after it, a
  second field of the keyword index (weighted below the memory's own text). It changes
  when a neighbour is written, edited or deleted, so every write path here refreshes
  the memories around the row it touched, in the same transaction.
- the dense view: the memory with the ``VIEW_BEFORE`` memories before it (and
  ``VIEW_AFTER`` after it), embedded as a second vector (``view_text_sql``). A write,
  edit or delete that changes a view flags that memory for embedding again.

Session-less memories (``session_id = ''``) are not a conversation: no context.
Neighbours come from the same end user only, so no user's words reach another's index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: Memories on each side that make up the keyword context field.
FIELD = 2
#: Earlier and later memories embedded with a memory in its dense context view. A later
#: one changes the view when it is written: the memory is then embedded again.
VIEW_BEFORE = 2
VIEW_AFTER = 0
assert max(VIEW_BEFORE, VIEW_AFTER) <= FIELD, "a write refreshes only what FIELD reaches"
#: Joins the texts of a context (both SQL dialects bind it as a parameter).
SEPARATOR = "\n"

_GROUP = (
    "p.api_key_id = {r}.api_key_id AND p.user_id = {r}.user_id AND p.session_id = {r}.session_id"
)


def _neighbour(row: str, before: bool, offset: int) -> str:
    """The content of the ``offset``-th memory before/after ``row`` in its group."""
    cmp, order = ("<", " DESC") if before else (">", "")
    return (
        f"(SELECT p.content FROM memories p WHERE {_GROUP.format(r=row)} "
        f"AND p.seq {cmp} {row}.seq ORDER BY p.seq{order} LIMIT 1 OFFSET {offset})"
    )


def _texts(row: str, before: int, after: int) -> str:
    earlier = [_neighbour(row, True, i) for i in reversed(range(before))]
    later = [_neighbour(row, False, i) for i in range(after)]
    return ", ".join([*earlier, *later])


def view_text_sql(row: str = "m") -> str:
    """SQL for a memory's dense context view (one ``?``: the separator): the earlier
    neighbours, the memory itself and the later ones, in the order they were written."""
    later = f", {_texts(row, 0, VIEW_AFTER)}" if VIEW_AFTER else ""
    return (
        f"CASE WHEN {row}.session_id = '' THEN {row}.content ELSE "
        f"concat_ws(CAST(? AS TEXT), {_texts(row, VIEW_BEFORE, 0)}, {row}.content{later}) END"
    )


_REFRESH = (
    "UPDATE memories AS m SET context = CASE WHEN m.session_id = '' THEN '' "
    f"ELSE COALESCE(concat_ws(CAST(? AS TEXT), {_texts('m', FIELD, FIELD)}), '') END "
    "WHERE m.seq IN ({marks})"
)


def _around(
    conn: Any, owner: str, user: str, session: str, seq: int, *, later: bool = True
) -> list[tuple[int, bool]]:
    """``(seq, in_view)`` of the memories within ``FIELD`` of position ``seq`` in a
    group (``seq`` itself excluded; it may be a deleted row's): ``in_view`` when that
    position is part of the memory's dense context view."""
    if not session:
        return []
    found: list[tuple[int, bool]] = []
    for after in (False, True) if later else (False,):
        cmp, order = (">", "") if after else ("<", " DESC")
        rows = conn.execute(
            "SELECT seq FROM memories WHERE api_key_id = ? AND user_id = ? AND session_id = ? "
            f"AND seq {cmp} ? ORDER BY seq{order} LIMIT ?",
            [owner, user, session, seq, FIELD],
        )
        reach = VIEW_BEFORE if after else VIEW_AFTER
        found += [(int(r[0]), distance < reach) for distance, r in enumerate(rows)]
    return found


def _views_in_use(conn: Any) -> bool:
    """Whether the vector index holds context views (its signature has the indexer's
    ``:ctx``, before any ``:int8`` of the store). Without them a neighbour's edit
    changes no vector, and flagging the memories around it re-embedded them for
    nothing. Switching views on or off changes the signature, which rebuilds every
    vector anyway."""
    row = conn.execute("SELECT embedding_signature FROM memory_vec_meta WHERE id = 1").fetchone()
    return bool(row and row[0] and ":ctx" in str(row[0]))


def _refresh(conn: Any, seqs: Iterable[int], flag: Iterable[int] = ()) -> None:
    """Recompute the context of ``seqs``; ``flag`` (whose dense view changed) are
    queued for embedding again when the index holds views."""
    wanted = sorted(set(seqs))
    if wanted:
        marks = ", ".join("?" for _ in wanted)
        conn.execute(_REFRESH.format(marks=marks), [SEPARATOR, *wanted])
    again = sorted(set(flag))
    if again and _views_in_use(conn):
        marks = ", ".join("?" for _ in again)
        conn.execute(f"UPDATE memories SET needs_reindex = 1 WHERE seq IN ({marks})", again)


Position = tuple[str, str, str, int]  # owner, end user, session, seq


def position_of(conn: Any, memory_id: str) -> Position | None:
    row = conn.execute(
        "SELECT api_key_id, user_id, session_id, seq FROM memories WHERE id = ?", [memory_id]
    ).fetchone()
    return (str(row[0]), str(row[1]), str(row[2]), int(row[3])) if row else None


def written(conn: Any, memory_id: str, was: Position | None = None) -> None:
    """After a memory was inserted or changed (content, session or end user): its own
    context and its neighbours', at its old place (``was``) and its new one; those
    whose dense view holds it are queued for embedding again."""
    now = position_of(conn, memory_id)
    if now is None:
        return
    seqs = {now[3]}
    flag: set[int] = set()
    # a new memory is the newest of its session: nothing was written after it
    for place in {p for p in (was, now) if p is not None}:
        for seq, in_view in _around(conn, *place, later=was is not None):
            seqs.add(seq)
            if in_view:
                flag.add(seq)
    if was is not None and was[:3] != now[:3]:
        flag.add(now[3])  # its own neighbours changed
    _refresh(conn, seqs, flag)


def removed(conn: Any, places: Sequence[Position]) -> None:
    """After memories were deleted: the context of those around each place, and the
    dense views that held a deleted memory."""
    seqs: set[int] = set()
    flag: set[int] = set()
    for place in places:
        for seq, in_view in _around(conn, *place):
            seqs.add(seq)
            if in_view:
                flag.add(seq)
    _refresh(conn, seqs, flag)
