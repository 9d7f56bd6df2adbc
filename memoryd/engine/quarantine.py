"""Messages the guard held for review (``quarantineGuarded``).

With the setting off (the default) a message that steers the assistant (an override,
a role marker, a request for credentials, see ``core.extraction.guard``) is dropped
and counted. With it on, the message is kept in the store's ``quarantine`` table,
never read by retrieval, until an admin releases it (it is then extracted as if the
guard had let it pass) or discards it; an erasure of its subject removes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from memoryd.errors import NotFoundError
from memoryd.models import Held, Reconciled

if TYPE_CHECKING:
    from memoryd.engine.extraction_jobs import ExtractionJobs
    from memoryd.storage.base import Store


class QuarantineHost(Protocol):
    """What this module needs of the engine (``MemoryEngine`` is one)."""

    store: Store
    extraction: ExtractionJobs


#: Held messages listed at most per call.
MAX_LISTED = 1000


def listed(
    engine: QuarantineHost, owner: str | None, user_id: str | None, limit: int = 100
) -> list[Held]:
    """Newest first: of a key (every key's when None), of one end user of it."""
    return engine.store.read().held(owner, user_id, max(1, min(limit, MAX_LISTED)))


def _one(engine: QuarantineHost, held_id: int, owner: str | None) -> Held:
    """The held message; a NotFoundError when unknown or another key's (``owner``)."""
    held = engine.store.read().held_one(held_id)
    if held is None or (owner is not None and held.api_key_id != owner):
        raise NotFoundError(f"no held message with id {held_id}")
    return held


def release(engine: QuarantineHost, held_id: int, owner: str | None = None) -> list[Reconciled]:
    """Extract the message, then take it out of quarantine (a failed extraction leaves
    it held); what was stored. An erasure of its subject since it was said stores
    nothing (and took the held row with it)."""
    held = _one(engine, held_id, owner)
    stored = engine.extraction.release(held)
    engine.store.write(lambda tx: tx.unhold(held_id))
    return stored


def discard(engine: QuarantineHost, held_id: int, owner: str | None = None) -> Held:
    """Delete the held message unread by extraction; what it was."""
    _one(engine, held_id, owner)
    held = engine.store.write(lambda tx: tx.unhold(held_id))
    if held is None:
        raise NotFoundError(f"no held message with id {held_id}")
    engine.store.scrub()  # the message may say what its writer must not keep
    return held
