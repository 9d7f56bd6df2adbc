"""The two views of a memory in one Qdrant point (context-aware indexing).

A collection (or Edge shard) memoryd creates declares two named vectors, ``memory`` (the
memory's own text) and ``context`` (the memory with its earlier neighbours), whether or
not context indexing is on. Why always both: a vector name a point lacks costs nothing
(no storage, no graph entry), and an external collection is never altered behind the
operator's back, so declaring both up front means switching context indexing on later
needs only a re-push, never a new collection. With it off, points carry ``memory`` alone.

A collection made before this holds one unnamed vector: it keeps serving the memory
view, and reports the context view unavailable until a forced backfill adds a
``context`` vector in place (the memory view stays the unnamed one). Deleting a point
deletes both vectors: they are one point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memoryd.storage.base import OutboxRow
from memoryd.vectors.base import VectorItem
from memoryd.vectors.qdrant.payload import check_dims, row_payload

MEMORY = "memory"
CONTEXT = "context"


@dataclass(frozen=True, slots=True)
class Layout:
    """A collection's vector names per view: ``memory`` is ``""`` for the unnamed vector
    of an older collection, ``context`` None when the collection has no context vector."""

    memory: str
    context: str | None

    def name_of(self, view: str) -> str | None:
        if view not in (MEMORY, CONTEXT):
            raise ValueError(f"unknown vector view {view!r}")
        return self.memory if view == MEMORY else self.context

    def using(self, view: str) -> str | None:
        """The ``using`` of a search (None: the unnamed vector)."""
        return self.name_of(view) or None

    @property
    def names(self) -> list[str]:
        return [self.memory] + ([self.context] if self.context else [])


#: What memoryd creates; ``LEGACY`` is a collection from before context-aware indexing.
NAMED = Layout(MEMORY, CONTEXT)
LEGACY = Layout("", None)


def layout_of(sizes: dict[str, int], dimensions: int) -> tuple[int, Layout]:
    """``(memory vector size, layout)`` of a collection from its ``{name: size}`` (``""``
    for the unnamed vector). The memory view is ``memory``, else the first vector (a
    collection an operator made); ``context`` counts only at the memory vector's size."""
    memory = MEMORY if MEMORY in sizes else next(iter(sizes))
    size = sizes[memory]
    context = CONTEXT if memory != CONTEXT and sizes.get(CONTEXT) == size == dimensions else None
    return size, Layout(memory, context)


def unavailable(collection: str, layout: Layout) -> str | None:
    """Why the context view cannot be searched here, with the fix; None when it can."""
    if layout.context is not None:
        return None
    return (
        f"context view unavailable: Qdrant collection {collection!r} has no context vector "
        "(made before context-aware indexing), so it serves the memory view only. Fix: "
        'POST /api/memory/reindex {"target": "qdrant", "force": true} adds the context '
        "vector in place (a server needs Qdrant 1.18+) and pushes every memory again."
    )


def points(
    items: Sequence[VectorItem], layout: Layout, dim: int | None
) -> list[tuple[VectorItem, Any]]:
    """One ``(memory item, vectors)`` per memory, the views of a memory merged: a plain
    list for a collection with only its unnamed vector (the form every server takes),
    else ``{name: values}``. An upsert replaces a whole point, so a view without its
    memory view is refused; a context view the collection cannot hold is left out."""
    own: dict[str, VectorItem] = {}
    named: dict[str, dict[str, list[float]]] = {}
    for item, values in zip(items, check_dims(items, dim), strict=True):
        name = layout.name_of(item.view)
        if item.view == MEMORY:
            own[item.memory_id] = item
        if name is not None:
            named.setdefault(item.memory_id, {})[name] = values
    lacking = {item.memory_id for item in items} - own.keys()
    if lacking:
        raise ValueError(f"a Qdrant point needs its memory view: {sorted(lacking)[:3]}")
    out: list[tuple[VectorItem, Any]] = []
    for mid, item in own.items():
        vectors = named[mid]
        out.append((item, vectors[""] if list(vectors) == [""] else vectors))
    return out


# -- outbox rows -> items (the tier's worker) -------------------------------------------


def row_items(
    rows: Sequence[OutboxRow],
    dim: int | None,
    context: bool,
    embed: Callable[[list[str]], np.ndarray],
) -> list[VectorItem]:
    """The items of outbox rows (``OutboxReads.outbox_rows``): each memory's vector from
    its float32 blob (``emb``; with ``context``, ``ctx_emb`` too), or embedded again
    (its text, or its ``ctx_text`` view) when the blob is missing or int8-quantized."""
    views: list[tuple[OutboxRow, str, bytes | None, str | None]]
    views = [(row, MEMORY, row.emb, row.content) for row in rows]
    if context:
        views += [(row, CONTEXT, row.ctx_emb, row.ctx_text) for row in rows]
    vectors: dict[tuple[int, str], np.ndarray] = {}
    missing: list[tuple[int, str, str]] = []
    for row, view, blob, text in views:
        if dim is not None and isinstance(blob, bytes) and len(blob) == dim * 4:
            vectors[(int(row.seq), view)] = np.frombuffer(blob, dtype=np.float32)
        else:  # int8-quantized sqlite-vec (or no vector): embed the text again
            missing.append((int(row.seq), view, str(text or row.content)))
    if missing:
        texts = list(dict.fromkeys(text for _, _, text in missing))
        made = dict(zip(texts, embed(texts), strict=True))
        for seq, view, text in missing:
            vectors[(seq, view)] = np.asarray(made[text], dtype=np.float32)
    items = []
    for row in rows:
        payload = row_payload(row)
        for view in (MEMORY, CONTEXT) if context else (MEMORY,):
            vector = vectors[(int(row.seq), view)]
            items.append(VectorItem(row.id, row.owner, vector, payload, view=view))
    return items
