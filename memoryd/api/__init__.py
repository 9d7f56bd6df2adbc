"""The HTTP interface: one ASGI app (REST API, gateway, MCP, dashboard) built by
``create_app``. Re-exported lazily (PEP 562), so importing ``memoryd.api.schemas``
(the MCP server shares its public shapes) does not build the whole web stack."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memoryd.api.app import create_app


def __getattr__(name: str) -> Any:
    if name != "create_app":
        raise AttributeError(f"module 'memoryd.api' has no attribute {name!r}")
    from memoryd.api.app import create_app

    return create_app


__all__ = ["create_app"]
