"""Request ids, access logs, structured logging and secret redaction (stdlib only).

- ``install_request_logging(app)``: a pure-ASGI middleware giving every request an id
  (the client's ``x-request-id`` when it is a sane token of at most 64 characters,
  else 32 random hex digits), stored at ``request.state.request_id`` and in a context
  variable (so every record logged while serving the request carries it), returned
  in the ``x-request-id`` response header, and one ``memoryd.access`` line per request.
- ``configure_logging(level, json_lines)``: one handler on the root logger; JSON lines
  when stderr is not a TTY, readable text otherwise.
- ``RedactionFilter``: masks ``Authorization`` values, ``Bearer <token>``, client keys
  (``mk_...``), ``sk-...`` style keys and every secret passed to ``register_secret``
  in messages, arguments, extra fields and tracebacks, before any handler formats them.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import re
import secrets
import sys
import threading
import time
from datetime import UTC, datetime
from typing import IO, Any

from fastapi import FastAPI
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.http.metrics import route_template

access_log = logging.getLogger("memoryd.access")

REQUEST_ID_HEADER = "x-request-id"
OWN_REQUEST_ID_HEADER = "x-memoryd-request-id"
_SANE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}$")

#: The id of the request being served on this task/thread (``None`` outside one).
request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "memoryd_request_id", default=None
)

MASK = "***"
#: Set on a record whose every field is already masked (the access line).
_CLEAN = "_memoryd_clean"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# -- redaction ---------------------------------------------------------------------------

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # "Authorization: Bearer x", "'authorization': 'Basic x'", "authorization=x"
    (
        re.compile(
            r"""(?i)(\b(?:proxy-)?authorization\b["']?\s*[:=]\s*["']?)"""
            r"""(?:(?:bearer|basic|token|digest)\s+)?[^\s"',;}\]]+"""
        ),
        r"\1" + MASK,
    ),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]+"), r"\1 " + MASK),
    (re.compile(r"\bmk_[A-Za-z0-9_\-]{6,}"), MASK),  # memoryd client keys
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), MASK),  # OpenAI-style provider keys
)
_SECRET_FIELDS = re.compile(
    r"(?i)^(authorization|proxy-authorization|x-api-key|api[_-]?key|.*token|.*secret|password)$"
)
_secrets: set[str] = set()
_secrets_lock = threading.Lock()


#: Paths and route templates as masked for the access line: the same few come back
#: request after request, so each is masked once (bounded: unique paths stop being
#: remembered, not masked). Emptied when a secret is registered.
_masked_paths: dict[str, str] = {}
MAX_MASKED_PATHS = 1024


def register_secret(value: str) -> None:
    """Mask this exact value wherever it appears in a log record (the admin token)."""
    if len(value) >= 6:
        with _secrets_lock:
            _secrets.add(value)
            _masked_paths.clear()


def _masked_path(path: str) -> str:
    masked = _masked_paths.get(path)
    if masked is None:
        masked = redact(path)
        if len(_masked_paths) < MAX_MASKED_PATHS:
            _masked_paths[path] = masked
    return masked


