"""Connection limits of ``memoryd serve``: the ``MEMORYD_*`` variables, the counters
``/metrics`` reads, and the whole responses written when a limit trips."""

from __future__ import annotations

import json
import logging
import resource
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

#: File descriptors left out of the default connection cap: the upstream pool (200),
#: SQLite (a reader per worker thread, each with its -wal and -shm files: ~130), logs,
#: the listening socket, model files and the other HTTP clients (embeddings, Qdrant).
FD_RESERVE = 400
#: The default cap never exceeds this: one Python process cannot serve more usefully,
#: and each idle connection still costs memory.
MAX_CONNECTIONS_CEILING = 4096
MIN_CONNECTIONS = 32
#: A rejected client gets this long to read its 503 before the socket closes (closing
#: with its request unread would send a RST that can destroy the 503); beyond
#: ``MAX_LINGERING`` at once (a flood) rejected sockets close at once.
LINGER_S = 1.0
MAX_LINGERING = 64
WARN_EVERY_S = 10.0


def default_max_connections(soft_limit: int | None = None) -> int:
    """The fd soft limit minus ``FD_RESERVE``, within 32..4096 (1024 fds: 624)."""
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY or soft_limit < 0:
        return MAX_CONNECTIONS_CEILING
    return max(MIN_CONNECTIONS, min(MAX_CONNECTIONS_CEILING, soft_limit - FD_RESERVE))


def _number(env: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}: not a number: {raw!r}") from None
    if not low <= value <= high:  # also rejects nan
        raise ValueError(f"{name}: out of range ({low:g}..{high:g}): {raw}")
    return value


PARSERS = ("auto", "httptools", "h11")


def _parser(env: Mapping[str, str]) -> str:
    raw = env.get("MEMORYD_HTTP_PARSER", "").strip().lower() or "auto"
    if raw not in PARSERS:
        raise ValueError(f"MEMORYD_HTTP_PARSER: one of {', '.join(PARSERS)}, not {raw!r}")
    return raw


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Per-connection deadlines and the connection cap (docs/operations.md#connections)."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 15.0
    body_min_rate: int = 8192
    max_connections: int = field(default_factory=default_max_connections)
    keepalive_timeout_s: float = 5.0
    keepalive_max_requests: int = 1000
    #: ``auto`` (httptools when installed, else h11), ``httptools`` or ``h11``.
    parser: str = "auto"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ConnectionLimits:
        """Read the ``MEMORYD_*`` connection variables; a bad value is a ``ValueError``
        naming it (these are security limits: no silent fallback)."""
        d = cls(max_connections=default_max_connections())
        return cls(
            header_timeout_s=_number(
                env, "MEMORYD_HEADER_TIMEOUT_S", d.header_timeout_s, 0.01, 3600
            ),
            body_timeout_s=_number(env, "MEMORYD_BODY_TIMEOUT_S", d.body_timeout_s, 0.01, 3600),
            body_min_rate=int(
                _number(env, "MEMORYD_BODY_MIN_BYTES_PER_S", d.body_min_rate, 0, 1024**3)
            ),
            max_connections=int(
                _number(env, "MEMORYD_MAX_CONNECTIONS", d.max_connections, 1, 1_000_000)
            ),
            keepalive_timeout_s=_number(
                env, "MEMORYD_KEEPALIVE_TIMEOUT_S", d.keepalive_timeout_s, 0.01, 3600
            ),
            keepalive_max_requests=int(
                _number(env, "MEMORYD_KEEPALIVE_MAX_REQUESTS", d.keepalive_max_requests, 0, 10**9)
            ),
            parser=_parser(env),
        )

    def describe(self) -> str:
        return (
            f"max {self.max_connections} connections; headers {self.header_timeout_s:g} s; "
            f"body idle {self.body_timeout_s:g} s, min {self.body_min_rate} B/s; keep-alive "
            f"{self.keepalive_timeout_s:g} s, {self.keepalive_max_requests or 'unlimited'} requests"
            f"; parser {self.parser}"
        )


@dataclass
class ConnectionStats:
    """Process-wide counters (for ``/metrics`` to read): connections refused over the
    cap, and closed for slow headers or a slow body."""

    rejected: int = 0
    header_timeouts: int = 0
    body_timeouts: int = 0


STATS = ConnectionStats()
_last_warned: dict[str, float] = {}


def _warn(kind: str, message: str, *args: object) -> None:
    """At most one warning per kind every 10 s: a flood must not flood the log too."""
    now = time.monotonic()
    if now - _last_warned.get(kind, -WARN_EVERY_S) >= WARN_EVERY_S:
        _last_warned[kind] = now
        log.warning(message, *args)


def _error_response(status: int, reason: str, code: str, message: str, extra: str = "") -> bytes:
    """A whole HTTP/1.1 response in the API's error shape, written without h11."""
    body = json.dumps({"error": {"message": message, "code": code, "details": []}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n{extra}connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


TOO_MANY_CONNECTIONS = _error_response(
    503,
    "Service Unavailable",
    "too_many_connections",
    "the server has too many open connections; retry shortly",
    "retry-after: 1\r\n",
)
HEADER_TIMEOUT = _error_response(
    408, "Request Timeout", "request_timeout", "the request headers did not arrive in time"
)
BODY_TIMEOUT = _error_response(
    408, "Request Timeout", "request_timeout", "the request body did not arrive in time"
)
#: A request head larger than this is refused (431) before it is parsed further: h11's
#: own limit, kept when the faster parser serves (llhttp has none of its own).
MAX_HEAD_BYTES = 16 * 1024
HEAD_TOO_LARGE = _error_response(
    431,
    "Request Header Fields Too Large",
    "headers_too_large",
    f"the request line and headers exceed {MAX_HEAD_BYTES // 1024} KiB",
)


def check_fd_headroom(limits: ConnectionLimits) -> None:
    """Warn when the cap leaves fewer than ``FD_RESERVE`` descriptors for the rest."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and limits.max_connections + FD_RESERVE > soft:
        log.warning(
            "MEMORYD_MAX_CONNECTIONS=%d leaves under %d of the %d file descriptors "
            "(ulimit -n) for the database and upstream calls; raise ulimit -n or lower it",
            limits.max_connections,
            FD_RESERVE,
            soft,
        )
