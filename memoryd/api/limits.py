"""The request body size limit: a pure-ASGI middleware in front of every route.

``BodyLimitMiddleware`` answers 413 before the app runs when ``Content-Length`` is
over the limit, and for bodies without one (chunked uploads) it counts bytes as the
app receives them: at the first byte over, it answers 413 itself and tells the app
the client went away (``http.disconnect``), so nothing past the limit is ever held.
Whatever the app still sends after that is dropped. uvicorn discards the rest of an
unread body once the response is complete, so the client sees the 413.

The answer is in the caller's error shape: OpenAI's ``{"error": {message, type,
param, code}}`` under ``/v1`` (the gateway), the one API shape (SPEC §13) elsewhere.
A path may have its own limit (the JSONL import accepts more than a chat call).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.api.errors import error_body

GATEWAY_PREFIX = "/v1/"


def too_large_body(path: str, limit: int) -> dict[str, Any]:
    """The 413 body for ``path``: OpenAI-shaped for the gateway, the API shape elsewhere."""
    message = f"request body is larger than the limit of {limit} bytes"
    if path.startswith(GATEWAY_PREFIX):
        return {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": "payload_too_large",
            }
        }
    return error_body(message, "payload_too_large", [{"field": "body", "message": message}])


def declared_length(scope: Scope) -> int | None:
    """The request's ``Content-Length``, or None when absent or unreadable."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimitMiddleware:
    """413 for request bodies over ``max_bytes`` (``limits`` overrides it per exact path)."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, limits: Mapping[str, int] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.limits = dict(limits or {})

    def limit_for(self, path: str) -> int:
        return self.limits.get(path, self.max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        limit = self.limit_for(path)
        declared = declared_length(scope)
        if declared is not None and declared > limit:
            await _reject(send, path, limit)
            return

        received = 0
        started = False  # the app's response has begun: too late for a 413
        rejected = False  # we answered 413: the app's own answer is dropped

        async def limited_receive() -> Message:
            nonlocal received, rejected
            if rejected:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    rejected = True
                    if not started:
                        await _reject(send, path, limit)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if rejected:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not rejected:
                raise
            # The app saw a disconnect (ClientDisconnect and the like): already answered.


async def _reject(send: Send, path: str, limit: int) -> None:
    body = json.dumps(too_large_body(path, limit)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def install_body_limit(
    app: FastAPI, max_bytes: int, limits: Mapping[str, int] | None = None
) -> None:
    """Add the middleware; call it before the logging and metrics middlewares are
    added, so they (outside it) still log and count every 413."""
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_bytes, limits=limits)
