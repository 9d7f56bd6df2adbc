"""What one owner keeps in the store, for the per-key quotas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Usage:
    """An owner's memories (every end user, history included) and their size on disk
    (content as UTF-8 plus metadata; the indexes come on top)."""

    rows: int
    size: int  # bytes


class UsageReads(Protocol):
    def usage(self, owner: str) -> Usage:
        """What ``owner`` keeps, against its quotas."""
        ...
