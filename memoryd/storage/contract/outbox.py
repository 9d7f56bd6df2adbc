"""The external vector tier's durable to-do list: memories whose payload or vector it
lacks, and ids it must drop. Kept by the store itself (triggers, or the same
transaction), so no write can slip past it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """A memory the tier must (re)write, with what its payload and vectors need. Times
    are the ISO strings as stored; ``gen`` moves when the memory changes again, so a
    push that raced an edit is not marked done."""

    seq: int
    gen: int
    id: str
    owner: str
    session_id: str | None
    type: str
    key: str
    content: str
    created_at: str
    expires_at: str | None
    #: Both views' vectors as float32 bytes, or None (none yet, or int8-quantized).
    emb: bytes | None
    ctx_emb: bytes | None
    #: The context view's text, embedded again when its blob cannot be used.
    ctx_text: str | None


class OutboxReads(Protocol):
    def outbox_ready(self) -> bool: ...
    def outbox_exists(self) -> bool: ...
    def outbox_pending(self) -> int: ...
    def outbox_pushable(self) -> int:
        """Pending rows whose vector is ready (not waiting for embedding)."""
        ...

    def outbox_rows(self, after: int, limit: int) -> list[OutboxRow]:
        """Pushable rows with ``seq > after`` in ``seq`` order."""
        ...

    def outbox_tombstones(self, limit: int) -> list[str]: ...


class OutboxWrites(Protocol):
    def create_outbox(self) -> None:
        """Create the to-do list if missing (idempotent)."""
        ...

    def outbox_queue_all(self) -> int:
        """Queue every memory again and forget tombstones (the backend starts empty)."""
        ...

    def outbox_done(self, done: Sequence[tuple[int, int]]) -> None:
        """Clear pushed ``(seq, gen)`` rows; a row whose ``gen`` moved stays."""
        ...

    def outbox_drop_tombstones(self, memory_ids: Sequence[str]) -> None: ...
