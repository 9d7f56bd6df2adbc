"""Request and response models of the management API
(docs/design/interfaces.md#rest-api), camelCase, strict.

Names follow ``XCreate`` / ``XUpdate`` / ``XPublic``. Every request model forbids
unknown fields; the app turns a violation into a 400 in the one error shape.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

from memoryd.config.upstreams import NAME_PATTERN, base_url_problem
from memoryd.core.subjects import MAX_SUBJECT_CHARS, MAX_SUBJECTS
from memoryd.http.public import ErasurePublic, MemoryPublic, TypeName
from memoryd.models import MemoryType

StrategyName = Literal["recent", "exact", "semantic", "hybrid"]


def _date_string(value: object) -> object:
    """Numbers are not dates here: pydantic read ``12345`` as a Unix time, and a typo
    expired a memory in 1970."""
    if isinstance(value, int | float):
        raise ValueError("must be an ISO-8601 date string, not a number")
    return value


def _in_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # stored in UTC: the year 1 at +05:00 is before the year 1
        raise ValueError("date out of range in UTC") from None


#: ISO-8601 strings are parsed even though request models are otherwise strict.
Timestamp = Annotated[
    datetime, BeforeValidator(_date_string), AfterValidator(_in_utc), Field(strict=False)
]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Report(BaseModel):
    """An engine result (a snake_case dataclass, ``engine.reports``) shown in camelCase:
    the alias generator is the one place the names change."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


# -- errors ---------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    field: str | None = None
    message: str


class ErrorInfo(BaseModel):
    message: str
    code: str
    details: list[ErrorDetail] = []


class ErrorBody(BaseModel):
    error: ErrorInfo


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Invalid JSON, schema violation or bad value"},
    401: {"model": ErrorBody, "description": "Missing or wrong admin token"},
    404: {"model": ErrorBody, "description": "Unknown id"},
}


# -- memories -------------------------------------------------------------------------


#: Who a memory is about: "user", or named people (kept as metadata.subjects).
Subjects = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_SUBJECT_CHARS)]],
    Field(max_length=MAX_SUBJECTS, description='who it is about: "user" or a named person'),
]


class MemoryCreate(Strict):
    apiKeyId: str = Field(min_length=1, max_length=200)
    userId: str | None = Field(
        default=None, min_length=1, max_length=200, description="end user of the key"
    )
    content: str = Field(min_length=1)
    key: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="upsert key; derived from the content when omitted (returned in memory.key)",
    )
    type: TypeName = "factual"
    sessionId: str | None = Field(default=None, max_length=200)
    metadata: dict[str, Any] | None = None
    expiresAt: Timestamp | None = None
    subjects: Subjects | None = None


class MemoryUpdate(Strict):
    type: TypeName | None = None
    key: str | None = Field(default=None, min_length=1, max_length=500)
    content: str | None = Field(default=None, min_length=1)
    metadata: dict[str, Any] | None = None
    expiresAt: Timestamp | None = None
    subjects: Subjects | None = None


class MemoryOne(BaseModel):
    memory: MemoryPublic


class MemoryCreated(BaseModel):
    id: str
    memory: MemoryPublic


class Deleted(BaseModel):
    deleted: bool


class ErasureOne(BaseModel):
    erasure: ErasurePublic


class ErasureList(BaseModel):
    erasures: list[ErasurePublic]


class ForgetRequest(Strict):
    apiKeyId: str = Field(min_length=1, max_length=200)
    userId: str | None = Field(
        default=None,
        max_length=4096,
        description='one end user of the key ("" its shared memories), as the app names it',
    )
    all: bool = Field(default=False, description="every end user of the key (no userId)")


class MemoryStats(BaseModel):
    total: int
    byType: dict[str, int]
    tokensUsed: int


class MemoryList(BaseModel):
    data: list[MemoryPublic]
    total: int
    page: int
    limit: int
    totalPages: int
    stats: MemoryStats


class ImportResult(Report):
    imported: int
    updated: int
    skipped: int
    errors: list[dict[str, Any]]


