"""The HTTP server: one ASGI app with the management API (and, later, the gateway)."""

from memoryd.api.app import create_app

__all__ = ["create_app"]
