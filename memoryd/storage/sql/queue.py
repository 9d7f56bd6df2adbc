"""SQL for ``extraction_queue``: extraction jobs, durable from the gateway's answer
until their facts are stored (``memoryd.engine.extraction_jobs``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memoryd.models import parse_iso, to_iso
from memoryd.storage.contract.queue import Lease, NewJob, QueuedJob

_READ = "id, api_key_id, session_id, texts, user_id, said_at, request_id"


def queue_extraction(conn: Any, job: NewJob) -> int:
    rows = conn.execute(
        "INSERT INTO extraction_queue (api_key_id, session_id, texts, created_at, user_id, "
        "claimed_by, claimed_until, said_at, request_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            job.owner,
            job.session_id,
            json.dumps([list(t) for t in job.texts]),
            to_iso(job.created_at),
            job.user_id,
            job.claimed_by,
            to_iso(job.claimed_until) if job.claimed_until else None,
            to_iso(job.said_at) if job.said_at else None,
            job.request_id,
        ),
    )
    return int(next(iter(rows))[0])


def unqueue_extraction(conn: Any, job_id: int) -> None:
    conn.execute("DELETE FROM extraction_queue WHERE id = ?", (job_id,))


def release_extractions(conn: Any, worker: str, keep: Sequence[int] = ()) -> int:
    """Give back every job ``worker`` holds but ``keep`` (a server stopping before it
    ran them; the one still running keeps its lease, so nobody runs it twice)."""
    marks = "".join(" AND id <> ?" for _ in keep)
    rows = conn.execute(
        "UPDATE extraction_queue SET claimed_by = NULL, claimed_until = NULL "
        f"WHERE claimed_by = ?{marks} RETURNING id",
        (worker, *keep),
    )
    return len(list(rows))


def queued_extractions(conn: Any) -> list[QueuedJob]:
    """Jobs queued and never finished, oldest first."""
    return _jobs(conn.execute(f"SELECT {_READ} FROM extraction_queue ORDER BY id"))


def claim_extractions(
    conn: Any, worker: str, now: datetime, until: datetime, limit: int
) -> list[QueuedJob]:
    """Jobs nobody holds, never ``worker``'s own: a live server's jobs are in its
    memory, waiting their turn even when that outlasts their lease. The lease predicate
    stands in the outer WHERE too: on PostgreSQL a second server's UPDATE that waited on
    the first's row lock re-checks it and skips the row, so a job is claimed once
    (SQLite has one writer)."""
    free = (
        "(claimed_until IS NULL OR claimed_until < ?) AND (claimed_by IS NULL OR claimed_by <> ?)"
    )
    stamp = to_iso(now)
    rows = conn.execute(
        f"UPDATE extraction_queue SET claimed_by = ?, claimed_until = ? WHERE {free} "
        f"AND id IN (SELECT id FROM extraction_queue WHERE {free} ORDER BY id LIMIT ?) "
        f"RETURNING {_READ}",
        (worker, to_iso(until), stamp, worker, stamp, worker, limit),
    )
    return sorted(_jobs(rows), key=lambda job: job.id)


def lease_of(conn: Any, job_id: int) -> Lease | None:
    for by, until in conn.execute(
        "SELECT claimed_by, claimed_until FROM extraction_queue WHERE id = ?", (job_id,)
    ):
        return Lease(by, parse_iso(until) if until else None)
    return None


def _jobs(rows: Any) -> list[QueuedJob]:
    jobs = []
    for job_id, owner, session_id, raw, user_id, said_at, request_id in rows:
        try:
            texts = [(str(t), str(s)) for t, s in json.loads(raw)]
        except (ValueError, TypeError):
            texts = []  # unreadable: dropped by the caller
        try:
            said = parse_iso(str(said_at)) if said_at else None
        except ValueError:
            said = None
        jobs.append(
            QueuedJob(
                int(job_id),
                str(owner),
                str(session_id),
                texts,
                str(user_id or ""),
                said,
                str(request_id) if request_id else None,
            )
        )
    return jobs


def drop_queued(conn: Any, owner: str, user_id: str | None) -> int:
    """Delete the queued jobs of ``owner`` (of one end user of it): an erasure takes
    the raw messages they hold."""
    where, params = "api_key_id = ?", [owner]
    if user_id is not None:
        where += " AND user_id = ?"
        params.append(user_id)
    return len(
        list(conn.execute(f"DELETE FROM extraction_queue WHERE {where} RETURNING id", params))
    )
