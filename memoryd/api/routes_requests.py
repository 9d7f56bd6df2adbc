"""``/api/requests/{id}``: what one recent gateway request carried, and why."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from memoryd.engine.recent import CAPACITY, RecentRequests
from memoryd.errors import NotFoundError
from memoryd.http.deps import EngineDep

router = APIRouter(prefix="/api/requests", tags=["requests"])


@router.get("")
def carrying(
    request: Request,
    engine: EngineDep,
    memoryId: Annotated[str, Query(min_length=1, max_length=200)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    """The recent gateway requests (this server's window) that carried a memory, newest
    first, with how it was found each time; and how often it was ever carried
    (``accessCount``, every request, every server)."""
    memory = engine.get(memoryId)
    if memory is None:
        raise NotFoundError(f"no memory with id {memoryId}")
    recent: RecentRequests | None = getattr(request.app.state, "recent", None)
    found = recent.carrying(memoryId, limit) if recent is not None else []
    return {"memoryId": memoryId, "accessCount": memory.access_count, "requests": found}


@router.get("/{request_id}")
def carried(request_id: str, request: Request, engine: EngineDep) -> dict[str, Any]:
    """The memories a gateway request (its ``x-request-id``) carried: the profile's and
    the retrieved ones, each with how it was found; the memory as stored now (null once
    deleted or erased). Kept for this server's last requests that carried anything."""
    recent: RecentRequests | None = getattr(request.app.state, "recent", None)
    found = recent.get(request_id) if recent is not None else None
    if found is None:
        raise NotFoundError(
            f"no recent request {request_id!r} on this server (the last {CAPACITY} "
            "requests that carried memories are kept, in memory)"
        )
    for item in found["memories"]:
        memory = engine.get(item["id"])
        item["memory"] = None if memory is None else memory.to_dict()
    return {"request": found}
