"""``/mcp``: the memory tools over streamable HTTP, authenticated by Bearer.

``McpHttpEndpoint`` is an ASGI app for one route. Each request must carry
``Authorization: Bearer <admin token | client key>``; anything else is a 401 in the
API's error shape before the SDK sees it. The resolved ``Principal`` goes into the
ASGI scope, the SDK hands every message's HTTP request to the tool as its request
context, and the tool reads the caller from there. Because every request is
authenticated on its own, a session id never carries a credential. A session is also
bound to the caller that opened it (MCP security best practices, "session
hijacking"): a request naming another caller's session id gets the same 404 as an
unknown session, so one key can neither use nor terminate another key's session.

The SDK's session manager runs inside ``lifespan()``, which the host app's lifespan
enters; a new manager is built each time, so an app can be started more than once.
DNS-rebinding protection (a Host/Origin allow-list) is off: every request needs the
Bearer credential, which a rebinding page cannot know, and the allow-list would
refuse a server reached by any name other than localhost.
"""

from __future__ import annotations

import hmac
import json
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.engine import MemoryEngine
from memoryd.errors import AuthError, MemorydError, NotFoundError, UnavailableError
from memoryd.mcp.server import ADMIN, PRINCIPAL_SCOPE_KEY, Principal, build_server

#: The path the endpoint is routed at (the SDK app is built for the same path).
MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
#: Session -> caller bindings remembered (the oldest are forgotten first).
MAX_SESSIONS = 10_000


def _bearer(scope: Scope) -> str | None:
    scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class McpHttpEndpoint:
    def __init__(self, engine: MemoryEngine, *, admin_token: str, path: str = MCP_PATH) -> None:
        self.engine = engine
        self.admin_token = admin_token
        self.path = path
        self.server = build_server(engine)
        self._app: ASGIApp | None = None
        self._sessions: OrderedDict[str, Principal] = OrderedDict()

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        app = self.server.streamable_http_app(
            streamable_http_path=self.path,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        async with app.router.lifespan_context(app):
            self._app = app
            try:
                yield
            finally:
                self._app = None

    def authenticate(self, token: str | None) -> Principal:
        if token is None:
            raise AuthError(
                "missing credential: send Authorization: Bearer <client key or admin token>"
            )
        if hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return ADMIN
        key = self.engine.keys.authenticate(token)
        if key is None:
            raise AuthError("invalid or revoked API key")
        return Principal(key.id)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        session_id = Headers(scope=scope).get(SESSION_HEADER)
        try:
            principal = self.authenticate(_bearer(scope))
            if self._app is None:
                raise UnavailableError("the MCP endpoint is not running (app lifespan not started)")
            owner = self._sessions.get(session_id) if session_id else None
            if owner is not None and owner != principal:
                raise NotFoundError("Session not found")
        except MemorydError as exc:
            await _error(send, exc)
            return
        if session_id is None:  # a new session may start: bind it to this caller
            send = self._binding(send, principal)
        elif scope.get("method") == "DELETE":
            self._sessions.pop(session_id, None)
        await self._app({**scope, PRINCIPAL_SCOPE_KEY: principal}, receive, send)

    def _binding(self, send: Send, principal: Principal) -> Send:
        async def bind(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == SESSION_HEADER.encode():
                        self._sessions[value.decode("latin-1")] = principal
                        while len(self._sessions) > MAX_SESSIONS:
                            self._sessions.popitem(last=False)
            await send(message)

        return bind


async def _error(send: Send, exc: MemorydError) -> None:
    body = json.dumps(exc.to_dict()).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if exc.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="memoryd"'))
    start: dict[str, Any] = {"type": "http.response.start", "status": exc.status}
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})
