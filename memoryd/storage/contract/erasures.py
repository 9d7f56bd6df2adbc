"""Receipts of erased subjects: who was erased, when and how much went where, never
what; a request that began before an erasure must not write its subject back."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from memoryd.models import Erasure


class ErasureReads(Protocol):
    def erasures(self, owner: str | None, limit: int) -> list[Erasure]: ...
    def erased_since(self, owner: str, user_id: str, since: datetime) -> bool: ...


class ErasureWrites(Protocol):
    def record_erasure(self, erasure: Erasure) -> None: ...
