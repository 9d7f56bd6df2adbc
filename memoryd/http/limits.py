"""Request body limits: size and JSON nesting depth, pure-ASGI middlewares in front of
every route.

``BodyLimitMiddleware`` answers 413 before the app runs when ``Content-Length`` is
over the limit, and for bodies without one (chunked uploads) it counts bytes as the
app receives them: at the first byte over, it answers 413 itself and tells the app
the client went away (``http.disconnect``), so nothing past the limit is ever held.
Whatever the app still sends after that is dropped. uvicorn discards the rest of an
unread body once the response is complete, so the client sees the 413.

The answer is in the caller's error shape: OpenAI's ``{"error": {message, type,
param, code}}`` under ``/v1`` (the gateway), the one API shape elsewhere.
A path may have its own limit (the JSONL import accepts more than a chat call).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.core.jsondepth import MAX_JSON_DEPTH, format_path
from memoryd.core.wire_errors import gateway_error
from memoryd.http.errors import error_body

GATEWAY_PREFIX = "/v1/"


def request_error(path: str, message: str, code: str, field: str | None) -> dict[str, Any]:
    """An error body in the caller's shape: OpenAI's under the gateway (``param`` is the
    field), the API's one shape elsewhere (one detail for the field, ``body`` if none)."""
    if path.startswith(GATEWAY_PREFIX):
        status = 413 if code == "payload_too_large" else 400
        return gateway_error(path, status, message, "invalid_request_error", code, field)
    return error_body(message, code, [{"field": field or "body", "message": message}])


def too_large_body(path: str, limit: int) -> dict[str, Any]:
    """The 413 body for ``path``."""
    message = f"request body is larger than the limit of {limit} bytes"
    return request_error(path, message, "payload_too_large", None)


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


# -- nesting depth of JSON bodies ---------------------------------------------------------

#: Tokens the path-naming scan may read before it gives up naming (the 400 stands).
_NAMING_BUDGET = 200_000
# A JSON string; an unclosed one runs to the end, so no match ever fails and is retried
# from the next quote (that retry made a scan quadratic on input like '"\"\"\"...').
_STRING = rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)'
_STRINGS = re.compile(_STRING, re.DOTALL)
_BRACKETS_ONLY = bytes(sorted(set(range(256)) - set(b"[]{}")))
_TOKENS = re.compile(_STRING + rb"|[:,\[\]{}]", re.DOTALL)


def raw_too_deep(raw: bytes, limit: int = MAX_JSON_DEPTH) -> str | None:
    """The path where ``raw`` (a JSON text) nests deeper than ``limit``, or None.

    Strings are dropped, the brackets kept, and the running depth computed with numpy,
    so a 4 MiB body of brackets costs milliseconds; only a body that is too deep is
    walked token by token to name the path. Malformed JSON is left to the parser."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return None  # cannot be deeper: no scan at all (nearly every request)
    brackets = np.frombuffer(_STRINGS.sub(b"", raw).translate(None, _BRACKETS_ONLY), np.uint8)
    opening = (brackets == ord("[")) | (brackets == ord("{"))
    if int(np.cumsum(np.where(opening, 1, -1), dtype=np.int64).max(initial=0)) <= limit:
        return None
    return _name_path(raw, limit)


def _name_path(raw: bytes, limit: int) -> str:
    """The path of the first point deeper than ``limit`` (a bounded scan)."""
    path: list[str | int] = []  # per open container: the key or index being filled
    kinds: list[int] = []  # per open container: ord("[") or ord("{")
    last_string = ""
    for count, match in enumerate(_TOKENS.finditer(raw)):
        if count > _NAMING_BUDGET:
            break
        token = match.group()
        head = token[0]
        if head == 0x22:  # '"'
            last_string = token[1:-1].decode("utf-8", "replace")
        elif head in (0x5B, 0x7B):  # '[' '{'
            kinds.append(head)
            if len(kinds) > limit:
                break
            path.append(0 if head == 0x5B else "")
        elif head in (0x5D, 0x7D) and kinds:  # ']' '}'
            kinds.pop()
            path.pop()
        elif head == 0x3A and kinds and kinds[-1] == 0x7B:  # ':' after a key
            path[-1] = last_string
        elif head == 0x2C and kinds and kinds[-1] == 0x5B:  # ',' between items
            index = path[-1]
            path[-1] = index + 1 if isinstance(index, int) else 0
    return format_path(path) or "(root)"


def too_deep_body(path: str, where: str, limit: int) -> dict[str, Any]:
    """The 400 body naming the top-level field; the message has the whole path."""
    top = re.split(r"[.\[]", where, maxsplit=1)[0] or "body"
    message = f"'{top}' is nested deeper than {limit} levels (at {where})"
    return request_error(path, message, "nesting_too_deep", top)


class JsonDepthMiddleware:
    """400 for a request body nested deeper than ``MAX_JSON_DEPTH``, before the app
    (or any JSON parser) sees it. The body is read whole (the body limit, outside this
    middleware, bounds it) and then handed to the app unchanged. ``exempt`` paths
    (the JSONL import) check each line themselves."""

    def __init__(
        self, app: ASGIApp, *, limit: int = MAX_JSON_DEPTH, exempt: frozenset[str] = frozenset()
    ) -> None:
        self.app, self.limit, self.exempt = app, limit, exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD") or path in self.exempt:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                replay: list[Message] = [message]
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                body = b"".join(chunks)
                where = raw_too_deep(body, self.limit)
                if where is not None:
                    await _send_json(send, 400, too_deep_body(path, where, self.limit))
                    return
                replay = [{"type": "http.request", "body": body, "more_body": False}]
                break

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)


async def _send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def install_json_depth(app: FastAPI, exempt: frozenset[str] = frozenset()) -> None:
    """Add the depth check; call it before ``install_body_limit`` so the size limit
    (outside it) bounds what it reads."""
    app.add_middleware(JsonDepthMiddleware, exempt=exempt)
