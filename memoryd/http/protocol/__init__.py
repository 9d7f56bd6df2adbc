"""Connection hygiene for ``memoryd serve``: deadlines for slow clients, a connection cap.

Why: uvicorn's h11 protocol (0.55) has one timer, the idle keep-alive timeout armed
after a response. A client that sends half a request line, or headers and then a
trickle of body, holds its socket forever; ~20,000 of them exhaust the process's file
descriptors and even ``/healthz`` stops answering. ``limit_concurrency`` does not help:
it answers 503 only once a request's headers are parsed (a slowloris never gets there)
and counts tasks too. So ``serve`` runs uvicorn's protocol with a guard mixed in
(``guard``): on httptools by default (``on_httptools``; a C parser, a quarter less CPU
per request), on h11 when httptools is missing or ``MEMORYD_HTTP_PARSER=h11``
(``on_h11``). It adds:

- a header deadline: a request's whole head must arrive within ``header_timeout_s`` of
  the connection opening, or of the end of the previous exchange on keep-alive;
- body deadlines: no byte for ``body_timeout_s`` disconnects, and past that grace the
  body must average ``body_min_rate`` bytes/s, so a body of n bytes gets at most
  ``body_timeout_s + n / body_min_rate`` seconds (a 64 MiB import at the default
  8 KiB/s: 2.3 h; a real link is far faster). Time the server itself stops reading
  (flow control, an unanswered ``Expect: 100-continue``) does not count;
- a cap on open connections: beyond ``max_connections`` a new connection gets a whole
  503 at once, before any byte is read, and is closed;
- keep-alive limits: an idle timeout and a number of requests per connection.

Timers are lazy: one ``TimerHandle`` per connection, armed at the earliest possible
deadline when the request phase changes and re-checked when it fires, so arriving data
costs no timer work. A timeout answers 408 when the client is mid-request (a client that
never sent a byte is just closed) and the app sees ``http.disconnect``.
"""

from __future__ import annotations

from memoryd.http.protocol.guard import ConnectionGuard
from memoryd.http.protocol.limits import (
    STATS,
    ConnectionLimits,
    ConnectionStats,
    check_fd_headroom,
    default_max_connections,
)

__all__ = [
    "STATS",
    "ConnectionGuard",
    "ConnectionLimits",
    "ConnectionStats",
    "check_fd_headroom",
    "default_max_connections",
    "parser_name",
    "protocol_class",
]


def parser_name(limits: ConnectionLimits) -> str:
    """The parser ``limits.parser`` resolves to here (``auto``: httptools if installed)."""
    if limits.parser != "auto":
        return limits.parser
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


def protocol_class(limits: ConnectionLimits) -> type[ConnectionGuard]:
    """A protocol class for ``uvicorn.Config(http=...)`` with ``limits`` bound (uvicorn
    builds protocols from the class alone). ``MEMORYD_HTTP_PARSER=httptools`` without
    httptools installed is an ``ImportError`` naming the package."""
    base: type[ConnectionGuard]
    if parser_name(limits) == "httptools":
        try:
            from memoryd.http.protocol.on_httptools import GuardedHttpToolsProtocol
        except ImportError as exc:
            raise ImportError(
                "MEMORYD_HTTP_PARSER=httptools needs the httptools package "
                "(pip install httptools), or set it to h11"
            ) from exc
        base = GuardedHttpToolsProtocol
    else:
        from memoryd.http.protocol.on_h11 import GuardedH11Protocol

        base = GuardedH11Protocol

    class BoundProtocol(base):  # type: ignore[valid-type, misc]
        pass

    BoundProtocol.limits = limits
    BoundProtocol.lingering = 0
    return BoundProtocol
