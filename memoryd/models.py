"""The shared vocabulary: memories, hits, and what retrieval resolved to.

Plain dataclasses with no I/O. Times are timezone-aware UTC datetimes in Python and
ISO-8601 strings with millisecond precision and a ``Z`` suffix on the wire and in
SQLite, so that string order is time order.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

#: The reserved owner id of the shared pool (docs/design/owners.md#the-shared-pool). No
#: client key may use it.
GLOBAL_OWNER = "global"


class MemoryType(enum.StrEnum):
    FACTUAL = "factual"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"
    SEMANTIC = "semantic"


Strategy = Literal["exact", "semantic", "hybrid"]
Scope = Literal["session", "apiKey", "global"]
Tier = Literal["fts5", "vector", "hybrid", "qdrant", "recent", "profile", "topic", "asked"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_iso(value: datetime) -> str:
    """Canonical wire/storage form: UTC, milliseconds, ``Z``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    # The year zero-padded by hand: strftime's %Y gives "999" for the year 999 on
    # Linux, which sorts after "2026" as text, so a cutoff there matched every row.
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:"
        f"{value.minute:02d}:{value.second:02d}.{value.microsecond // 1000:03d}Z"
    )


def parse_iso(value: str) -> datetime:
    """Parse any ISO-8601 form (``Z``, offsets, date only, SQLite's space form).

    Naive values are taken as UTC. Raises ValueError on anything else.
    """
    text = value.strip()
    if not text:
        raise ValueError("empty date")
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # "0001-01-01T00:00:00+05:00" is before the year 1 in UTC
        raise ValueError(f"date out of range in UTC: {value!r}") from None


@dataclass(frozen=True, slots=True)
class Memory:
    id: str
    api_key_id: str
    session_id: str
    type: MemoryType
    key: str
    content: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    access_count: int = 0
    last_accessed_at: datetime | None = None
    #: Set when a newer statement of the same slot replaced this one (kept as history).
    superseded_at: datetime | None = None
    superseded_by: str | None = None
    #: The end user of the key it belongs to; "" = shared by all of the key's end users.
    user_id: str = ""

    @property
    def slot(self) -> str | None:
        slot = self.metadata.get("slot")
        return slot if isinstance(slot, str) and slot else None

    @property
    def attribute(self) -> str | None:
        """What capture says it is about (metadata ``attribute``: the schema's name)."""
        value = self.metadata.get("attribute")
        return value if isinstance(value, str) and value else None

    @property
    def subjects(self) -> tuple[str, ...]:
        """Who it is about (metadata ``subjects``): "user", or a named person."""
        raw = self.metadata.get("subjects")
        if not isinstance(raw, list):
            return ()
        return tuple(s for s in raw if isinstance(s, str) and s.strip())

    def to_dict(self) -> dict[str, Any]:
        """The camelCase memory object (docs/design/interfaces.md#the-memory-object), plus
        the supersession history."""
        return {
            "id": self.id,
            "apiKeyId": self.api_key_id,
            "userId": self.user_id or None,
            "sessionId": self.session_id,
            "type": self.type.value,
            "key": self.key,
            "content": self.content,
            "metadata": self.metadata,
            "createdAt": to_iso(self.created_at),
            "updatedAt": to_iso(self.updated_at),
            "expiresAt": to_iso(self.expires_at) if self.expires_at else None,
            "accessCount": self.access_count,
            "lastAccessedAt": to_iso(self.last_accessed_at) if self.last_accessed_at else None,
            "supersededAt": to_iso(self.superseded_at) if self.superseded_at else None,
            "supersededBy": self.superseded_by,
            "subjects": list(self.subjects),
        }


@dataclass(frozen=True, slots=True)
class NewMemory:
    """Input of ``create``: upserted on ``(api_key_id, key)``.

    ``key`` may be omitted; the engine then derives a content-addressed key, so
    adding the same content twice stores it once. ``created_at`` is honoured only for
    new rows (imports keep their original ages).
    """

    api_key_id: str
    content: str
    key: str | None = None
    type: MemoryType = MemoryType.FACTUAL
    session_id: str = ""
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = None
    created_at: datetime | None = None
    id: str | None = None
    user_id: str = ""  # the key's end user ("" = the key's shared memory)


