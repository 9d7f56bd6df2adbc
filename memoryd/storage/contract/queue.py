"""Extraction jobs: durable from the gateway's answer until their facts are stored,
leased to one server at a time, and carrying where their words were said so that a
later erasure of the subject still reaches a deferred job."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


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


@dataclass(frozen=True, slots=True)
class QueuedJob:
    """A queued extraction job as read back (``said_at`` None: a job queued before
    migration 0018, or without an origin; no ``texts``: an unreadable job)."""

    id: int
    owner: str
    session_id: str
    texts: list[tuple[str, str]]
    user_id: str
    said_at: datetime | None = None
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a queued job and until when (both None: nobody, anyone may run it)."""

    claimed_by: str | None
    claimed_until: datetime | None


class QueueReads(Protocol):
    def queued_extractions(self) -> list[QueuedJob]:
        """Jobs never finished, oldest first (an unreadable job has no texts)."""
        ...

    def lease_of(self, job_id: int) -> Lease | None:
        """The lease of a queued job; None when it is gone."""
        ...


class QueueWrites(Protocol):
    def queue_extraction(self, job: NewJob) -> int:
        """The new job's id."""
        ...

    def unqueue_extraction(self, job_id: int) -> None: ...
    def drop_queued_extractions(self, owner: str, user_id: str | None) -> int: ...
    def release_extractions(self, worker: str, keep: Sequence[int] = ()) -> int:
        """Free every job ``worker`` holds but ``keep``, for the next claimer; how many."""
        ...

    def claim_extractions(
        self, worker: str, now: datetime, until: datetime, limit: int
    ) -> list[QueuedJob]:
        """Take up to ``limit`` jobs nobody holds (never claimed, or their lease ran out
        before ``now``), oldest first, for ``worker`` until ``until``. Two servers
        claiming at once never get the same job."""
        ...
