"""Erasure of a subject: one end user of a key, or a whole key's memories,
gone from every place memoryd keeps them, with a receipt that says so.

One transaction removes the subject's memories (current and superseded: history is
rows), and with them their keyword-index entries and in-store vectors (the store's
triggers), the context text their neighbours carried (``storage.sql.context``), the
extraction jobs queued for the subject and the messages held for review (the raw
messages), and records the receipt.
After the commit the engine tells its listeners (the read cache, resident vectors, the
Qdrant tier's outbox, which deletes the points: the call waits for it), merges the
keyword index and has the store scrub its files (SQLite zeroes deleted content,
``secure_delete``, and truncates its write-ahead log). An extraction job that started
before the erasure stores nothing after it (``ExtractionJobs.run`` asks
``erased_since``). The receipt holds counts, never content.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Protocol, cast

from memoryd.core.ids import MAX_NAMED_CHARS, bounded_id
from memoryd.errors import ValidationError
from memoryd.models import Erasure, utcnow
from memoryd.storage.base import Clearing, Deleted

if TYPE_CHECKING:
    from memoryd.engine.lifecycle import LifecycleHost
    from memoryd.engine.retrieval import Retriever
    from memoryd.storage.base import Store, Writer
    from memoryd.vectors.base import ExternalTier

log = logging.getLogger("memoryd.erasure")

#: Receipts listed at most per call.
MAX_LISTED = 1000
#: Seconds an erasure waits for the Qdrant tier to delete the points (it keeps trying
#: after, from its outbox).
QDRANT_WAIT_S = 10.0


class ErasureHost(Protocol):
    qdrant: ExternalTier
    retriever: Retriever
    store: Store

    def notify_deleted(self, removed: list[Deleted]) -> None: ...


def forget(engine: LifecycleHost, owner: str, user_id: str | None) -> Erasure:
    """Erase ``owner``'s end user ``user_id`` ("" the key's shared memories), or every
    memory of the key (``None``); the receipt."""
    if user_id is not None:  # the id as the gateway stored it (a long one is a digest)
        if len(user_id) > MAX_NAMED_CHARS:
            raise ValidationError(f"userId: at most {MAX_NAMED_CHARS} characters")
        user_id = bounded_id(user_id.strip())
    receipt_id = "er_" + secrets.token_urlsafe(12)

    def erase(tx: Writer) -> tuple[list[Deleted], Erasure]:
        now = utcnow()
        removed = tx.delete_matching(Clearing(owner, user_id=user_id))
        jobs = tx.drop_queued_extractions(owner, user_id)
        held = tx.drop_held(owner, user_id)
        counts = {"memories": len(removed), "extractionJobs": jobs, "heldMessages": held}
        erasure = Erasure(receipt_id, owner, user_id, now, counts)
        tx.record_erasure(erasure)
        return removed, erasure

    removed, erasure = engine.store.write(erase)
    if removed or _jobs_or_held(erasure):  # those rows held the messages
        try:  # committed: what follows is best effort, and the receipt stands
            _after(cast("ErasureHost", engine), removed, erasure)
        except Exception:
            log.exception("erasure %s: committed, but a clean-up step failed", erasure.id)
    log.info(
        "erased %s of key %s: %d memories, %d queued jobs (receipt %s)",
        "every end user" if user_id is None else "one end user",
        owner,
        len(removed),
        erasure.counts["extractionJobs"],
        erasure.id,
    )
    return erasure


def _jobs_or_held(erasure: Erasure) -> bool:
    return bool(erasure.counts["extractionJobs"] or erasure.counts["heldMessages"])


def _after(engine: ErasureHost, removed: list[Deleted], erasure: Erasure) -> None:
    """Caches and tiers told, the keyword index merged, the files scrubbed, and the
    Qdrant tier given time to delete the points."""
    if removed:
        engine.notify_deleted(removed)  # the read cache, resident vectors, Qdrant outbox
    engine.retriever.forget_subjects()  # names seen in the erased memories
    engine.retriever.forget_texts()  # recent messages and questions the embedders kept
    engine.store.write(lambda tx: tx.optimize_keyword_index())
    engine.store.scrub()
    tier = engine.qdrant
    if tier.config().enabled and not tier.join(QDRANT_WAIT_S):
        log.warning("erasure %s: Qdrant has not deleted every point yet", erasure.id)


def receipts(engine: LifecycleHost, owner: str | None, limit: int = 100) -> list[Erasure]:
    """Newest first; every key's when ``owner`` is None (admin)."""
    return engine.store.read().erasures(owner, max(1, min(limit, MAX_LISTED)))
