"""``/api/memory*``: thin routes that parse, call the engine, and shape the answer."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from memoryd.api import schemas as s
from memoryd.core.ids import MAX_NAMED_CHARS
from memoryd.engine import require_owner
from memoryd.engine.reports import HealthReport, ImportResult, SummaryReport
from memoryd.errors import NotFoundError, PayloadTooLargeError, ValidationError
from memoryd.http.deps import EngineDep
from memoryd.http.public import TypeName
from memoryd.models import MemoryPatch, MemoryType, NewMemory, utcnow, written_via

router = APIRouter(prefix="/api/memory", tags=["memory"])

OwnerQuery = Annotated[str | None, Query(min_length=1, max_length=200)]
MAX_IMPORT_BYTES = 64 * 1024 * 1024


@router.get("", response_model=s.MemoryList)
def list_memories(
    engine: EngineDep,
    apiKeyId: OwnerQuery = None,
    type: Annotated[TypeName | None, Query()] = None,
    sessionId: Annotated[str | None, Query(max_length=200)] = None,
    q: Annotated[str | None, Query(max_length=1000)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    offset: Annotated[int | None, Query(ge=0, le=100_000_000)] = None,
    includeSuperseded: Annotated[
        bool, Query(description="also list memories a newer statement replaced (history)")
    ] = False,
    userId: Annotated[
        str | None,
        Query(min_length=1, max_length=200, description="one end user's own memories"),
    ] = None,
) -> dict[str, Any]:
    result = engine.list_memories(
        owner=apiKeyId,
        type=s.memory_type(type),
        session_id=sessionId,
        q=q,
        limit=limit,
        page=page,
        offset=offset,
        history=includeSuperseded,
        user_id=userId,
    )
    return {
        "data": [m.to_dict() for m in result.data],
        "total": result.total,
        "page": result.page,
        "limit": result.limit,
        "totalPages": result.total_pages,
        "stats": {
            "total": result.total,
            "byType": result.by_type,
            "tokensUsed": result.tokens,  # of what the filters match, as total is
        },
    }


def _with_subjects(
    metadata: dict[str, Any] | None, subjects: list[str] | None
) -> dict[str, Any] | None:
    """``subjects`` is the API's name for ``metadata.subjects``."""
    if subjects is None:
        return metadata
    return {**(metadata or {}), "subjects": [s.strip() for s in subjects if s.strip()]}


