"""memoryd: long-term memory for LLM traffic, self-hosted."""

from memoryd.engine import MemoryEngine
from memoryd.errors import MemorydError, NotFoundError, ValidationError
from memoryd.models import Hit, Memory, MemoryPatch, MemoryType, NewMemory, Preview, Resolution

__version__ = "0.1.0"

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
]
