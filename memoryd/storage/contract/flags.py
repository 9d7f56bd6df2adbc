"""The reindex queue: memories whose vector the in-store index lacks, flagged by every
write of new text and cleared by the indexer in the transaction that stores it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Flagged:
    """A memory waiting for its embedding: both views the indexer embeds."""

    id: str
    owner: str
    content: str
    #: The dense context view: the memory with its neighbours in its session.
    view: str


class FlagReads(Protocol):
    def reindex_pending(self) -> int:
        """How many memories wait for their embedding."""
        ...

    def flagged(self, memory_ids: Sequence[str]) -> list[Flagged]:
        """Those of ``memory_ids`` still waiting for their embedding."""
        ...

    def oldest_flagged(self, limit: int) -> list[Flagged]: ...
    def newest_flagged_of(self, owner: str, limit: int) -> list[Flagged]: ...


class FlagWrites(Protocol):
    def mark_all_reindex(self) -> int:
        """Queue every memory for embedding again; how many were not queued yet."""
        ...

    def clear_flag_if_unchanged(self, memory_id: str, content: str) -> bool:
        """Mark embedded only if the memory still has ``content`` (a racing edit
        stays queued)."""
        ...