def redact(text: str) -> str:
    """``text`` with every secret-looking substring replaced by ``***``."""
    with _secrets_lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _redact_value(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return redact(value)
    if depth > 4:
        return value
    if isinstance(value, dict):
        return {
            k: MASK
            if isinstance(k, str) and _SECRET_FIELDS.match(k)
            else _redact_value(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(_redact_value(v, depth + 1) for v in value)
    if isinstance(value, int | float | bool) or value is None:
        return value
    return redact(str(value))


_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", (), None)).keys()
    | {"message", "asctime", "color_message", "taskName"}
)


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    return {
        k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS and not k.startswith("_")
    }


class RedactionFilter(logging.Filter):
    """Rewrites the record in place: the message is formatted and masked once (args
    cleared), extra fields and the traceback text are masked too. Also fills in the
    current request id."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_memoryd_redacted", False):
            return True
        if getattr(record, _CLEAN, False):
            record.msg, record.args = record.getMessage(), None
            setattr(record, "_memoryd_redacted", True)  # noqa: B010
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the record
            message = f"{record.msg!r} {record.args!r}"
        record.msg = redact(message)
        record.args = None
        for key, value in extra_fields(record).items():
            if key == "request_id":
                continue
            setattr(record, key, MASK if _SECRET_FIELDS.match(key) else _redact_value(value))
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        if getattr(record, "request_id", None) is None:
            setattr(record, "request_id", request_id_var.get())  # noqa: B010
        setattr(record, "_memoryd_redacted", True)  # noqa: B010
        return True


# -- formatters --------------------------------------------------------------------------


def _json_head(
    created: float, level: str, logger: str, message: str, request_id: str | None
) -> dict[str, Any]:
    """The first fields of a JSON line, in order (the formatter and the direct access
    line both start from it)."""
    stamp = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    return {
        "ts": stamp.replace("+00:00", "Z"),
        "level": level,
        "logger": logger,
        "message": message,
        "request_id": request_id,
    }


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, request_id, extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload = _json_head(
            record.created,
            record.levelname.lower(),
            record.name,
            record.getMessage(),
            getattr(record, "request_id", None),
        )
        for key, value in extra_fields(record).items():
            payload.setdefault(key, value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            payload["exc"] = record.exc_text
        if record.stack_info:
            payload["stack"] = record.stack_info
        line = json.dumps(payload, ensure_ascii=False, default=str)
        return line if getattr(record, _CLEAN, False) else redact(line)


class TextFormatter(logging.Formatter):
    """``2026-01-02 03:04:05.678 INFO  memoryd.access [rid] message``"""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created).strftime("%Y-%m-%d %H:%M:%S")
        millis = int(record.msecs)
        rid = getattr(record, "request_id", None)
        line = (
            f"{stamp}.{millis:03d} {record.levelname:<5} {record.name}"
            + (f" [{rid}]" if rid else "")
            + (" [may hold content]" if getattr(record, CONTENT_FIELD, False) else "")
            + f" {record.getMessage()}"
        )
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + record.exc_text
        if record.stack_info:
            line += "\n" + record.stack_info
        return line if getattr(record, _CLEAN, False) else redact(line)


_HANDLER_MARK = "_memoryd_handler"


#: Loggers whose debug lines are ours, and never hold what people said (tests read a
#: debug log for it). Libraries' debug lines may (sse_starlette logs every event it
#: sends, MCP answers with memory content included; the openai client logs request
#: bodies), so they stay at info unless ``content`` asks, and are then marked.
_OURS = ("memoryd", "uvicorn")
CONTENT_FIELD = "mayHoldContent"


class _ContentMark(logging.Filter):
    """Marks a library's record: it may hold memory content or message text."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".")[0] not in _OURS:
            setattr(record, CONTENT_FIELD, True)
        return True


def configure_logging(
    level: str = "info",
    json_lines: bool | None = None,
    *,
    stream: IO[str] | None = None,
    content: bool = False,
) -> logging.Handler:
    """Route every logger (memoryd, uvicorn, libraries) through one redacting handler
    on the root logger. ``json_lines=None``: JSON unless ``stream`` is a TTY.
    ``content`` (``MEMORYD_LOG_CONTENT``): libraries log at ``level`` too, their lines
    marked ``mayHoldContent``; else they stop at info. Idempotent: a handler installed
    by an earlier call is replaced."""
    stream = sys.stderr if stream is None else stream
    if json_lines is None:
        isatty = getattr(stream, "isatty", None)
        json_lines = not (callable(isatty) and isatty())
    numeric = logging.getLevelName(level.strip().upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level: {level!r}")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(RedactionFilter())
    if content:
        handler.addFilter(_ContentMark())
    setattr(handler, _HANDLER_MARK, True)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, _HANDLER_MARK, False):
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric if content else max(numeric, logging.INFO))
    for name in _OURS:
        logging.getLogger(name).setLevel(numeric)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # uvicorn configures nothing with log_config=None; keep its loggers propagating.
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    return handler


# -- the middleware ----------------------------------------------------------------------


def _incoming_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            try:
                text = value.decode("ascii").strip()
            except UnicodeDecodeError:
                return None
            # an id that looks like a secret is replaced, so no log line carries it
            return text if _SANE_ID.match(text) and redact(text) == text else None
    return None


class RequestLoggingMiddleware:
    def __init__(self, app: ASGIApp, logger: logging.Logger = access_log) -> None:
        self.app = app
        self.log = logger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _incoming_id(scope) or secrets.token_hex(16)
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        token = request_id_var.set(request_id)
        root_path = str(scope.get("root_path", ""))
        start = time.perf_counter()
        status = 500

        upstream_id: str | None = None

        async def send_wrapper(message: Message) -> None:
            nonlocal status, upstream_id
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = MutableHeaders(scope=message)
                # A relayed provider answer keeps the provider's id (the one its support
                # asks for, and the SDKs read); ours is always in x-memoryd-request-id.
                upstream_id = headers.get(REQUEST_ID_HEADER)
                if upstream_id is None:
                    headers[REQUEST_ID_HEADER] = request_id
                headers[OWN_REQUEST_ID_HEADER] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            elapsed_ms = (time.perf_counter() - start) * 1000
            if self.log.isEnabledFor(logging.INFO):
                self._access_line(scope, root_path, request_id, status, elapsed_ms, upstream_id)
            request_id_var.reset(token)

    def _access_line(
        self,
        scope: Scope,
        root_path: str,
        request_id: str,
        status: int,
        elapsed_ms: float,
        upstream_id: str | None = None,
    ) -> None:
        """One access line, masked here once: the client-controlled fields (method and
        path) are redacted, the rest are numbers and our own tokens, so the filter and
        the formatter need not mask the record again (a regex pass per field and per
        line was ~5% of a proxied request's CPU)."""
        method = str(scope.get("method", ""))
        if method not in _METHODS:
            method = redact(method)
        path = _masked_path(str(scope.get("path", "")))
        fields = {
            "request_id": request_id,
            "method": method,
            "path": path,
            "route": _masked_path(route_template(scope, root_path)),
            "status": status,
            "duration_ms": round(elapsed_ms, 3),
        }
        if upstream_id is not None:  # the provider's own id, for its support
            fields["upstream_request_id"] = redact(upstream_id[:128])
        message = f"{method} {path} {status} {elapsed_ms:.1f}ms"
        handler = _direct_handler(self.log)
        if handler is not None and _write_direct(handler, self.log.name, message, fields):
            return
        self.log.info("%s", message, extra={**fields, _CLEAN: True})


def _direct_handler(logger: logging.Logger) -> logging.StreamHandler[Any] | None:
    """The handler ``configure_logging`` installed, when it is the only place the
    access line would go (no handler or filter of anyone else's on the way, JSON
    lines): then the line is written as its formatter would write it, without a
    ``LogRecord``, the caller lookup and the filter pass (70 against 25 us a line)."""
    current: logging.Logger | None = logger
    found: logging.Handler | None = None
    while current is not None:
        if current.filters or current.disabled:
            return None
        for handler in current.handlers:
            if found is not None or not getattr(handler, _HANDLER_MARK, False):
                return None
            found = handler
        if not current.propagate:
            break
        current = current.parent
    if (
        isinstance(found, logging.StreamHandler)
        and type(found.formatter) is JsonFormatter
        and found.level <= logging.INFO
        and all(type(f) is RedactionFilter for f in found.filters)
    ):
        return found
    return None


def _write_direct(
    handler: logging.StreamHandler[Any], name: str, message: str, fields: dict[str, Any]
) -> bool:
    """One JSON line, field for field what ``JsonFormatter`` writes for the access
    record; False (the caller logs it the usual way) if the stream fails."""
    payload = _json_head(time.time(), "info", name, message, fields["request_id"]) | fields
    line = json.dumps(payload, ensure_ascii=False, default=str) + handler.terminator
    with handler.lock or contextlib.nullcontext():
        try:
            handler.stream.write(line)
            handler.flush()
        except (OSError, ValueError):  # a closed or broken stream: logging reports it
            return False
    return True


def install_request_logging(app: FastAPI) -> None:
    app.add_middleware(RequestLoggingMiddleware)
