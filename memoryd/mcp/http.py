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

Sessions are capped per caller: each client key, and the admin token as
one caller, may hold ``SessionLimits.per_key`` / ``.admin`` sessions open or opening;
one more is a 429 decided here, before the SDK creates anything, so no single key can
fill the SDK's global ``max_sessions`` and lock everyone else out. A session counts
from the response that returned its id until it is DELETEd, idles out (the SDK's
``session_idle_timeout``) or is dropped. The binding table follows the SDK's own
session table (``_live``): it is reconciled on every admission and by a sweep every
``sweep_s`` seconds, which also drops the sessions of a key revoked since (by this
process or by the CLI next to it).

The SDK's session manager runs inside ``lifespan()``, which the host app's lifespan
enters; a new manager is built each time, so an app can be started more than once.
DNS-rebinding protection (a Host/Origin allow-list) is off: every request needs the
Bearer credential, which a rebinding page cannot know, and the allow-list would
refuse a server reached by any name other than localhost.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
from collections import Counter
from collections.abc import AsyncIterator, Collection, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.config import EngineConfig
from memoryd.engine import MemoryEngine
from memoryd.errors import AuthError, MemorydError, NotFoundError, UnavailableError
from memoryd.http.deps import AuthThrottle, AuthThrottledError, throttle_key
from memoryd.mcp.server import ADMIN, PRINCIPAL_SCOPE_KEY, Principal, build_server

log = logging.getLogger(__name__)

#: The path the endpoint is routed at (the SDK app is built for the same path).
MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
#: Seconds between sweeps (stale bindings, revoked keys): the auth cache's TTL, so a
#: revoke made by another process frees its sessions about as soon as it is seen.
SWEEP_S = 2.0
#: The longest ``retry-after`` of a 429 (a leaked session frees within the idle timeout).
MAX_RETRY_AFTER_S = 60


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Open-session caps and the idle timeout (``MEMORYD_MCP_*``, see ``EngineConfig``)."""

    per_key: int
    admin: int
    idle_s: float
    #: The SDK's global cap, a last resort: never below two full keys plus the admin,
    #: so one key at its cap can lock out neither the admin nor another key.
    total: int

    @classmethod
    def of(cls, config: EngineConfig) -> SessionLimits:
        per_key, admin = config.mcp_max_sessions_per_key, config.mcp_max_admin_sessions
        total = max(config.mcp_max_sessions, 2 * per_key + admin)
        return cls(per_key, admin, config.mcp_session_idle_s, total)

    def cap(self, principal: Principal) -> int:
        return self.admin if principal.is_admin else self.per_key

    @property
    def retry_after_s(self) -> int:
        return max(1, min(MAX_RETRY_AFTER_S, math.ceil(self.idle_s)))


class TooManySessionsError(MemorydError):
    status = 429
    code = "rate_limit_exceeded"

    def __init__(self, limit: int, retry_after_s: int) -> None:
        super().__init__(
            f"too many open MCP sessions for this credential (limit {limit}); close one "
            "(DELETE /mcp with its mcp-session-id) or wait for an idle one to expire",
            details=[{"field": SESSION_HEADER, "message": f"at most {limit} open sessions"}],
        )
        self.headers = {"retry-after": str(retry_after_s), "x-memoryd-limit": "mcp-sessions"}


class SessionTable:
    """Who opened each live session, and how many each caller has open or opening."""

    def __init__(self) -> None:
        self._owner: dict[str, Principal] = {}
        self._by_owner: dict[Principal, set[str]] = {}
        self._opening: Counter[Principal] = Counter()

    def __len__(self) -> int:
        return len(self._owner)

    def owner(self, session_id: str) -> Principal | None:
        return self._owner.get(session_id)

    def count(self, principal: Principal) -> int:
        return len(self._by_owner.get(principal, ())) + self._opening[principal]

    def sessions_of(self, principal: Principal) -> list[str]:
        return list(self._by_owner.get(principal, ()))

    def owners(self) -> list[Principal]:
        return list(self._by_owner)

    def opening(self, principal: Principal) -> None:
        self._opening[principal] += 1

    def opened(self, principal: Principal) -> None:
        self._opening[principal] -= 1
        if self._opening[principal] <= 0:
            del self._opening[principal]

    def bind(self, session_id: str, principal: Principal) -> None:
        self._owner[session_id] = principal
        self._by_owner.setdefault(principal, set()).add(session_id)

    def forget(self, session_id: str) -> None:
        principal = self._owner.pop(session_id, None)
        if principal is None:
            return
        owned = self._by_owner.get(principal, set())
        owned.discard(session_id)
        if not owned:
            self._by_owner.pop(principal, None)

    def reconcile(self, live: Collection[str], principal: Principal | None = None) -> None:
        """Forget sessions the SDK no longer has (idled out, crashed, failed to open)."""
        ids = self.sessions_of(principal) if principal is not None else list(self._owner)
        for session_id in ids:
            if session_id not in live:
                self.forget(session_id)

    def clear(self) -> None:
        self._owner.clear()
        self._by_owner.clear()
        self._opening.clear()


class _Binding:
    """The ``send`` of a request that may open a session: binds the id a successful
    response names to its caller, turning the caller's reserved slot into a session."""

    def __init__(self, sessions: SessionTable, principal: Principal, send: Send) -> None:
        self.sessions, self.principal, self.send = sessions, principal, send
        self.bound = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] < 400:
            for name, value in message.get("headers", []):
                if name.lower() == SESSION_HEADER.encode() and not self.bound:
                    self.sessions.bind(value.decode("latin-1"), self.principal)
                    self.sessions.opened(self.principal)
                    self.bound = True
        await self.send(message)


