"""Messages the guard refused, held for review; an erasure of their subject drops
them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memoryd.models import Held


@dataclass(frozen=True, slots=True)
class NewHeld:
    """A message to hold for review (``Held`` without its id)."""

    api_key_id: str
    user_id: str
    session_id: str
    text: str
    source: str
    reason: str
    said_at: datetime
    request_id: str | None = None


class HeldReads(Protocol):
    def held(self, owner: str | None, user_id: str | None, limit: int) -> list[Held]:
        """Newest first: of ``owner`` (every key's when None), of one end user of it
        (every end user's when None)."""
        ...

    def held_one(self, held_id: int) -> Held | None: ...


class HeldWrites(Protocol):
    def hold(self, item: NewHeld) -> int:
        """The held message's id."""
        ...

    def unhold(self, held_id: int) -> Held | None:
        """Delete one held message; what it was (None: unknown)."""
        ...

    def drop_held(self, owner: str, user_id: str | None) -> int:
        """Delete the subject's held messages (an erasure); how many."""
        ...
