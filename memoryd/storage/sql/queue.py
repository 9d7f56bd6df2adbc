"""SQL for ``extraction_queue``: extraction jobs, durable from the gateway's answer
until their facts are stored (``memoryd.engine.extraction_jobs``)."""

from __future__ import annotations

import json
from typing import Any

from memoryd.models import to_iso
from memoryd.storage.base import NewJob


def queue_extraction(conn: Any, job: NewJob) -> int:
    rows = conn.execute(
        "INSERT INTO extraction_queue (api_key_id, session_id, texts, created_at, user_id) "
        "VALUES (?, ?, ?, ?, ?) RETURNING id",
        (
            job.owner,
            job.session_id,
            json.dumps([list(t) for t in job.texts]),
            to_iso(job.created_at),
            job.user_id,
        ),
    )
    return int(next(iter(rows))[0])


def unqueue_extraction(conn: Any, job_id: int) -> None:
    conn.execute("DELETE FROM extraction_queue WHERE id = ?", (job_id,))


def queued_extractions(conn: Any) -> list[tuple[int, str, str, list[tuple[str, str]], str]]:
    """Jobs a previous run queued and never finished, oldest first: ``(id, owner,
    session, texts, end user)``."""
    jobs = []
    for job_id, owner, session_id, raw, user_id in conn.execute(
        "SELECT id, api_key_id, session_id, texts, user_id FROM extraction_queue ORDER BY id"
    ):
        try:
            texts = [(str(t), str(s)) for t, s in json.loads(raw)]
        except (ValueError, TypeError):
            texts = []  # unreadable: dropped by the caller
        jobs.append((int(job_id), str(owner), str(session_id), texts, str(user_id or "")))
    return jobs