@dataclass(frozen=True, slots=True)
class Reconcile:
    """One write of ``MemoryEngine.reconcile``: store ``memory`` (upsert on owner + key)
    and mark the owner's other current memories of ``supersedes`` (slots) or
    ``retract_ids`` as superseded by it. With ``memory`` None the ids are retracted."""

    owner: str
    memory: NewMemory | None
    supersedes: tuple[str, ...] = ()
    retract_ids: tuple[str, ...] = ()
    user_id: str = ""  # the end user whose memories it may retire


@dataclass(frozen=True, slots=True)
class Origin:
    """Where captured facts were said: the gateway request (its id, as in
    ``x-memoryd-request-id`` and ``GET /api/requests``) and when it came in. An erasure
    of the end user after ``said_at`` drops them."""

    said_at: datetime
    request_id: str | None = None

    def stamp(self, items: list[Reconcile]) -> list[Reconcile]:
        """``items`` with the origin in each memory's metadata (``via``, ``saidAt``,
        ``requestId``), beside capture's ``source`` (the speaker's role)."""
        mark = {"via": "gateway", "saidAt": to_iso(self.said_at)}
        if self.request_id:
            mark["requestId"] = self.request_id
        return [
            i
            if i.memory is None
            else dataclasses.replace(
                i,
                memory=dataclasses.replace(
                    i.memory, metadata={**(i.memory.metadata or {}), **mark}
                ),
            )
            for i in items
        ]


def written_via(
    metadata: dict[str, Any] | None, via: str, said_at: datetime | None = None
) -> dict[str, Any]:
    """``metadata`` with where the memory came from: ``via`` (``rest``,
    ``mcp``, ``import``; the gateway's are stamped by ``Origin``) and ``saidAt``. They
    replace a writer's own: provenance a client could set would claim a conversation
    that never happened (a memoryd export restored keeps its own: see import)."""
    out = dict(metadata or {})
    out["via"] = via
    out.pop("requestId", None)  # only the gateway names a request
    if said_at is not None:
        out["saidAt"] = to_iso(said_at)
    return out


@dataclass(frozen=True, slots=True)
class Reconciled:
    memory: Memory | None
    created: bool
    superseded: list[str]


@dataclass(frozen=True, slots=True)
class MemoryPatch:
    """Input of ``update``: only the fields that are set change.

    ``metadata`` replaces the stored object (docs/design/storage.md#writes);
    ``expires_at`` uses ``clear_expiry`` to distinguish "set to never" from "leave alone".
    """

    type: MemoryType | None = None
    key: str | None = None
    content: str | None = None
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = None
    clear_expiry: bool = False


@dataclass(frozen=True, slots=True)
class MemoryPage:
    data: list[Memory]
    total: int
    by_type: dict[str, int]
    page: int
    limit: int
    tokens: int = 0  # estimated tokens of every memory the filters match

    @property
    def total_pages(self) -> int:
        return (self.total + self.limit - 1) // self.limit if self.limit else 0


@dataclass(frozen=True, slots=True)
class Hit:
    memory: Memory
    score: float
    tier: Tier
    tokens: int
    vec_score: float | None = None
    fts_score: float | None = None
    #: Why it is carried, in plain words (previews): what the question asked about,
    #: or how close it came to the question.
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory.id,
            "type": self.memory.type.value,
            "key": self.memory.key,
            "content": self.memory.content,
            "score": self.score,
            "tokens": self.tokens,
            "tier": self.tier,
            "vecScore": self.vec_score,
            "ftsScore": self.fts_score,
            "reason": self.reason,
        }


