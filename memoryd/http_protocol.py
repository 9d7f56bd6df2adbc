"""Connection hygiene for ``memoryd serve``: deadlines for slow clients, a connection cap.

Why: uvicorn's h11 protocol (0.55) has one timer, the idle keep-alive timeout armed
after a response. A client that sends half a request line, or headers and then a
trickle of body, holds its socket forever; ~20,000 of them exhaust the process's file
descriptors and even ``/healthz`` stops answering. ``limit_concurrency`` does not help:
it answers 503 only once a request's headers are parsed (a slowloris never gets there)
and counts tasks too. httptools is not installed here (uvicorn's ``auto`` picks h11),
so this subclass of ``H11Protocol`` is the one protocol ``serve`` uses. It adds:

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

import asyncio
import json
import logging
import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
from uvicorn._types import (
    ASGIReceiveCallable,
    ASGISendCallable,
    ASGISendEvent,
    Scope,
)
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

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


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Per-connection deadlines and the connection cap (docs/operations.md#connections)."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 15.0
    body_min_rate: int = 8192
    max_connections: int = field(default_factory=default_max_connections)
    keepalive_timeout_s: float = 5.0
    keepalive_max_requests: int = 1000

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
        )

    def describe(self) -> str:
        return (
            f"max {self.max_connections} connections; headers {self.header_timeout_s:g} s; "
            f"body idle {self.body_timeout_s:g} s, min {self.body_min_rate} B/s; keep-alive "
            f"{self.keepalive_timeout_s:g} s, {self.keepalive_max_requests or 'unlimited'} requests"
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


class _TimedFlow(FlowControl):
    """uvicorn's flow control, remembering how long the server paused reading: that
    time is not the client's fault."""

    def __init__(self, transport: asyncio.Transport, clock: Callable[[], float]) -> None:
        super().__init__(transport)
        self._clock = clock
        self._paused_at: float | None = None
        self._paused_total = 0.0

    def pause_reading(self) -> None:
        if not self.read_paused:
            self._paused_at = self._clock()
        super().pause_reading()

    def resume_reading(self) -> None:
        if self.read_paused and self._paused_at is not None:
            self._paused_total += self._clock() - self._paused_at
            self._paused_at = None
        super().resume_reading()

    def paused_for(self, now: float) -> float:
        """Seconds spent paused so far (the current pause included)."""
        current = now - self._paused_at if self._paused_at is not None else 0.0
        return self._paused_total + current


