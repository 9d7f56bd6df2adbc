"""What the MCP tools answer: memories exactly as the REST API shows them
(docs/design/interfaces.md#the-memory-object), and each tool's result."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from memoryd.http.public import ErasurePublic, MemoryPublic
from memoryd.models import Memory


class McpMemory(MemoryPublic):
    """One memory, exactly as in the REST API: one public shape."""

    @classmethod
    def of(cls, memory: Memory) -> McpMemory:
        return cls.model_validate(memory.to_dict())


class SearchHit(McpMemory):
    score: float = Field(description="Retrieval score (higher ranks first).")
    tokens: int = Field(description="Estimated tokens of the content.")
    tier: str = Field(description="Which tier found it: fts5, vector, hybrid, qdrant, recent")


class SearchResult(BaseModel):
    memories: list[SearchHit]
    count: int
    totalTokens: int


class AddResult(BaseModel):
    memory: McpMemory


class ClearResult(BaseModel):
    deletedCount: int


class ProfileMemory(McpMemory):
    tokens: int = Field(description="Estimated tokens of the content.")
    attribute: str | None = Field(description="What it is about (capture's schema).")
    pinned: bool | None = Field(description="Pinned in, kept out, or the attribute decides.")


class ProfileResult(BaseModel):
    memories: list[ProfileMemory]
    totalTokens: int
    budgetMaxTokens: int
    dropped: list[ProfileMemory] = Field(description="Left out: over the profile budget.")


def profile_memory(hit: Any) -> ProfileMemory:
    meta = hit.memory.metadata
    pinned = meta.get("pinned")
    return ProfileMemory(
        **McpMemory.of(hit.memory).model_dump(),
        tokens=hit.tokens,
        attribute=meta.get("attribute") if isinstance(meta.get("attribute"), str) else None,
        pinned=pinned if isinstance(pinned, bool) else None,
    )


class ForgetResult(BaseModel):
    erasure: ErasurePublic = Field(description="The receipt: counts, never content.")
