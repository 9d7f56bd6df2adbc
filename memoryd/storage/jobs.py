"""The store's per-subject work beside the memories: extraction jobs and
where their words were said, messages the guard held for review, erasure receipts.

Split from ``base`` (which re-exports ``NewJob`` and ``QueuedJob``); every part is
something an erasure of a subject must reach."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

from memoryd.models import Erasure, Held


@dataclass(frozen=True, slots=True)
class NewJob:
    """An extraction job: the turn's ``(text, source)`` pairs of one owner's session."""

    owner: str
    session_id: str
    texts: Sequence[tuple[str, str]]
    created_at: datetime
    user_id: str = ""
    #: The server that runs it, and until when it holds the job (None: anyone may).
    claimed_by: str | None = None
    claimed_until: datetime | None = None
    #: When the words were said (the request's start) and the request's id: a job
    #: deferred to the table is still dropped by a later erasure of its subject.
    said_at: datetime | None = None
    request_id: str | None = None


class QueuedJob(NamedTuple):
    """A queued extraction job as read back (``said_at`` None: a job queued before
    migration 0018, or without an origin)."""

    id: int
    owner: str
    session_id: str
    texts: list[tuple[str, str]]
    user_id: str
    said_at: datetime | None = None
    request_id: str | None = None


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


class ErasureReads(Protocol):
    def erasures(self, owner: str | None, limit: int) -> list[Erasure]: ...
    def erased_since(self, owner: str, user_id: str, since: datetime) -> bool: ...


class ErasureWrites(Protocol):
    def record_erasure(self, erasure: Erasure) -> None: ...


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
