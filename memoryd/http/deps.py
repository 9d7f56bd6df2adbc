"""Request dependencies: the engine, and the admin-token check for ``/api/*``, slowed
for an address that keeps failing it (``AuthThrottle``)."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request

from memoryd.engine import MemoryEngine
from memoryd.errors import AuthError, MemorydError
from memoryd.http.session import check_api_session

log = logging.getLogger(__name__)


class AuthThrottledError(MemorydError):
    status = 429
    code = "rate_limit_exceeded"

    def __init__(self, retry_after_s: float) -> None:
        wait = max(1, math.ceil(retry_after_s))
        super().__init__(
            f"too many failed authentications from this address; retry in {wait} s",
            details=[{"field": "authorization", "message": "failed authentications throttled"}],
        )
        self.headers = {"retry-after": str(wait), "x-memoryd-limit": "auth-failures"}


class AuthThrottle:
    """Failed authentications per client address: ``burst`` failures at once, then one
    more every ``refill_s``. An address out of tries is refused (429 with retry-after)
    before its credential is even compared, so guessing runs at ``1/refill_s`` a second
    (``MEMORYD_AUTH_FAILURES_PER_MIN``, 10 by default) however fast it asks; a right
    credential costs nothing. Every failure is logged with its address (never the
    credential). Holds at most ``max_addresses`` addresses, the longest quiet forgotten."""

    def __init__(
        self,
        burst: int = 10,
        refill_s: float = 6.0,
        max_addresses: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst, self.refill_s, self.max_addresses = burst, refill_s, max_addresses
        self._clock = clock
        self._lock = threading.Lock()
        self._tries: OrderedDict[str, tuple[float, float]] = OrderedDict()  # (left, at)

    @classmethod
    def per_minute(cls, failures: int) -> AuthThrottle:
        """``failures`` at once, and as many again each minute."""
        return cls(burst=failures, refill_s=60.0 / failures)

    def _left(self, address: str, now: float) -> float:
        left, at = self._tries.get(address, (float(self.burst), now))
        return min(float(self.burst), left + (now - at) / self.refill_s)

    def check(self, address: str) -> None:
        """Raise ``AuthThrottledError`` when ``address`` has no try left."""
        with self._lock:
            left = self._left(address, self._clock())
        if left < 1.0:
            raise AuthThrottledError((1.0 - left) * self.refill_s)

    def failed(self, address: str, what: str) -> None:
        """Count one failed authentication of ``address`` (``what``: which credential)."""
        now = self._clock()
        with self._lock:
            left = self._left(address, now) - 1.0
            self._tries[address] = (left, now)
            self._tries.move_to_end(address)
            while len(self._tries) > self.max_addresses:
                self._tries.popitem(last=False)
        log.warning("failed %s authentication from %s (%d tries left)", what, address, left)


def client_address(request: Request) -> str:
    return throttle_key(request.client.host if request.client else "unknown")


def throttle_key(host: str) -> str:
    """The bucket of a client address: an IPv6 client by its /64 (one host's share of
    addresses), an IPv4 one by itself."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def is_admin_token(request: Request, token: str | None, what: str) -> bool:
    """Whether ``token`` is the admin token, asked under the address's throttle (a path
    that only tells, as ``/metrics`` and ``/v1``'s hint do, must not be a free oracle):
    False without comparing when the address is out of tries."""
    expected: str = getattr(request.app.state, "admin_token", "")
    if not token or not expected:
        return False
    throttle, address = auth_throttle(request), client_address(request)
    try:
        throttle.check(address)
    except AuthThrottledError:
        return False
    if hmac.compare_digest(token.encode(), expected.encode()):
        return True
    throttle.failed(address, what)
    return False


def auth_throttle(request: Request) -> AuthThrottle:
    throttle: AuthThrottle = request.app.state.auth_throttle
    return throttle


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
    throttle, address = auth_throttle(request), client_address(request)
    throttle.check(address)
    if not hmac.compare_digest(token.encode(), expected.encode()):
        throttle.failed(address, "admin token")
        raise AuthError("invalid admin token")


AdminDep = Annotated[None, Depends(require_admin)]
