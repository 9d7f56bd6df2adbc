"""``/api/keys``: client API keys. The secret appears only in the create reply.

The app mounts this router behind the admin-token dependency; a client key is never
an admin credential here.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from memoryd.api.schemas import ErrorBody
from memoryd.engine import llm_budget
from memoryd.engine.keys import MAX_ID_CHARS, MAX_NAME_CHARS
from memoryd.errors import NotFoundError, field_error
from memoryd.http.deps import EngineDep

router = APIRouter(prefix="/api/keys", tags=["keys"])


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class KeyCreate(_Strict):
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    #: Per-key memory override; omitted or null = follow the global ``enabled`` setting.
    memoryEnabled: bool | None = None
    #: Optional explicit id (= the owner id of the key's memories), e.g. to issue a key
    #: for memories already stored under that owner. Default: a random ``key_…`` id.
    id: str | None = Field(
        default=None, min_length=1, max_length=MAX_ID_CHARS, pattern=r"^[A-Za-z0-9_.-]+$"
    )
    #: A secret the key's client already holds (e.g. its OmniRoute key), checked by
    #: ``engine.keys.check_secret``; default: a new ``mk_…`` secret.
    secret: str | None = Field(
        default=None,
        description="The client's existing secret (16-256 printable ASCII chars, no "
        "spaces) instead of a new one; stored hashed.",
    )


class KeyUpdate(_Strict):
    memoryEnabled: bool | None


class KeyPublic(BaseModel):
    id: str
    name: str
    prefix: str
    createdAt: str
    revokedAt: str | None
    memoryEnabled: bool | None


class KeyCreated(BaseModel):
    id: str
    name: str
    key: str = Field(description="The secret. Shown only in this response; store it now.")
    prefix: str
    createdAt: str


class KeyList(BaseModel):
    data: list[KeyPublic]


class KeyOne(BaseModel):
    key: KeyPublic


class MonthUsage(BaseModel):
    month: str = Field(description="UTC month, YYYY-MM")
    llmExtractionTokens: int
    llmExtractionRequests: int
    llmExtractionMonthlyCap: int = Field(description="extractionKeyMonthlyTokenCap; 0: none")


class ServerUsage(BaseModel):
    """Since this server started (one server of a fleet)."""

    injectedRequests: int
    injectedTokens: int
    llmExtractionRequests: int
    llmExtractionPromptTokens: int
    llmExtractionCompletionTokens: int


class Quota(BaseModel):
    used: int | None = None
    limit: int = Field(description="0: no limit")


class KeyQuotas(BaseModel):
    """What the key keeps against its quotas (every end user, history included)."""

    memories: Quota
    bytes: Quota
    writesPerMinute: Quota


class KeyUsage(BaseModel):
    keyId: str
    thisMonth: MonthUsage
    sinceStart: ServerUsage
    quota: KeyQuotas


class Revoked(BaseModel):
    revoked: bool


@router.post(
    "",
    response_model=KeyCreated,
    status_code=201,
    responses={409: {"model": ErrorBody, "description": "The id, or the secret, is already taken"}},
)
def create_key(body: KeyCreate, engine: EngineDep, request: Request) -> dict[str, Any]:
    """Create a client key. The response carries the secret ``key``, never shown again."""
    admin = str(getattr(request.app.state, "admin_token", "") or "")
    if (
        body.secret is not None
        and admin
        and hmac.compare_digest(body.secret.encode(), admin.encode())
    ):
        # /mcp takes the admin token before client keys: that key would be the admin
        raise field_error("secret", "must not be the admin token")
    record, secret = engine.keys.create(
        body.name, memory_enabled=body.memoryEnabled, key_id=body.id, secret=body.secret
    )
    return {
        "id": record.id,
        "name": record.name,
        "key": secret,
        "prefix": record.prefix,
        "createdAt": record.to_dict()["createdAt"],
    }


@router.get("", response_model=KeyList)
def list_keys(
    engine: EngineDep,
    includeRevoked: Annotated[bool, Query()] = True,
) -> dict[str, Any]:
    """Every key, newest first, with ``revokedAt`` (never a secret or hash)."""
    return {"data": [k.to_dict() for k in engine.keys.list(include_revoked=includeRevoked)]}


@router.get("/{key_id}", response_model=KeyOne)
def get_key(key_id: str, engine: EngineDep) -> dict[str, Any]:
    key = engine.keys.get(key_id)
    if key is None:
        raise NotFoundError(f"no API key with id {key_id}")
    return {"key": key.to_dict()}


@router.get("/{key_id}/usage", response_model=KeyUsage)
def key_usage(key_id: str, engine: EngineDep, request: Request) -> dict[str, Any]:
    """What the key cost: LLM extraction this month (every server) and, since this
    server started, the memory tokens its requests carried and its LLM calls."""
    if engine.keys.get(key_id) is None:
        raise NotFoundError(f"no API key with id {key_id}")
    month = llm_budget.spent(engine.store, key_id)
    metrics = getattr(request.app.state, "metrics", None)
    requests, tokens = metrics.injected_for(key_id) if metrics is not None else (0, 0)
    llm = engine.llm_stats.snapshot()["byKey"].get(key_id, {})
    return {
        "keyId": key_id,
        "thisMonth": {
            "month": month["month"],
            "llmExtractionTokens": month["tokens"],
            "llmExtractionRequests": month["requests"],
            "llmExtractionMonthlyCap": engine.settings.get().extraction_key_monthly_token_cap,
        },
        "sinceStart": {
            "injectedRequests": requests,
            "injectedTokens": tokens,
            "llmExtractionRequests": llm.get("requests", 0),
            "llmExtractionPromptTokens": llm.get("promptTokens", 0),
            "llmExtractionCompletionTokens": llm.get("completionTokens", 0),
        },
        "quota": engine.quotas.report(key_id),
    }


@router.patch("/{key_id}", response_model=KeyOne)
def update_key(key_id: str, body: KeyUpdate, engine: EngineDep) -> dict[str, Any]:
    """Per-key memory toggle: true, false, or null (follow the global setting)."""
    key = engine.keys.set_memory_enabled(key_id, body.memoryEnabled)
    if key is None:
        raise NotFoundError(f"no API key with id {key_id}")
    return {"key": key.to_dict()}


@router.delete("/{key_id}", response_model=Revoked)
def revoke_key(key_id: str, engine: EngineDep) -> dict[str, bool]:
    """Revoke a key: it stops authenticating at once. Its memories stay until deleted."""
    if not engine.keys.revoke(key_id):
        raise NotFoundError(f"no live API key with id {key_id}")
    return {"revoked": True}
