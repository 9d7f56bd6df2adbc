"""What lifecycle operations report: typed inside the engine, camelCase only at the edge
(the REST models' alias generator, ``core.public`` for the CLI and MCP)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class SessionSummary:
    """``summarize``: how many memories were looked at, compacted, and tokens saved."""

    original_count: int
    summarized_count: int
    tokens_saved: int


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory ``summarize_older_than`` would fold into a summary."""

    id: str
    type: str
    key: str
    content: str
    tokens: int
    created_at: str
    user_id: str = ""  # its end user ("" shared): each is summarized apart
    api_key_id: str = ""  # its owner: a call for every owner lists them all


@dataclass(slots=True)
class OwnerSummary:
    """What a summarization did for one owner (a call for every owner has one each)."""

    api_key_id: str
    candidates: int
    total_tokens: int
    deleted_count: int
    summary_ids: list[str]


@dataclass(slots=True)
class SummaryReport:
    candidates: list[Candidate]
    total_tokens: int
    deleted_count: int = 0
    summary_id: str | None = None
    dry_run: bool = False
    #: One summary per end user of the key (and one of its shared memories).
    summary_ids: list[str] = field(default_factory=list)
    #: Each owner that had memories that old, and what was done with them.
    owners: list[OwnerSummary] = field(default_factory=list)


@dataclass(slots=True)
class DecayReport:
    scanned: int = 0
    decayed: int = 0
    deleted_ids: list[str] = field(default_factory=list)
    skipped_disabled: bool = False
    capped: bool = False


@dataclass(slots=True)
class HealthReport:
    """A write -> read -> delete round trip; ``storage_fault`` when the disk failed."""

    working: bool
    latency_ms: float
    error: str | None = None
    storage_fault: str | None = None  # storage_full | storage_unavailable
    reason: str | None = None


@dataclass(slots=True)
class ImportResult:
    imported: int = 0
    updated: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
