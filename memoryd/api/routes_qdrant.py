"""``/api/settings/qdrant*``: Qdrant settings, health, test search, cleanup.

The API key is write-only: answers carry ``hasApiKey`` and ``apiKeyMasked``, never the
key. OmniRoute's ``embeddingModel`` is kept and shown, but Qdrant's vectors come from
the memory embedder: answers name it in ``embeddingModelInUse``. ``PUT`` with
``enabled`` also sets the memory setting ``vectorStore`` (``qdrant`` when enabling,
``auto`` when disabling) and enabling starts a backfill. The test search always needs
an owner (``apiKeyId``) and sees only that owner's live memories.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from memoryd.api.schemas import Strict
from memoryd.errors import ValidationError
from memoryd.http.deps import EngineDep

router = APIRouter(prefix="/api/settings/qdrant", tags=["qdrant"])

Quantization = Literal["none", "int8", "binary"]


class QdrantSettingsPublic(BaseModel):
    enabled: bool
    host: str
    port: int
    collection: str
    path: str | None
    quantization: Quantization
    embeddingModel: str | None = Field(
        description="OmniRoute's field, kept as sent; memoryd does not embed with it"
    )
    embeddingModelInUse: str | None = Field(
        description="What Qdrant's vectors are made with: the memory settings' embedder"
    )
    hasApiKey: bool
    apiKeyMasked: str | None


class QdrantSettingsUpdate(Strict):
    enabled: bool | None = None
    host: str | None = Field(default=None, max_length=2000)
    port: int | None = Field(default=None, ge=1, le=65535)
    collection: str | None = Field(default=None, min_length=1, max_length=255)
    path: str | None = Field(default=None, max_length=4096)
    quantization: Quantization | None = None
    apiKey: str | None = Field(default=None, max_length=4000)
    #: OmniRoute's Qdrant embedder, accepted and kept (null or "" removes it); memoryd
    #: embeds with the memory settings' embedder (``embeddingModelInUse``).
    embeddingModel: str | None = None


class QdrantHealth(BaseModel):
    ok: bool
    latencyMs: float
    error: str | None = None


class QdrantSearchRequest(Strict):
    query: str = Field(min_length=1, max_length=32_768)
    topK: int = Field(default=5, ge=1, le=50)
    apiKeyId: str = Field(min_length=1, max_length=200)


class QdrantSearchHit(BaseModel):
    id: str
    score: float
    memoryId: str
    key: str | None
    type: str | None
    sessionId: str | None
    content: str | None
    payload: dict[str, Any]


class QdrantSearchResult(BaseModel):
    ok: bool
    results: list[QdrantSearchHit]
    error: str | None = None


class QdrantCleanupRequest(Strict):
    retentionDays: int | None = Field(default=None, ge=1, le=3650)


class QdrantCleanupResult(BaseModel):
    ok: bool
    deletedCount: int
    retentionDays: int
    error: str | None = None


class EmbeddingModel(BaseModel):
    value: str
    label: str
    dimensions: int | None
    available: bool


class EmbeddingModels(BaseModel):
    models: list[EmbeddingModel]


def in_use(engine: Any) -> str | None:
    """The memory embedder as ``provider/model`` (a local source: ``source/model``), or
    None without one: what Qdrant's vectors are made with. Resolved, not loaded."""
    if engine.embeddings is None:
        return None
    resolution = engine.embeddings.resolution()
    if resolution.source is None or resolution.model is None:
        return None
    if resolution.source == "remote":
        return str(resolution.model)
    return f"{resolution.source}/{resolution.model}"


@router.get("", response_model=QdrantSettingsPublic)
def get_qdrant_settings(engine: EngineDep) -> dict[str, Any]:
    return {**engine.qdrant.config().public(), "embeddingModelInUse": in_use(engine)}


@router.put("", response_model=QdrantSettingsPublic)
def put_qdrant_settings(body: QdrantSettingsUpdate, engine: EngineDep) -> dict[str, Any]:
    """Partial update; the answer is the whole normalized config (key masked)."""
    changes = body.model_dump(exclude_unset=True)
    for name in ("enabled", "port", "collection", "quantization"):
        if name in changes and changes[name] is None:
            raise ValidationError(
                f"{name}: must not be null", details=[{"field": name, "message": "null"}]
            )
    shown = engine.qdrant.update_config(changes).public()
    return {**shown, "embeddingModelInUse": in_use(engine)}


@router.get("/health", response_model=QdrantHealth)
def qdrant_health(engine: EngineDep) -> dict[str, Any]:
    """``GET /readyz`` on a server, a collection listing in local mode; with latency."""
    return engine.qdrant.health()


@router.post("/search", response_model=QdrantSearchResult)
def qdrant_search(body: QdrantSearchRequest, engine: EngineDep) -> dict[str, Any]:
    """A test search in Qdrant itself, scoped to one owner (never across owners)."""
    if not body.query.strip() or not body.apiKeyId.strip():
        raise ValidationError("query and apiKeyId must not be blank")
    return engine.qdrant.test_search(body.query, body.topK, body.apiKeyId)


@router.post("/cleanup", response_model=QdrantCleanupResult)
def qdrant_cleanup(engine: EngineDep, body: QdrantCleanupRequest | None = None) -> dict[str, Any]:
    """Delete points expired or older than ``retentionDays`` (default: the memory
    setting), counting them first."""
    days = body.retentionDays if body and body.retentionDays else None
    return engine.qdrant.cleanup(days)


@router.get("/embedding-models", response_model=EmbeddingModels)
def qdrant_embedding_models(engine: EngineDep) -> dict[str, Any]:
    """Models memoryd can embed with for Qdrant: the local sources and the configured
    providers' models (Qdrant uses the active memory embedder)."""
    models = []
    for provider in engine.embedding_providers():
        for model in provider.get("models", []):
            models.append(
                {
                    "value": model["id"],
                    "label": model.get("name") or model["id"],
                    "dimensions": model.get("dimensions"),
                    "available": bool(provider.get("hasKey")),
                }
            )
    return {"models": sorted(models, key=lambda m: m["value"])}