class _Closing:
    """The ``send`` of a DELETE: the session stops counting when the SDK says it ended,
    before the client can ask for the next one (the SDK forgets it a moment later)."""

    def __init__(self, sessions: SessionTable, session_id: str, send: Send) -> None:
        self.sessions, self.session_id, self.send = sessions, session_id, send

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and 200 <= message["status"] < 300:
            self.sessions.forget(self.session_id)
        await self.send(message)


def _bearer(scope: Scope) -> str | None:
    scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _may_open_session(headers: Headers) -> bool:
    """Whether the SDK would open a session for this request: no session id, and the
    2025 handshake era (the 2026 era is sessionless), as in its ``_handle_request``."""
    if SESSION_HEADER in headers:
        return False
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def _live(manager: StreamableHTTPSessionManager) -> Mapping[str, StreamableHTTPServerTransport]:
    """The SDK's table of open sessions, by id: the one source of truth on which exist.

    Private in the SDK (the manager discards an entry however a session ends: DELETE,
    idle timeout, crash, failed opening request); reading it here keeps the binding
    table honest without a hook the SDK does not offer. ``tests/mcp/test_mcp_sessions.py``
    fails if it moves."""
    return manager._server_instances


class McpHttpEndpoint:
    def __init__(
        self,
        engine: MemoryEngine,
        *,
        admin_token: str,
        path: str = MCP_PATH,
        limits: SessionLimits | None = None,
        sweep_s: float = SWEEP_S,
        throttle: AuthThrottle | None = None,
    ) -> None:
        self.engine = engine
        self.admin_token = admin_token
        self.throttle = throttle or AuthThrottle()  # failed credentials per address
        self.path = path
        self.limits = limits or SessionLimits.of(engine.config)
        self.sweep_s = sweep_s
        self.server = build_server(engine)
        self._app: ASGIApp | None = None
        self._manager: StreamableHTTPSessionManager | None = None
        self._sessions = SessionTable()

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        app = self.server.streamable_http_app(
            streamable_http_path=self.path,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            session_idle_timeout=self.limits.idle_s,
            max_sessions=self.limits.total,
        )
        async with app.router.lifespan_context(app), anyio.create_task_group() as tg:
            self._app, self._manager = app, self.server.session_manager
            tg.start_soon(self._sweep_forever)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                self._app = self._manager = None
                self._sessions.clear()

    @property
    def open_sessions(self) -> int:
        """Sessions the SDK holds open right now (what the caps keep in check)."""
        return len(_live(self._manager)) if self._manager is not None else 0

    def authenticate(self, token: str | None, address: str = "unknown") -> Principal:
        if token is None:
            raise AuthError(
                "missing credential: send Authorization: Bearer <client key or admin token>"
            )
        key = self.engine.keys.authenticate(token)  # a client key is never guessed: no wait
        if key is not None:
            return Principal(key.id)
        self.throttle.check(address)  # the admin token, or a wrong one: slowed per address
        if hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return ADMIN
        self.throttle.failed(address, "MCP credential")
        raise AuthError("invalid or revoked API key")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = Headers(scope=scope)
        session_id = headers.get(SESSION_HEADER)
        opening = False
        try:
            client = scope.get("client")
            where = throttle_key(client[0]) if client else "unknown"
            principal = self.authenticate(_bearer(scope), where)
            if self._app is None or self._manager is None:
                raise UnavailableError("the MCP endpoint is not running (app lifespan not started)")
            if session_id is not None and self._sessions.owner(session_id) != principal:
                raise NotFoundError("Session not found")  # unknown, or another caller's
            if _may_open_session(headers):
                self._admit(principal, _live(self._manager))
                opening = True
        except MemorydError as exc:
            await _error(send, exc)
            return
        binding = _Binding(self._sessions, principal, send) if opening else None
        if session_id is not None and scope.get("method") == "DELETE":
            send = _Closing(self._sessions, session_id, send)
        try:
            await self._app({**scope, PRINCIPAL_SCOPE_KEY: principal}, receive, binding or send)
        finally:
            if binding is not None and not binding.bound:
                self._sessions.opened(principal)  # no session after all: free the slot
            manager = self._manager
            if session_id is not None and (manager is None or session_id not in _live(manager)):
                self._sessions.forget(session_id)  # DELETEd, or ended meanwhile

    def _admit(self, principal: Principal, live: Collection[str]) -> None:
        """Reserve one of the caller's session slots, or raise the 429. No await between
        the count and the reservation, so concurrent openings cannot overshoot."""
        self._sessions.reconcile(live, principal)
        cap = self.limits.cap(principal)
        if self._sessions.count(principal) >= cap:
            who = "admin" if principal.is_admin else f"key {principal.key_id}"
            log.debug("MCP session refused: %s holds its %d sessions", who, cap)
            raise TooManySessionsError(cap, self.limits.retry_after_s)
        self._sessions.opening(principal)

    # -- sweep: stale bindings and revoked keys -----------------------------------------

    async def _sweep_forever(self) -> None:
        while True:
            await anyio.sleep(self.sweep_s)
            try:
                await self.sweep()
            except Exception:
                log.exception("MCP session sweep failed")

    async def sweep(self) -> None:
        """Forget sessions the SDK has ended; drop every session of a revoked key."""
        if self._manager is None:
            return
        self._sessions.reconcile(_live(self._manager))
        key_ids = [p.key_id for p in self._sessions.owners() if p.key_id is not None]
        if not key_ids:
            return
        gone = await anyio.to_thread.run_sync(self._revoked, key_ids)
        for key_id in gone:
            dropped = await self.drop(Principal(key_id))
            log.info("dropped %d MCP sessions of revoked key %s", dropped, key_id)

    def _revoked(self, key_ids: list[str]) -> list[str]:
        keys = self.engine.keys
        return [k for k in key_ids if (key := keys.get(k)) is None or key.revoked]

    async def drop(self, principal: Principal) -> int:
        """End every session of one caller at once, freeing its SDK state; the count."""
        if self._manager is None:
            return 0
        live = _live(self._manager)
        dropped = 0
        for session_id in self._sessions.sessions_of(principal):
            self._sessions.forget(session_id)
            transport = live.get(session_id)
            if transport is None:
                continue
            dropped += 1
            if transport.idle_scope is not None:
                transport.idle_scope.cancel()  # as an idle timeout: the SDK discards it
            else:
                await transport.terminate()
        return dropped


async def _error(send: Send, exc: MemorydError) -> None:
    body = json.dumps(exc.to_dict()).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if exc.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="memoryd"'))
    if isinstance(exc, TooManySessionsError | AuthThrottledError):
        headers.extend((k.encode(), v.encode()) for k, v in exc.headers.items())
    start: dict[str, Any] = {"type": "http.response.start", "status": exc.status}
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})
