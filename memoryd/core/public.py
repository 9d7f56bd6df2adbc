"""Results as the outside sees them: engine results are dataclasses with snake_case
fields; interfaces without a pydantic model (the CLI's JSON, MCP tool results) turn
them into camelCase JSON here, the same names the REST models give them through
their alias generator."""

from __future__ import annotations

import dataclasses
from typing import Any


def camel(name: str) -> str:
    """``deleted_count`` -> ``deletedCount``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def public(value: Any) -> Any:
    """A dataclass (nested in lists and dicts too) as a camelCase JSON value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel(f.name): public(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [public(item) for item in value]
    if isinstance(value, dict):
        return {key: public(item) for key, item in value.items()}
    return value
