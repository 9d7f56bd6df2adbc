"""The guard on uvicorn's httptools protocol (llhttp, in C): the default parser.

Why it is the default: h11 parses in Python, and in a profile of the pure proxy it was
a fifth of the process's CPU; llhttp makes the same request a quarter cheaper
(docs/benchmarks/gateway.md). llhttp has no phases to ask, so the parser's callbacks record
them, and no limit on a head's size, so the guard refuses one over
``MAX_HEAD_BYTES`` (h11's limit) with a 431.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from memoryd.http.protocol.guard import APP, BODY, IDLE, ConnectionGuard
from memoryd.http.protocol.limits import HEAD_TOO_LARGE, MAX_HEAD_BYTES


class GuardedHttpToolsProtocol(ConnectionGuard, HttpToolsProtocol):
    """``HttpToolsProtocol`` with the connection guard."""

    def _parser_setup(self) -> None:
        self._state = IDLE
        self._head_started = False  # a message has begun and its head is not complete
        self._head_bytes = 0  # bytes fed while a head was due (bounded by MAX_HEAD_BYTES)

    def _client_phase(self) -> str:
        return self._state

    def _partial_head(self) -> bool:
        return self._head_started

    def data_received(self, data: bytes) -> None:
        if self._head_started or self._state is IDLE:
            self._head_bytes += len(data)
        super().data_received(data)
        if (
            self._head_bytes > MAX_HEAD_BYTES
            and (self._head_started or self._state is IDLE)
            and not self.transport.is_closing()
        ):
            self.transport.write(HEAD_TOO_LARGE)
            self.transport.close()

    # -- parser callbacks: the phase --------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_started = True

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._head_started = False
        self._head_bytes = 0
        self._state = BODY

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._state = APP

    def on_response_complete(self) -> None:
        self._count_response()
        super().on_response_complete()
        cycle = self.cycle
        if self._state is APP and (cycle is None or cycle.response_complete):
            # The last request read is answered: the next head is due (its clock
            # starts now, as on h11, even if part of it came in early).
            self._state = IDLE
            self._head_bytes = 0
        self._after_response()
