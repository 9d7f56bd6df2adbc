"""memoryd: long-term memory for LLM traffic, self-hosted.

The public names are re-exported lazily (PEP 562): ``import memoryd`` or any
``memoryd.core`` module loads nothing heavy (no SQLite driver, no numpy); the engine
is imported the first time ``memoryd.MemoryEngine`` is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    "MemoryEngine": "memoryd.engine",
    "MemorydError": "memoryd.errors",
    "NotFoundError": "memoryd.errors",
    "ValidationError": "memoryd.errors",
    "Hit": "memoryd.models",
    "Memory": "memoryd.models",
    "MemoryPatch": "memoryd.models",
    "MemoryType": "memoryd.models",
    "NewMemory": "memoryd.models",
    "Preview": "memoryd.models",
    "Resolution": "memoryd.models",
    "open_engine": "memoryd.bootstrap",
    "create_app": "memoryd.app",
}

if TYPE_CHECKING:
    from memoryd.app import create_app
    from memoryd.bootstrap import open_engine
    from memoryd.engine import MemoryEngine
    from memoryd.errors import MemorydError, NotFoundError, ValidationError
    from memoryd.models import Hit, Memory, MemoryPatch, MemoryType, NewMemory, Preview, Resolution


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memoryd' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "Hit",
    "Memory",
    "MemoryEngine",
    "MemoryPatch",
    "MemoryType",
    "MemorydError",
    "NewMemory",
    "NotFoundError",
    "Preview",
    "Resolution",
    "ValidationError",
    "__version__",
    "create_app",
    "open_engine",
]
