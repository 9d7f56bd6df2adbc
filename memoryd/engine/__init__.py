"""The engine: ``MemoryEngine``, the one service API every interface adapts, and its
collaborators (retrieval, lifecycle, status, extraction jobs, keys, providers,
validation). Storage, embedding and vector tiers sit below it; nothing here imports
an interface (HTTP, MCP, CLI)."""

from memoryd.engine.service import MemoryEngine
from memoryd.engine.validation import require_owner

__all__ = ["MemoryEngine", "require_owner"]
