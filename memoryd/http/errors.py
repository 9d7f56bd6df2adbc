"""One JSON error shape for every failure (docs/design/interfaces.md#one-error-shape),
and no tracebacks, ever.

``{"error": {"message": ..., "code": ..., "details": [...]}}``: engine errors carry
their status and code; FastAPI's request validation becomes 400 ``invalid_request``
with one detail per problem (422 is not used); unknown routes and methods keep their
404/405; storage faults are 507 ``storage_full`` / 503 ``storage_unavailable``,
whether a write or a read hit them; anything unexpected is a 500 with a request id and
nothing else. Under the gateway's ``/v1/`` every one of them comes in the client's own
wire shape (OpenAI's, or Anthropic's under ``/v1/messages``), so an SDK that calls a
route we lack (``/v1/messages/batches``) raises its own error with our message.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from memoryd.core.wire_errors import gateway_error
from memoryd.errors import MemorydError
from memoryd.storage.base import driver_errors, storage_error

log = logging.getLogger("memoryd.api")

_HTTP_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def error_body(
    message: str, code: str, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "code": code, "details": details or []}}


def _location(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("body", "query")`` -> ``query``: only the leading where-it-came-from part goes
    (a body field named "query" was reported as "body")."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def _validation_details(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    details = []
    for err in exc.errors():
        kind = err.get("type", "")
        field = _location(err.get("loc", ()))
        if kind == "json_invalid":
            return "request body is not valid JSON", [{"field": "body", "message": "invalid JSON"}]
        message = "unknown field" if kind == "extra_forbidden" else str(err.get("msg", "invalid"))
        details.append({"field": field, "message": message})
    summary = "; ".join(f"{d['field']}: {d['message']}" for d in details[:5])
    return f"invalid request: {summary}", details


def _not_json(request: Request, exc: RequestValidationError) -> bool:
    """A JSON body sent without a JSON content type: FastAPI then reads it as text and
    says "Input should be a valid dictionary", which names neither cause nor fix."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json" or kind.endswith("+json"):
        return False
    return any(
        tuple(err.get("loc", ())) == ("body",)
        and err.get("type") in ("model_attributes_type", "dict_type", "list_type")
        for err in exc.errors()
    )


#: OpenAI's error ``type`` for a status we answer under ``/v1/`` ourselves.
_OPENAI_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}


def _shaped(
    request: Request,
    status: int,
    message: str,
    code: str,
    details: list[dict[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """Our error shape, or the client's wire shape under the gateway's ``/v1/``."""
    path = request.url.path
    if path.startswith("/v1/"):
        kind = (
            "server_error" if status >= 500 else _OPENAI_TYPES.get(status, "invalid_request_error")
        )
        body = gateway_error(path, status, message, kind, code)
    else:
        body = error_body(message, code, details)
    return JSONResponse(body, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    async def memoryd_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, MemorydError)
        headers = getattr(exc, "headers", None)  # a 429's retry-after
        return _shaped(request, exc.status, exc.message, exc.code, exc.details, headers)

    async def validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        if _not_json(request, exc):
            message = (
                "the body must be JSON sent with the header Content-Type: application/json "
                f"(this request's is {request.headers.get('content-type') or 'missing'})"
            )
            details = [{"field": "body", "message": "not sent as JSON"}]
            return _shaped(request, 400, message, "invalid_request", details)
        message, details = _validation_details(exc)
        return _shaped(request, 400, message, "invalid_request", details)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _HTTP_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        if exc.status_code in (404, 405) and request.url.path.startswith("/v1/"):
            message = f"{message}: {request.method} {request.url.path}"
        return _shaped(request, exc.status_code, message, code, headers=exc.headers)

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        request_id = getattr(request.state, "request_id", None)
        log.error("unhandled error", exc_info=exc, extra={"request_id": request_id})
        message = "internal error" + (f" (request id {request_id})" if request_id else "")
        return _shaped(request, 500, message, "internal")

    async def driver_error(request: Request, exc: Exception) -> JSONResponse:
        err = storage_error(exc)
        if err is None:
            return await unexpected(request, exc)
        log.error("storage fault: %s (%s)", err.message, exc)
        return _shaped(request, err.status, err.message, err.code)

    async def client_gone(request: Request, exc: Exception) -> JSONResponse:
        # The client disconnected (or timed out) before its body arrived: nobody will
        # read an answer, and an abandoned upload is not an error of ours to log.
        log.info("client disconnected before its request body was read")
        return JSONResponse(error_body("client disconnected", "client_closed"), status_code=400)

    app.add_exception_handler(ClientDisconnect, client_gone)
    app.add_exception_handler(MemorydError, memoryd_error)
    for error in driver_errors():  # the loaded storage backends' driver errors
        app.add_exception_handler(error, driver_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)
