"""The public shapes every interface answers in: a memory and an erasure receipt look the
same over REST and MCP, so a client reads one shape whichever door it came through."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

TypeName = Literal["factual", "episodic", "procedural", "semantic"]


class MemoryPublic(BaseModel):
    id: str
    apiKeyId: str
    sessionId: str
    type: TypeName
    key: str
    content: str
    metadata: dict[str, Any]
    createdAt: str
    updatedAt: str
    expiresAt: str | None
    accessCount: int
    lastAccessedAt: str | None
    supersededAt: str | None = None  # set when a newer statement replaced it (history)
    userId: str | None = None  # the end user of the key it belongs to; null: shared
    supersededBy: str | None = None
    subjects: list[str] = []  # who it is about (metadata.subjects)


class ErasurePublic(BaseModel):
    """A receipt: whose memories went, when, and how many of each kind; never what."""

    id: str
    apiKeyId: str
    userId: str | None  # null: every end user of the key
    erasedAt: str
    counts: dict[str, int]  # memories (current and history), extractionJobs, heldMessages