@dataclass(slots=True)
class Resolution:
    """How one retrieval was actually served (docs/design/retrieval.md#resolution), for
    previews and status."""

    embedding_source: str | None = None
    embedding_model: str | None = None
    vector_store: str = "none"
    strategy_used: str = "exact"
    rerank_applied: bool = False
    fallback_reason: str | None = None
    fusion: str | None = None  # "score" or "rrf" when hybrid fused two legs
    #: Previews: the owner's memories kept out by expiry and by retention.
    hidden: dict[str, int] | None = None
    #: The query was the end of a longer turn (``core.query.MAX_QUERY_CHARS``).
    query_truncated: bool = False
    #: The owner's known subjects the query names (the subject prior's people).
    subjects: list[str] = field(default_factory=list)
    #: What the question asks about the user: attributes, or "overview".
    asked: list[str] = field(default_factory=list)
    #: What embedded the question: "fast" (the query encoder), "model" (the embedder;
    #: also a question the encoder read as maybe about the user), None without one.
    query_encoder: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "embeddingSource": self.embedding_source,
            "embeddingModel": self.embedding_model,
            "vectorStore": self.vector_store,
            "strategyUsed": self.strategy_used,
            "rerankApplied": self.rerank_applied,
            "fallbackReason": self.fallback_reason,
            "fusion": self.fusion,
            "hidden": self.hidden,
            "queryTruncated": self.query_truncated,
            "subjects": list(self.subjects),
            "asked": list(self.asked),
            "queryEncoder": self.query_encoder,
        }


@dataclass(slots=True)
class Preview:
    hits: list[Hit]
    resolution: Resolution
    budget_max_tokens: int
    total_tokens: int = field(init=False)
    #: Candidates not injected, each with its ``reason`` (relevance floor, budget).
    dropped: list[dict[str, Any]] = field(default_factory=list)
    #: The profile section that goes ahead of ``hits``.
    profile: Profile | None = None

    def __post_init__(self) -> None:
        self.total_tokens = sum(h.tokens for h in self.hits)

    def to_dict(self) -> dict[str, Any]:
        profile = self.profile or Profile([], [], 0)
        return {
            "memories": [h.to_dict() for h in self.hits],
            "resolution": self.resolution.to_dict(),
            "totalTokensUsed": self.total_tokens,
            "budgetMaxTokens": self.budget_max_tokens,
            "dropped": self.dropped,
            "profile": profile.to_dict(),
        }


@dataclass(slots=True)
class Profile:
    """An owner's profile as one request carries it: the memories kept (pinned, the
    always-on attributes, then those the question's topic bears on), the ones the
    budget left out, and the budget."""

    hits: list[Hit]
    dropped: list[Hit]
    budget_max_tokens: int
    topics: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(h.tokens for h in self.hits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "memories": [h.to_dict() | _about(h.memory) for h in self.hits],
            "totalTokensUsed": self.tokens,
            "budgetMaxTokens": self.budget_max_tokens,
            "dropped": [
                h.to_dict() | _about(h.memory) | {"reason": "over the profile budget"}
                for h in self.dropped
            ],
            "topics": list(self.topics),
        }


def _about(memory: Memory) -> dict[str, Any]:
    """Why a memory is in a profile: its attribute, and whether it was pinned."""
    attribute, pinned = memory.metadata.get("attribute"), memory.metadata.get("pinned")
    return {
        "attribute": attribute if isinstance(attribute, str) else None,
        "pinned": pinned if isinstance(pinned, bool) else None,
    }


@dataclass(frozen=True, slots=True)
class Erasure:
    """The receipt of an erasure: whose memories went, when, and how many
    of each kind; never what they said. ``user_id`` None: every end user of the key."""

    id: str
    api_key_id: str
    user_id: str | None
    erased_at: datetime
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "apiKeyId": self.api_key_id,
            "userId": self.user_id,
            "erasedAt": to_iso(self.erased_at),
            "counts": dict(self.counts),
        }


@dataclass(frozen=True, slots=True)
class Held:
    """A message the guard refused, held for review (``quarantineGuarded``): whose, what,
    why, and where it was said. Released, it is extracted as if the guard had let it
    pass; discarded or erased, it is gone."""

    id: int
    api_key_id: str
    user_id: str
    session_id: str
    text: str
    source: str  # "user" or "assistant"
    reason: str  # the guard's kind
    said_at: datetime  # when the request it came in started (an erasure after drops it)
    request_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "apiKeyId": self.api_key_id,
            "userId": self.user_id or None,
            "sessionId": self.session_id or None,
            "text": self.text,
            "source": self.source,
            "reason": self.reason,
            "saidAt": to_iso(self.said_at),
            "requestId": self.request_id,
        }
