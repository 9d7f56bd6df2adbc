"""``/api/memory/quarantine``: messages the guard held for review.

Held only with the setting ``quarantineGuarded`` on; listed here, released (extracted
as if the guard had let them pass) or discarded by an admin. Mounted before the
memory routes, whose ``/{memory_id}`` would take ``quarantine`` for an id.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from memoryd.core.ids import MAX_NAMED_CHARS, bounded_id
from memoryd.http.deps import EngineDep

router = APIRouter(prefix="/api/memory/quarantine", tags=["memory"])

#: A held message's id (the store's 64-bit integer).
HeldId = Annotated[int, Path(ge=1, le=2**63 - 1)]


@router.get("")
def held(
    engine: EngineDep,
    apiKeyId: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    userId: Annotated[str | None, Query(max_length=MAX_NAMED_CHARS)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """Held messages, newest first: of a key (every key's without ``apiKeyId``), of
    one end user of it; with the guard's reason."""
    user = bounded_id(userId.strip()) if userId is not None else None
    return {"held": [h.to_dict() for h in engine.held(apiKeyId, user, limit)]}


@router.post("/{held_id}/release")
def release(held_id: HeldId, engine: EngineDep) -> dict[str, Any]:
    """Extract the message as if the guard had let it pass; what it stored."""
    stored = engine.release_held(held_id)
    return {"stored": [r.memory.to_dict() for r in stored if r.memory is not None]}


@router.delete("/{held_id}")
def discard(held_id: HeldId, engine: EngineDep) -> dict[str, Any]:
    """Delete the message unextracted."""
    return {"discarded": engine.discard_held(held_id).to_dict()}
