"""The guard on uvicorn's h11 protocol (pure Python): used when httptools is missing or
``MEMORYD_HTTP_PARSER=h11`` asks for it. h11 refuses a head over 16 KiB itself."""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from memoryd.http.protocol.guard import APP, BODY, IDLE, ConnectionGuard


class GuardedH11Protocol(ConnectionGuard, H11Protocol):
    """``H11Protocol`` with the connection guard; the phase is h11's client state."""

    def _client_phase(self) -> str:
        state = self.conn.their_state
        if state is h11.IDLE:
            return IDLE
        return BODY if state is h11.SEND_BODY else APP

    def _partial_head(self) -> bool:
        return bool(self.conn.trailing_data[0])

    def on_response_complete(self) -> None:
        self._count_response()
        super().on_response_complete()
        self._after_response()
