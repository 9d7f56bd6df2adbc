"""Dashboard sessions: a random cookie id mapped server-side to a session and its CSRF token.

The admin token is checked once, at login, in constant time; it is never stored in
the session, the cookie or the page. The cookie is ``HttpOnly; SameSite=Strict;
Path=/`` (``Secure`` when the request came over https). Sessions live in process
memory: a restart logs everyone out, which is the safe failure.

Several processes behind one address (``serve --workers``, replicas on PostgreSQL)
must accept each other's sessions, since a browser's requests land on any of them:
there the cookie is signed with a key derived from the admin token they share, the
CSRF token is derived from it the same way, and a process adopts a session it has
not seen when the signature holds and it is younger than ``MAX_AGE_S``. A logout is
written to the shared store and checked on every use, so it ends the session on all of
them (``SharedSessions``). The idle timeout is kept per process.

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


@dataclass(frozen=True)
class SharedSessions:
    """What lets every process of one deployment accept a session: a signing key they
    share, and where logouts are kept (``revoke``/``is_revoked``, by cookie)."""

    key: bytes
    is_revoked: Callable[[str], bool]
    revoke: Callable[[str, float], None]
    wall: Callable[[], float] = time.time

    @classmethod
    def for_token(
        cls,
        admin_token: str,
        is_revoked: Callable[[str], bool],
        revoke: Callable[[str, float], None],
    ) -> SharedSessions:
        key = hmac.new(admin_token.encode(), b"memoryd dashboard sessions", "sha256").digest()
        return cls(key, is_revoked, revoke)

    def _mac(self, text: str) -> str:
        return hmac.new(self.key, text.encode(), "sha256").hexdigest()

    def issue(self) -> tuple[str, str]:
        """A new ``(cookie, csrf token)``: ``<random id>.<issued at>.<signature>``."""
        sid = secrets.token_urlsafe(32)
        signed = f"{sid}.{int(self.wall())}"
        return f"{signed}.{self._mac(signed)}", self.csrf(sid)

    def csrf(self, sid: str) -> str:
        return self._mac("csrf:" + sid)

    def verify(self, cookie: str, max_age_s: float) -> tuple[str, float] | None:
        """``(csrf token, age in seconds)`` of a cookie this deployment signed, still
        young enough; None otherwise."""
        sid, _, rest = cookie.partition(".")
        issued, _, mac = rest.partition(".")
        if (
            not sid
            or not issued.isdigit()
            or not hmac.compare_digest(mac.encode(), self._mac(f"{sid}.{issued}").encode())
        ):
            return None
        age = self.wall() - int(issued)
        if not -60 <= age < max_age_s:  # a minute of clock skew between machines
            return None
        return self.csrf(sid), max(age, 0.0)


class SessionStore:
    """Thread-safe, bounded, in-memory sessions (the oldest go first when full);
    with ``shared``, also the signed sessions of the deployment's other processes."""

    def __init__(
        self,
        *,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_age_s: float = MAX_AGE_S,
        max_sessions: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedSessions | None = None,
    ) -> None:
        self.idle_timeout_s = idle_timeout_s
        self.max_age_s = max_age_s
        self.max_sessions = max_sessions
        self.shared = shared
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def _expired(self, session: Session, now: float) -> bool:
        return (
            now - session.last_seen > self.idle_timeout_s or now - session.created > self.max_age_s
        )

    def create(self) -> Session:
        now = self._clock()
        if self.shared is not None:
            cookie, csrf = self.shared.issue()
        else:
            cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        return self._keep(Session(id=cookie, csrf_token=csrf, created=now, last_seen=now))

    def _keep(self, session: Session) -> Session:
        now = self._clock()
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
        if self.shared is not None and self.shared.is_revoked(session_id):
            self.delete(session_id, everywhere=False)  # logged out on another process
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and self._expired(session, now):
                del self._sessions[session_id]
                return None
            if session is not None:
                session.last_seen = now
                return session
        return self._adopt(session_id, now)

    def _adopt(self, cookie: str, now: float) -> Session | None:
        """A session another process of the deployment opened (signed, young enough)."""
        verified = self.shared.verify(cookie, self.max_age_s) if self.shared else None
        if verified is None:
            return None
        csrf, age = verified
        return self._keep(Session(id=cookie, csrf_token=csrf, created=now - age, last_seen=now))

    def delete(self, session_id: str | None, *, everywhere: bool = True) -> None:
        if not session_id:
            return
        with self._lock:
            self._sessions.pop(session_id, None)
        if everywhere and self.shared is not None:
            verified = self.shared.verify(session_id, self.max_age_s)
            if verified is not None:  # remembered until it would have expired anyway
                self.shared.revoke(session_id, self.shared.wall() + self.max_age_s)

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
