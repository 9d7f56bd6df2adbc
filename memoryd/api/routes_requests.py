"""``/api/requests/{id}``: what one recent gateway request carried, and why."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from memoryd.api.deps import EngineDep
from memoryd.engine.recent import CAPACITY, RecentRequests
from memoryd.errors import NotFoundError

router = APIRouter(prefix="/api/requests", tags=["requests"])


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
