"""Error bodies in each client's own wire format, so an SDK raises its own error class.

The gateway answers under ``/v1/``: OpenAI's clients (chat completions, Responses,
embeddings) expect ``{"error": {message, type, param, code}}``; Anthropic's expect
``{"type": "error", "error": {type, message}}`` with a type named by the status. Pure
functions: the gateway, the body limits and the storage-fault handler share them.
"""

from __future__ import annotations

from typing import Any

#: Paths whose clients speak Anthropic's Messages API.
ANTHROPIC_PATHS = ("/v1/messages",)

#: Anthropic's error ``type`` per HTTP status (its documented table); others map to
#: ``api_error``.
ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def speaks_anthropic(path: str) -> bool:
    """Whether a request to ``path`` comes from an Anthropic client."""
    return any(path == p or path.startswith(p + "/") for p in ANTHROPIC_PATHS)


def openai_error(message: str, type: str, code: str | None, param: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": ANTHROPIC_TYPES.get(status, "api_error"), "message": message},
    }


def gateway_error(
    path: str, status: int, message: str, type: str, code: str | None, param: str | None = None
) -> dict[str, Any]:
    """The error body for a gateway ``path`` in its client's format."""
    if speaks_anthropic(path):
        return anthropic_error(status, message)
    return openai_error(message, type, code, param)
