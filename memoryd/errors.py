"""The memoryd error hierarchy.

Every error the engine raises on purpose carries an HTTP status and a stable machine
code, so each interface (REST, gateway, MCP, CLI) renders it the same way without
guessing from message text::

    MemorydError                 500 internal
    ├── ValidationError          400 invalid_request   (bad input; ``details`` lists fields)
    ├── NotFoundError            404 not_found
    ├── AuthError                401 unauthorized
    ├── ConflictError            409 conflict
    ├── PayloadTooLargeError     413 payload_too_large
    └── UnavailableError         503 unavailable       (a dependency is down or missing)
        ├── StorageFullError     507 storage_full      (the disk under the database is full)
        └── StorageUnavailableError 503 storage_unavailable (I/O error under the database)
"""

from __future__ import annotations

from typing import Any


class MemorydError(Exception):
    status: int = 500
    code: str = "internal"

    def __init__(self, message: str, *, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: list[dict[str, Any]] = details or []

    def to_dict(self) -> dict[str, Any]:
        """The one JSON error shape (docs/design/interfaces.md#one-error-shape)."""
        return {"error": {"message": self.message, "code": self.code, "details": self.details}}


class ValidationError(MemorydError):
    status = 400
    code = "invalid_request"


class NotFoundError(MemorydError):
    status = 404
    code = "not_found"


class AuthError(MemorydError):
    status = 401
    code = "unauthorized"


class ConflictError(MemorydError):
    status = 409
    code = "conflict"


class PayloadTooLargeError(MemorydError):
    status = 413
    code = "payload_too_large"


class UnavailableError(MemorydError):
    status = 503
    code = "unavailable"


class StorageFullError(UnavailableError):
    """SQLITE_FULL: the write was not stored; reads still work and writes resume by
    themselves once there is space again."""

    status = 507
    code = "storage_full"


class StorageUnavailableError(UnavailableError):
    """An I/O error (or a read-only / unopenable file) under the database."""

    code = "storage_unavailable"


def field_error(field: str, message: str) -> ValidationError:
    """A ValidationError about one named field, with the detail row interfaces show."""
    return ValidationError(f"{field}: {message}", details=[{"field": field, "message": message}])
