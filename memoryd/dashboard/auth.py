"""Dashboard sessions: a random cookie id mapped server-side to a session and its CSRF token.

The admin token is checked once, at login, in constant time; it is never stored in
the session, the cookie or the page. The cookie is ``HttpOnly; SameSite=Strict;
Path=/`` (``Secure`` when the request came over https). Sessions live in process
memory: a restart logs everyone out, which is the safe failure.

``/api/*`` accepts a session through :func:`check_api_session`: a valid session, and
for state-changing methods an ``X-CSRF-Token`` header equal to the session's token.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.requests import Request

from memoryd.errors import AuthError, MemorydError

SESSION_COOKIE = "memoryd_session"
LOGIN_CSRF_COOKIE = "memoryd_login_csrf"
CSRF_HEADER = "x-csrf-token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

#: A session ends after this long without use, and in any case after ``MAX_AGE_S``.
IDLE_TIMEOUT_S = 8 * 3600.0
MAX_AGE_S = 24 * 3600.0
MAX_SESSIONS = 256


class CsrfError(MemorydError):
    """403: a state-changing request from a session without the right CSRF token."""

    status = 403
    code = "forbidden"


@dataclass
class Session:
    id: str
    csrf_token: str
    created: float
    last_seen: float = field(default=0.0)


class SessionStore:
    """Thread-safe, bounded, in-memory sessions (the oldest go first when full)."""

    def __init__(
        self,
        *,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_age_s: float = MAX_AGE_S,
        max_sessions: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle_timeout_s = idle_timeout_s
        self.max_age_s = max_age_s
        self.max_sessions = max_sessions
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def _expired(self, session: Session, now: float) -> bool:
        return (
            now - session.last_seen > self.idle_timeout_s or now - session.created > self.max_age_s
        )

    def create(self) -> Session:
        now = self._clock()
        session = Session(
            id=secrets.token_urlsafe(32),
            csrf_token=secrets.token_urlsafe(32),
            created=now,
            last_seen=now,
        )
        with self._lock:
            for sid in [s.id for s in self._sessions.values() if self._expired(s, now)]:
                del self._sessions[sid]
            while len(self._sessions) >= self.max_sessions:
                oldest = min(self._sessions.values(), key=lambda s: s.created)
                del self._sessions[oldest.id]
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id (its idle timer restarts), or None."""
        if not session_id:
            return None
        now = self._clock()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if self._expired(session, now):
                del self._sessions[session_id]
                return None
            session.last_seen = now
            return session

    def delete(self, session_id: str | None) -> None:
        if session_id:
            with self._lock:
                self._sessions.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


def token_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison; None or empty never matches."""
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def store_of(request: Request) -> SessionStore | None:
    store = getattr(request.app.state, "dashboard_sessions", None)
    return store if isinstance(store, SessionStore) else None


def current_session(request: Request) -> Session | None:
    store = store_of(request)
    if store is None:
        return None
    return store.get(request.cookies.get(SESSION_COOKIE))


def check_api_session(request: Request) -> bool:
    """For ``require_admin``: False when the request carries no session cookie (the
    caller then asks for a Bearer token); True for a valid session whose writes carry
    the CSRF header. An unknown or expired session is 401, a missing or wrong CSRF
    token on POST/PUT/PATCH/DELETE is 403."""
    store = store_of(request)
    cookie = request.cookies.get(SESSION_COOKIE)
    if store is None or not cookie:
        return False
    session = store.get(cookie)
    if session is None:
        raise AuthError("dashboard session expired or unknown: log in again")
    if request.method.upper() in UNSAFE_METHODS and not token_matches(
        request.headers.get(CSRF_HEADER), session.csrf_token
    ):
        raise CsrfError("missing or invalid CSRF token (X-CSRF-Token header)")
    return True
