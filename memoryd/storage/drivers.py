"""Driver errors of the loaded backends: each backend registers its driver's error base
on import, so interfaces map storage failures to memoryd errors without importing it."""

from __future__ import annotations

from collections.abc import Callable

from memoryd.errors import UnavailableError

__all__ = ["driver_errors", "register_driver", "storage_error"]

#: Per loaded backend: its driver's error base and the function that turns a storage
#: failure (disk full, I/O) into ``StorageFullError`` / ``StorageUnavailableError``.
_DRIVERS: dict[type[Exception], Callable[[BaseException], UnavailableError | None]] = {}


def register_driver(
    error: type[Exception], translate: Callable[[BaseException], UnavailableError | None]
) -> None:
    """Called by a backend module on import, so interfaces can map its errors without
    importing it."""
    _DRIVERS[error] = translate


def driver_errors() -> tuple[type[Exception], ...]:
    return tuple(_DRIVERS)


def storage_error(exc: BaseException) -> UnavailableError | None:
    """The memoryd error for a storage failure of any loaded backend; None otherwise."""
    for error, translate in _DRIVERS.items():
        if isinstance(exc, error):
            return translate(exc)
    return None
