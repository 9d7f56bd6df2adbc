"""A store's write fault (disk full, database gone) and the ``storage`` block of engine
status: what every backend reports the same way (``storage.base`` re-exports both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class StorageFault:
    code: str  # storage_full | storage_unavailable
    message: str
    since: str  # ISO-8601 UTC, when this fault began

    @property
    def reason(self) -> str:
        return f"{self.code}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "since": self.since}


def fault_status(fault: StorageFault | None, **facts: Any) -> dict[str, Any]:
    """The ``storage`` block of engine status: whether writes work, plus what the
    backend adds (its name, version, pool)."""
    if fault is None:
        return {"available": True, "fault": None, "since": None, "reason": "writes work"} | facts
    return {
        "available": False,
        "fault": fault.code,
        "since": fault.since,
        "reason": fault.reason,
    } | facts