class GuardedH11Protocol(H11Protocol):
    """``H11Protocol`` with header/body deadlines, a connection cap and keep-alive
    limits. Use ``protocol_class(limits)``, which binds the limits."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()
    lingering: ClassVar[int] = 0

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        # uvicorn types it int; call_later takes any float.
        self.timeout_keep_alive = self.limits.keepalive_timeout_s  # type: ignore[assignment]
        self._rejected = False
        self._lingering = False
        self._timer: asyncio.TimerHandle | None = None
        self._timed_flow: _TimedFlow | None = None
        self._phase: object = None  # the h11 state of the client when last looked at
        self._phase_since = 0.0
        self._paused_base = 0.0
        self._last_byte_at = 0.0
        self._body_bytes = 0
        self._requests = 0
        self._inner_app = self.app
        if self.limits.keepalive_max_requests == 1:
            self.app = self._last_request

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(  # type: ignore[override]
        self, transport: asyncio.Transport
    ) -> None:
        if len(self.connections) >= self.limits.max_connections:
            self._reject(transport)
            return
        super().connection_made(transport)
        self._timed_flow = self.flow = _TimedFlow(transport, self.loop.time)
        now = self.loop.time()
        self._last_byte_at = now
        self._track(now)

    def data_received(self, data: bytes) -> None:
        if self._rejected:
            return  # read and dropped while the 503 lingers
        now = self.loop.time()
        self._last_byte_at = now
        if self._phase is h11.SEND_BODY:
            self._body_bytes += len(data)
        super().data_received(data)
        self._track(now)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        if not self._rejected:
            super().connection_lost(exc)
        elif self._lingering:
            self._lingering = False
            type(self).lingering -= 1

    def on_response_complete(self) -> None:
        self._requests += 1
        if self._requests + 1 == self.limits.keepalive_max_requests:
            self.app = self._last_request  # the next request is the last one
        super().on_response_complete()
        if not self.transport.is_closing():
            self._track(self.loop.time())

    # -- the connection cap -------------------------------------------------------------

    def _reject(self, transport: asyncio.Transport) -> None:
        """Answer 503 without reading a byte, then close (after a short linger)."""
        self._rejected = True
        self.transport = transport
        STATS.rejected += 1
        _warn(
            "cap",
            "connection limit reached (%d open): answering 503 (%d refused so far)",
            len(self.connections),
            STATS.rejected,
        )
        transport.write(TOO_MANY_CONNECTIONS)
        cls = type(self)
        if cls.lingering >= MAX_LINGERING or not transport.can_write_eof():
            transport.close()
            return
        cls.lingering += 1
        self._lingering = True
        transport.write_eof()  # the client sees the end of the 503; EOF from it closes
        self._timer = self.loop.call_later(LINGER_S, transport.close)

    # -- keep-alive ---------------------------------------------------------------------

    async def _last_request(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        """The app, answering with ``connection: close`` (the request cap is reached)."""

        async def closing_send(message: ASGISendEvent) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(name.lower() == b"connection" for name, _ in headers):
                    headers.append((b"connection", b"close"))
                message = {**message, "headers": headers}
            await send(message)

        await self._inner_app(scope, receive, closing_send)

    # -- deadlines ----------------------------------------------------------------------

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _paused_for(self, now: float) -> float:
        return self._timed_flow.paused_for(now) if self._timed_flow is not None else 0.0

    def _track(self, now: float) -> None:
        """On a change of the client's h11 state, restart the phase clock and re-arm."""
        state = self.conn.their_state
        if state is self._phase:
            return
        self._phase = state
        self._phase_since = now
        self._paused_base = self._paused_for(now)
        self._body_bytes = 0
        self._cancel_timer()
        deadline = self._deadline(now)
        if deadline is not None:
            self._timer = self.loop.call_at(deadline, self._on_deadline)

    def _deadline(self, now: float) -> float | None:
        """When the current phase times out, as known now (``None``: no deadline)."""
        limits = self.limits
        if self._phase is h11.IDLE:
            return self._phase_since + limits.header_timeout_s
        if self._phase is not h11.SEND_BODY:
            return None  # the app has the request: its own timeouts apply
        cycle = self.cycle
        if cycle is not None and cycle.waiting_for_100_continue:
            # The client waits for our "100 Continue": its body clock has not started.
            self._phase_since = self._last_byte_at = now
            self._paused_base = self._paused_for(now)
            self._body_bytes = 0
            return now + limits.body_timeout_s
        if self.flow.read_paused:
            self._last_byte_at = now  # we stopped reading: no byte is due
            return now + limits.body_timeout_s
        deadline = self._last_byte_at + limits.body_timeout_s
        if limits.body_min_rate:
            active_since = self._phase_since + self._paused_for(now) - self._paused_base
            by_rate = active_since + limits.body_timeout_s + self._body_bytes / limits.body_min_rate
            deadline = min(deadline, by_rate)
        return deadline

    def _on_deadline(self) -> None:
        self._timer = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        now = self.loop.time()
        deadline = self._deadline(now)
        if deadline is None:
            return
        if deadline > now:  # bytes arrived, or we paused reading: not yet
            self._timer = self.loop.call_at(deadline, self._on_deadline)
            return
        if self._phase is h11.IDLE:
            partial = bool(self.conn.trailing_data[0])
            if partial:  # part of a request: tell the client why
                self.transport.write(HEADER_TIMEOUT)
            if partial or not self._requests:  # else: a quiet keep-alive, just closed
                STATS.header_timeouts += 1
                _warn(
                    "headers",
                    "closed a connection whose request headers took over %g s (%d so far)",
                    self.limits.header_timeout_s,
                    STATS.header_timeouts,
                )
        else:
            STATS.body_timeouts += 1
            cycle = self.cycle
            if cycle is not None:
                if not cycle.response_started:
                    self.transport.write(BODY_TIMEOUT)
                cycle.disconnected = True  # the app's receive() returns http.disconnect
                cycle.message_event.set()
            _warn(
                "body",
                "closed a connection whose request body stalled or trickled (%d so far)",
                STATS.body_timeouts,
            )
        self.transport.close()


def protocol_class(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` with ``limits`` bound (uvicorn
    builds protocols from the class alone)."""

    class BoundProtocol(GuardedH11Protocol):
        pass

    BoundProtocol.limits = limits
    BoundProtocol.lingering = 0
    return BoundProtocol


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