@router.post("", response_model=s.MemoryCreated, status_code=201)
def create_memory(body: s.MemoryCreate, engine: EngineDep, response: Response) -> dict[str, Any]:
    """Upsert on ``(apiKeyId, key)``: 201 when created, 200 when it updated a memory."""
    memory, created = engine.create(
        NewMemory(
            api_key_id=body.apiKeyId,
            user_id=body.userId or "",
            content=body.content,
            key=body.key,
            type=MemoryType(body.type),
            session_id=body.sessionId or "",
            metadata=written_via(_with_subjects(body.metadata, body.subjects), "rest", utcnow()),
            expires_at=body.expiresAt,
        )
    )
    if not created:
        response.status_code = 200
    return {"id": memory.id, "memory": memory.to_dict()}


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/x-ndjson": {}},
            "description": "Every memory of the owner, one JSON object per line",
        }
    },
)
def export_memories(
    engine: EngineDep,
    apiKeyId: Annotated[str, Query(min_length=1, max_length=200)],
    userId: Annotated[
        str | None, Query(min_length=1, max_length=200, description="one end user's only")
    ] = None,
) -> StreamingResponse:
    require_owner(apiKeyId)

    def lines() -> Iterator[bytes]:
        for item in engine.export(apiKeyId, userId):
            yield (json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8")

    disposition = export_disposition(apiKeyId)
    return StreamingResponse(
        lines(),
        media_type="application/x-ndjson",
        headers={"content-disposition": disposition},
    )


#: Unicode categories never put into a download name: controls, format characters
#: (bidi overrides that disguise an extension), surrogates, line/paragraph separators.
_UNSAFE_NAME_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def export_disposition(owner: str) -> str:
    """The export's content-disposition for any owner id: an ASCII ``filename`` plus the
    RFC 5987 UTF-8 ``filename*`` (headers are latin-1), neither of which, decoded, holds
    a path separator, a quote or a control character."""
    ascii_name = re.sub(r"[^A-Za-z0-9._-]", "_", owner)
    utf8_owner = "".join(
        "_" if c in '/\\"' or unicodedata.category(c) in _UNSAFE_NAME_CATEGORIES else c
        for c in owner
    )
    utf8_name = quote(f"memoryd-{utf8_owner}.jsonl", safe="")
    return f"attachment; filename=\"memoryd-{ascii_name}.jsonl\"; filename*=UTF-8''{utf8_name}"


@router.post(
    "/import",
    response_model=s.ImportResult,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/x-ndjson": {"schema": {"type": "string"}},
                "text/plain": {"schema": {"type": "string"}},
                "application/json": {"schema": {"type": "array", "items": {"type": "object"}}},
            },
        }
    },
)
async def import_memories(
    request: Request,
    engine: EngineDep,
    apiKeyId: OwnerQuery = None,
    userId: Annotated[
        str | None,
        Query(min_length=1, max_length=200, description="every line to this end user"),
    ] = None,
) -> ImportResult:
    """JSON Lines in the export format, or one JSON array of the same objects (errors
    then name the ``item``); upserts by (owner, end user, key). With
    ``apiKeyId`` every line goes to that owner (with ``userId`` to that end user of
    it); without, each line keeps its own ``apiKeyId`` (and ``userId``)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_IMPORT_BYTES:
            raise PayloadTooLargeError(f"import body larger than {MAX_IMPORT_BYTES} bytes")
    lines = bytes(body).splitlines()
    return await run_in_threadpool(engine.import_jsonl, lines, owner=apiKeyId, user_id=userId)


@router.delete("", response_model=s.ErasureOne)
def forget_subject(
    engine: EngineDep,
    apiKeyId: Annotated[str, Query(min_length=1, max_length=200)],
    userId: Annotated[
        str | None, Query(max_length=MAX_NAMED_CHARS, description="one end user")
    ] = None,
    all: Annotated[bool, Query(description="the whole key: every end user")] = False,
) -> dict[str, Any]:
    """Erase one end user of a key, or every memory of the key (``all=true``): rows and
    their history, keyword entries, vectors in every tier, queued extraction; the
    receipt."""
    return {"erasure": _forget(engine, apiKeyId, userId, all)}


@router.post("/forget", response_model=s.ErasureOne)
def forget_subject_post(body: s.ForgetRequest, engine: EngineDep) -> dict[str, Any]:
    """``DELETE /api/memory`` with the subject in a JSON body."""
    return {"erasure": _forget(engine, body.apiKeyId, body.userId, body.all)}


def _forget(engine: Any, owner: str, user_id: str | None, whole: bool) -> dict[str, Any]:
    """One end user, or the whole key only when asked for by name: a misspelt
    ``userId`` must not erase every end user."""
    if (user_id is None) == (not whole):
        raise ValidationError(
            "name the end user to erase (userId), or erase every end user of the key "
            "with all=true (not both)",
            details=[{"field": "userId", "message": "required unless all=true"}],
        )
    result: dict[str, Any] = engine.forget(owner, user_id=user_id).to_dict()
    return result


@router.get("/erasures", response_model=s.ErasureList)
def list_erasures(
    engine: EngineDep,
    apiKeyId: OwnerQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """The erasure receipts, newest first (every key's without ``apiKeyId``)."""
    return {"erasures": [e.to_dict() for e in engine.erasures(apiKeyId, limit)]}


@router.get("/health", response_model=s.HealthResult)
def memory_health(engine: EngineDep) -> HealthReport:
    """A real write -> read -> delete round trip in the store (no vector work)."""
    return engine.health_check()


@router.post("/retrieve-preview", response_model=s.PreviewResult)
def retrieve_preview(body: s.PreviewRequest, engine: EngineDep) -> dict[str, Any]:
    if not body.query.strip():
        raise ValidationError(
            "query: must not be blank", details=[{"field": "query", "message": "blank"}]
        )
    preview = engine.preview(
        body.apiKeyId,
        body.query,
        strategy=body.strategy,
        max_tokens=body.maxTokens,
        session_id=body.sessionId,
        scope="session" if body.sessionId else None,
        limit=body.limit,
        # no end user named: what a request naming none carries (the gateway's "")
        user_id=body.userId or "",
    )
    return preview.to_dict()


@router.get("/engine-status")
def engine_status(engine: EngineDep) -> dict[str, Any]:
    return engine.status()


@router.get("/embedding-providers")
def embedding_providers(engine: EngineDep) -> dict[str, Any]:
    return {"providers": engine.embedding_providers()}


@router.post("/summarize", response_model=s.SummarizeResult)
def summarize(body: s.SummarizeRequest, engine: EngineDep) -> SummaryReport:
    """One summary per end user of the key (and one of its shared memories), or of
    ``userId`` only: an end user's memories never end up in a shared summary. Without
    ``apiKeyId``, each owner in turn (``owners`` says what was done for each)."""
    if body.apiKeyId is None:
        if body.userId is not None:
            raise ValidationError(
                "userId needs apiKeyId: an end user belongs to one key",
                details=[{"field": "apiKeyId", "message": "required with userId"}],
            )
        return engine.summarize_every_owner(body.olderThanDays, dry_run=body.dryRun)
    return engine.summarize_older_than(
        body.apiKeyId, body.olderThanDays, dry_run=body.dryRun, user_id=body.userId
    )


@router.post("/reindex", response_model=s.ReindexStarted, status_code=202)
def reindex(engine: EngineDep, body: s.ReindexRequest | None = None) -> dict[str, Any]:
    body = body or s.ReindexRequest()
    if body.target == "qdrant":
        # Push what Qdrant lacks (force: everything) in the background; progress is in
        # engine status under qdrant.sync.
        return engine.qdrant.start_backfill(force=body.force)
    return engine.reindex(force=body.force)


UserGuard = Annotated[
    str | None,
    Query(min_length=1, max_length=200, description="only if it belongs to this end user"),
]


@router.get("/profile", response_model=s.ProfilePublic)
def get_profile(
    engine: EngineDep,
    apiKeyId: Annotated[str, Query(min_length=1, max_length=200)],
    userId: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    query: Annotated[str, Query(max_length=4000, description="a request's words")] = "",
) -> dict[str, Any]:
    """The profile every request of this key (or its end user) carries, ahead of the
    retrieved memories: pinned memories, standing instructions, the name to use, role,
    health and dietary constraints; ``query`` adds what its advice topic bears on."""
    return engine.profile(apiKeyId, query, user_id=userId or "").to_dict()


@router.post("/{memory_id}/pin", response_model=s.MemoryOne)
def pin_memory(
    memory_id: str, engine: EngineDep, body: s.PinRequest | None = None, userId: UserGuard = None
) -> dict[str, Any]:
    """Pin a memory into its owner's profile (``pinned`` true, the default), keep it
    out of it (false), or let its attribute decide again (null)."""
    return _pinned(engine, memory_id, True if body is None else body.pinned, userId)


@router.post("/{memory_id}/unpin", response_model=s.MemoryOne)
def unpin_memory(memory_id: str, engine: EngineDep, userId: UserGuard = None) -> dict[str, Any]:
    """Keep a memory out of its owner's profile, even a standing instruction."""
    return _pinned(engine, memory_id, False, userId)


def _pinned(
    engine: Any, memory_id: str, pinned: bool | None, user_id: str | None
) -> dict[str, Any]:
    _belongs(engine, memory_id, user_id)
    memory = engine.pin(memory_id, pinned)
    if memory is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    return {"memory": memory.to_dict()}


@router.get("/{memory_id}", response_model=s.MemoryOne)
def get_memory(memory_id: str, engine: EngineDep, userId: UserGuard = None) -> dict[str, Any]:
    memory = engine.get(memory_id)
    if memory is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    if userId is not None and memory.user_id != userId:  # the guard of PUT and DELETE
        raise NotFoundError(f"no memory with id {memory_id} for end user {userId!r}")
    return {"memory": memory.to_dict()}


def _belongs(engine: Any, memory_id: str, user_id: str | None) -> None:
    """With ``userId``, a memory of another end user (or a shared one) is not found."""
    memory = engine.get(memory_id)
    if user_id is not None and (memory is None or memory.user_id != user_id):
        raise NotFoundError(f"no memory with id {memory_id} for end user {user_id!r}")


@router.put("/{memory_id}", response_model=s.MemoryOne)
def update_memory(
    memory_id: str, body: s.MemoryUpdate, engine: EngineDep, userId: UserGuard = None
) -> dict[str, Any]:
    _belongs(engine, memory_id, userId)
    given = body.model_fields_set
    for name in ("type", "key", "content", "metadata"):
        if name in given and getattr(body, name) is None:
            raise ValidationError(
                f"{name}: must not be null", details=[{"field": name, "message": "null"}]
            )
    metadata = body.metadata
    if body.subjects is not None:  # on top of the metadata sent, or the stored one
        current = engine.get(memory_id)
        base = metadata if metadata is not None else (current.metadata if current else {})
        metadata = _with_subjects(base, body.subjects)
    patch = MemoryPatch(
        type=MemoryType(body.type) if body.type else None,
        key=body.key,
        content=body.content,
        metadata=metadata,
        expires_at=body.expiresAt,
        clear_expiry="expiresAt" in given and body.expiresAt is None,
    )
    memory = engine.update(memory_id, patch)
    if memory is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    return {"memory": memory.to_dict()}


@router.delete("/{memory_id}", response_model=s.Deleted)
def delete_memory(memory_id: str, engine: EngineDep, userId: UserGuard = None) -> dict[str, bool]:
    _belongs(engine, memory_id, userId)
    if not engine.delete(memory_id):
        raise NotFoundError(f"no memory with id {memory_id}")
    return {"deleted": True}
