"""Context-aware indexing: which memories a conversation stored next to each other."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class ContextReads(Protocol):
    def neighbours(self, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Per id, the ids stored next to it in its session (context priors)."""
        ...
