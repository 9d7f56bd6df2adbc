"""The connection guard shared by both HTTP parsers: the cap, the deadlines, keep-alive.

A parser-specific subclass (``on_httptools``, ``on_h11``) says which phase the client
is in (``IDLE``: a request head is due; ``BODY``: its body is; ``APP``: the app has
the request) and whether part of a head has arrived; everything else lives here, so
the two protocols cannot drift apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, ClassVar

from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, ASGISendEvent, Scope
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.server import ServerState

from memoryd.http.protocol.limits import (
    BODY_TIMEOUT,
    HEADER_TIMEOUT,
    LINGER_S,
    MAX_LINGERING,
    STATS,
    TOO_MANY_CONNECTIONS,
    ConnectionLimits,
    _warn,
)

#: The client's phases, as the guard times them.
IDLE = "idle"
BODY = "body"
APP = "app"


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


class ConnectionGuard(asyncio.Protocol):
    """Header/body deadlines, a connection cap and keep-alive limits, mixed in before a
    uvicorn HTTP protocol (``class P(ConnectionGuard, H11Protocol)``)."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()
    lingering: ClassVar[int] = 0

    # Set by the uvicorn protocol this is mixed into.
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    connections: set[Any]
    flow: FlowControl
    cycle: Any
    app: Any
    timeout_keep_alive: Any

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)  # type: ignore[call-arg]
        self._parser_setup()
        self.timeout_keep_alive = self.limits.keepalive_timeout_s  # call_later takes floats
        self._rejected = False
        self._lingering = False
        self._timer: asyncio.TimerHandle | None = None
        self._timed_flow: _TimedFlow | None = None
        self._phase: str | None = None  # the phase when last looked at
        self._phase_since = 0.0
        self._paused_base = 0.0
        self._last_byte_at = 0.0
        self._body_bytes = 0
        self._requests = 0
        self._inner_app = self.app
        if self.limits.keepalive_max_requests == 1:
            self.app = self._last_request

    # -- what the parser-specific subclass says ------------------------------------------

    def _parser_setup(self) -> None:
        """The subclass's own state, before the guard's (the uvicorn protocol's is set)."""

    def _client_phase(self) -> str:
        raise NotImplementedError

    def _partial_head(self) -> bool:
        """Part of a request head has arrived (a timeout then answers 408)."""
        raise NotImplementedError

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
        if self._phase is BODY:
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

    def _count_response(self) -> None:
        """Before the protocol's ``on_response_complete``: the keep-alive request cap."""
        self._requests += 1
        if self._requests + 1 == self.limits.keepalive_max_requests:
            self.app = self._last_request  # the next request is the last one

    def _after_response(self) -> None:
        """After the protocol's ``on_response_complete``: the next head's clock."""
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
        """On a change of the client's phase, restart the phase clock and re-arm."""
        phase = self._client_phase()
        if phase is self._phase:
            return
        self._phase = phase
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
        if self._phase is IDLE:
            return self._phase_since + limits.header_timeout_s
        if self._phase is not BODY:
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
        if self._phase is IDLE:
            partial = self._partial_head()
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