class HealthResult(Report):
    working: bool
    latency_ms: float
    error: str | None = None
    storage_fault: str | None = None  # storage_full | storage_unavailable
    reason: str | None = None


# -- retrieval ------------------------------------------------------------------------


class PreviewRequest(Strict):
    query: str = Field(min_length=1, max_length=32_768)
    #: None: the memory settings' (what the gateway uses), so the preview shows what a
    #: chat request with this query would carry
    strategy: StrategyName | None = None
    maxTokens: int | None = Field(default=None, ge=1, le=16000)
    apiKeyId: str | None = Field(default=None, min_length=1, max_length=200)
    userId: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="an end user of the key: their memories and the key's shared ones",
    )
    sessionId: str | None = Field(default=None, max_length=200)
    limit: int | None = Field(
        default=None, ge=1, le=100, description="at most this many; default: the budget decides"
    )


class PreviewHit(BaseModel):
    id: str
    type: TypeName
    key: str
    content: str
    score: float
    tokens: int
    tier: Literal["fts5", "vector", "hybrid", "qdrant", "recent", "profile", "topic", "asked"]
    vecScore: float | None
    ftsScore: float | None
    reason: str | None = None  # why it is carried: what was asked, how close it came


class ResolutionPublic(BaseModel):
    embeddingSource: str | None
    embeddingModel: str | None
    vectorStore: str
    strategyUsed: str
    rerankApplied: bool
    fallbackReason: str | None
    fusion: str | None = None  # "score" or "rrf" when the hybrid legs were fused
    hidden: dict[str, int] | None = None  # memories kept out by expiry and retention
    queryTruncated: bool = False  # retrieval read only the end of a longer query
    subjects: list[str] = []  # the owner's known subjects the query names
    asked: list[str] = []  # what the question asks about the user (attributes, overview)
    queryEncoder: str | None = None  # what embedded the question: "fast" or "model"


class PreviewDropped(PreviewHit):
    reason: str  # why it was not injected: the relevance floor, the budget, minScore


class PinRequest(Strict):
    pinned: bool | None = True  # true: pinned in; false: kept out; null: the attribute decides


class ProfileHit(PreviewHit):
    attribute: str | None  # capture's attribute (why it is in every request)
    pinned: bool | None  # pinned in (true), kept out (false), or the attribute decides


class ProfileDropped(ProfileHit):
    reason: str


class ProfilePublic(BaseModel):
    """The profile section every request of the owner carries, ahead of ``memories``."""

    memories: list[ProfileHit]
    totalTokensUsed: int
    budgetMaxTokens: int
    dropped: list[ProfileDropped] = []  # over the profile budget
    topics: list[str] = []  # the advice topics the query names


class PreviewResult(BaseModel):
    memories: list[PreviewHit]
    resolution: ResolutionPublic
    totalTokensUsed: int
    budgetMaxTokens: int
    dropped: list[PreviewDropped] = []
    profile: ProfilePublic


class SummarizeRequest(Strict):
    olderThanDays: int = Field(default=30, ge=1, le=365)
    #: Omitted: every owner, each summarized apart (the reference's call); "" is a 400.
    apiKeyId: str | None = Field(default=None, min_length=1, max_length=200)
    userId: str | None = Field(default=None, min_length=1, max_length=200)
    dryRun: bool = False


class SummaryCandidate(Report):
    id: str
    type: TypeName
    key: str
    content: str
    tokens: int
    created_at: str
    user_id: str = ""  # its end user ("": shared); each is summarized apart
    api_key_id: str = ""


class OwnerSummarized(Report):
    api_key_id: str
    candidates: int
    total_tokens: int
    deleted_count: int
    summary_ids: list[str]


class SummarizeResult(Report):
    candidates: list[SummaryCandidate]
    total_tokens: int
    deleted_count: int
    summary_id: str | None
    dry_run: bool
    summary_ids: list[str] = []  # one summary per end user of the key (and one shared)
    owners: list[OwnerSummarized] = []  # per owner with memories that old: what was done


class ReindexRequest(Strict):
    force: bool = False
    target: Literal["sqlite-vec", "qdrant"] = "sqlite-vec"


