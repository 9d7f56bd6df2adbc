"""The engine: ``MemoryEngine``, the one service API every interface adapts, and its
collaborators (retrieval, lifecycle, status, extraction jobs, keys, validation).
Storage, embedding and vector tiers sit below it; nothing here imports an interface
(HTTP, MCP, CLI).

The names below load on first use (PEP 562), so importing a light collaborator
(``memoryd.engine.validation``) does not load the whole engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoryd.engine.service import MemoryEngine
    from memoryd.engine.validation import require_owner

__all__ = ["MemoryEngine", "require_owner"]


def __getattr__(name: str) -> Any:
    if name == "MemoryEngine":
        from memoryd.engine.service import MemoryEngine

        return MemoryEngine
    if name == "require_owner":
        from memoryd.engine.validation import require_owner

        return require_owner
    raise AttributeError(f"module 'memoryd.engine' has no attribute {name!r}")
