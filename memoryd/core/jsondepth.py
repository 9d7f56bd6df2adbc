"""One nesting limit for every JSON document memoryd accepts, checked before any
recursive work.

Python's JSON decoder, ``repr``, pydantic and FastAPI's encoder all recurse once (or
more) per level: a body nested ~1,000 deep raised ``RecursionError`` from the gateway,
and metadata nested 300 deep was stored, then broke every listing that rendered it.
Real requests nest a few levels (tool schemas perhaps 10-20), so a limit of 64 costs
no one anything and keeps every later step far from the interpreter's stack limit.

This module checks decoded values (metadata from any interface, import lines); the
HTTP layer checks raw request bodies before they are decoded (``http.limits``). Both
are iterative and name the offending path, so the 400 can say which field is at fault.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

MAX_JSON_DEPTH = 64
#: Path components shown in an error message before it is shortened.
_SHOWN = 8


def format_path(parts: list[str | int]) -> str:
    """``tools[0].function.parameters`` (shortened with ``…`` past a few levels)."""
    out = ""
    for part in parts[:_SHOWN]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out + ("…" if len(parts) > _SHOWN else "")


def _children(value: Any) -> Iterator[tuple[str | int, Any]]:
    if isinstance(value, dict):
        yield from ((str(k), v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        yield from enumerate(value)


def value_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> str | None:
    """The path where a decoded value nests containers deeper than ``limit`` (the value
    itself is level 1), or None. Iterative, so any depth is safe to ask about."""
    stack: list[tuple[Any, list[str | int], int]] = [(value, [], 1)]
    while stack:
        current, path, depth = stack.pop()
        if not isinstance(current, dict | list | tuple):
            continue
        if depth > limit:
            return format_path(path) or "(root)"
        for name, child in _children(current):
            if isinstance(child, dict | list | tuple):
                stack.append((child, [*path, name], depth + 1))
    return None


def non_finite(value: Any) -> str | None:
    """The path of a NaN or infinite number in a decoded value, or None. Python's JSON
    decoder reads ``NaN``, ``Infinity`` and ``1e400`` without complaint, and they were
    stored as null: the caller's value was lost without a word. Call after
    ``value_too_deep`` (iterative too, but it walks every level)."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        current, path = stack.pop()
        if isinstance(current, float) and not math.isfinite(current):
            return format_path(path) or "(root)"
        for name, child in _children(current):
            stack.append((child, [*path, name]))
    return None
