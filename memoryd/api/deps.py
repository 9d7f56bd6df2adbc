"""Request dependencies: the engine, and the admin-token check for ``/api/*``."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request

from memoryd.dashboard.auth import check_api_session
from memoryd.engine import MemoryEngine
from memoryd.errors import AuthError


def get_engine(request: Request) -> MemoryEngine:
    engine: MemoryEngine = request.app.state.engine
    return engine


EngineDep = Annotated[MemoryEngine, Depends(get_engine)]


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def require_admin(request: Request) -> None:
    """401 unless the request carries the admin token (compared in constant time).

    Without an Authorization header, a Memory Studio session cookie is accepted
    instead: 401 when the session is unknown or expired, 403 when a POST/PUT/PATCH/
    DELETE lacks the session's ``X-CSRF-Token`` header."""
    token = bearer_token(request)
    if token is None and "authorization" not in request.headers and check_api_session(request):
        return
    expected: str = request.app.state.admin_token
    if token is None:
        raise AuthError("missing admin token: send Authorization: Bearer <admin token>")
    if not hmac.compare_digest(token.encode(), expected.encode()):
        raise AuthError("invalid admin token")


AdminDep = Annotated[None, Depends(require_admin)]