class ReindexStarted(BaseModel):
    started: bool
    pending: int
    reason: str | None = None


# -- settings -------------------------------------------------------------------------


class MemorySettingsPublic(BaseModel):
    enabled: bool
    maxTokens: int
    retentionDays: int | None
    strategy: Literal["recent", "semantic", "hybrid"]
    scope: Literal["session", "apiKey", "global"]
    extractFrom: list[Literal["user", "assistant"]]
    embeddingSource: Literal["remote", "static", "transformers", "auto"]
    embeddingProviderModel: str | None
    transformersEnabled: bool
    staticEnabled: bool
    rerankEnabled: bool
    rerankProviderModel: str | None
    vectorStore: Literal["sqlite-vec", "qdrant", "qdrant-edge", "auto"]
    minScore: float | None
    relevanceFloor: float | None
    extractionMode: Literal["rules", "llm", "hybrid"]
    extractionProviderModel: str | None
    extractionTimeoutMs: int
    extractionDailyTokenCap: int
    extractionKeyMonthlyTokenCap: int
    quarantineGuarded: bool
    profileMaxTokens: int
    shareWithEndUsers: list[str]


class MemorySettingsUpdate(Strict):
    enabled: bool | None = None
    maxTokens: int | None = Field(default=None, ge=0, le=16000)
    retentionDays: int | None = Field(
        default=None, ge=0, le=365, description="days; null or 0 keeps memories until they expire"
    )
    strategy: Literal["recent", "semantic", "hybrid"] | None = None
    scope: Literal["session", "apiKey", "global"] | None = None
    extractFrom: list[Literal["user", "assistant"]] | None = None
    embeddingSource: Literal["remote", "static", "transformers", "auto"] | None = None
    embeddingProviderModel: str | None = None
    transformersEnabled: bool | None = None
    staticEnabled: bool | None = None
    rerankEnabled: bool | None = None
    rerankProviderModel: str | None = None
    vectorStore: Literal["sqlite-vec", "qdrant", "qdrant-edge", "auto"] | None = None
    minScore: float | None = Field(default=None, ge=0, le=1)
    relevanceFloor: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="similarity a hit found only by meaning needs to be injected; null/0: off",
    )
    extractionMode: Literal["rules", "llm", "hybrid"] | None = None
    extractionProviderModel: str | None = None
    extractionTimeoutMs: int | None = Field(default=None, ge=100, le=120_000)
    extractionDailyTokenCap: int | None = Field(default=None, ge=0, le=1_000_000_000)
    extractionKeyMonthlyTokenCap: int | None = Field(
        default=None,
        ge=0,
        le=1_000_000_000,
        description="tokens each key may spend on LLM extraction per UTC month; 0/null: no cap",
    )
    quarantineGuarded: bool | None = Field(
        default=None, description="hold messages the guard refuses for review instead of dropping"
    )
    profileMaxTokens: int | None = Field(
        default=None, ge=0, le=2000, description="the profile every request carries; 0: off"
    )
    shareWithEndUsers: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None,
        max_length=1000,
        description='keys whose shared memories reach their named end users; ["*"]: every key',
    )


def _base_url(value: str) -> str:
    problem = base_url_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


class ProviderIn(Strict):
    name: str = Field(min_length=1, max_length=64, pattern=NAME_PATTERN)
    baseUrl: Annotated[
        str,
        Field(min_length=1, max_length=2000, pattern=r"^https?://"),
        AfterValidator(_base_url),
    ]
    apiKey: str | None = Field(default=None, max_length=4000)
    systemRole: Literal["auto", "system", "user", "first"] = "auto"
    kind: Literal["openai", "anthropic"] = "openai"
    #: read back by GET and ignored here, so a listing can be written back as it is
    hasKey: bool | None = None


class ProviderPublic(BaseModel):
    name: str
    baseUrl: str
    apiKey: str | None
    hasKey: bool
    systemRole: str
    kind: str


def memory_type(value: str | None) -> MemoryType | None:
    return MemoryType(value) if value else None
