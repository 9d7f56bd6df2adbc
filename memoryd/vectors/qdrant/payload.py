"""Qdrant payloads, point ids, filters' terms and small helpers (pure, no client)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from memoryd.models import Memory, parse_iso, utcnow
from memoryd.storage.base import Filter, OutboxRow
from memoryd.vectors.base import VectorItem

KIND = "memoryd_memory"
UPSERT_BATCH = 256
#: Seconds a request to a Qdrant server may take (searches, upserts, deletes).
TIMEOUT_S = 5
#: Namespace for point ids of memories whose id is not a UUID (imports may bring any id).
_ID_NAMESPACE = uuid.UUID("6f1f3c52-0d55-4b8e-9a43-2f9c1d5b7e10")


class QdrantUnavailable(RuntimeError):
    """Qdrant cannot be used right now (not configured, not installed, unreachable)."""


def qdrant_client_installed() -> bool:
    try:
        import qdrant_client  # noqa: F401
    except ImportError:
        return False
    return True


# -- pure helpers shared with the Qdrant Edge backend -----------------------------------


def point_id(memory_id: str) -> str:
    """The point id of a memory: its id when that is a UUID, else a stable UUID5."""
    try:
        return str(uuid.UUID(memory_id))
    except (ValueError, AttributeError, TypeError):
        return str(uuid.uuid5(_ID_NAMESPACE, str(memory_id)))


def unix(moment: datetime | None) -> float | None:
    return None if moment is None else round(moment.timestamp(), 3)


def payload(
    *,
    memory_id: str,
    owner: str,
    session_id: str,
    type: str,
    key: str,
    content: str,
    created_at: datetime,
    expires_at: datetime | None,
) -> dict[str, Any]:
    """The point payload (docs/design/vectors.md#qdrant)."""
    return {
        "kind": KIND,
        "memoryId": memory_id,
        "apiKeyId": owner,
        "sessionId": session_id,
        "type": type,
        "key": key,
        "content": content,
        "createdAtUnix": unix(created_at),
        "expiresAtUnix": unix(expires_at),
    }


def memory_payload(memory: Memory) -> dict[str, Any]:
    return payload(
        memory_id=memory.id,
        owner=memory.api_key_id,
        session_id=memory.session_id,
        type=memory.type.value,
        key=memory.key,
        content=memory.content,
        created_at=memory.created_at,
        expires_at=memory.expires_at,
    )


def row_payload(row: OutboxRow) -> dict[str, Any]:
    """Payload of an outbox row (its times are ISO strings as stored)."""
    return payload(
        memory_id=row.id,
        owner=row.owner,
        session_id=row.session_id or "",
        type=row.type,
        key=row.key,
        content=row.content,
        created_at=parse_iso(row.created_at),
        expires_at=parse_iso(row.expires_at) if row.expires_at else None,
    )


def item_payload(item: VectorItem) -> dict[str, Any]:
    """The item's payload with the fields every search filters on always present."""
    base = dict(item.payload or {})
    base.update(kind=KIND, memoryId=item.memory_id, apiKeyId=item.owner)
    base.setdefault("expiresAtUnix", None)
    return base


@dataclass(frozen=True, slots=True)
class Terms:
    """A retrieval ``Filter`` in payload terms (unix seconds)."""

    owners: tuple[str, ...] | None
    now: float
    session_id: str | None
    type: str | None
    created_after: float | None

    @classmethod
    def of(cls, flt: Filter) -> Terms:
        return cls(
            owners=flt.owners,
            now=flt.now.timestamp(),
            session_id=flt.session_id,
            type=flt.type.value if flt.type is not None else None,
            created_after=flt.created_after.timestamp() if flt.created_after else None,
        )


def cleanup_cutoffs(retention_days: int, now: datetime | None = None) -> tuple[float, float]:
    """``(now, created_before)``: points expired before ``now`` or created before the
    cut-off go. Retention is clamped to 1..3650 days (reference)."""
    moment = now or utcnow()
    days = max(1, min(3650, int(retention_days)))
    return moment.timestamp(), (moment - timedelta(days=days)).timestamp()


def check_dims(items: Sequence[VectorItem], dim: int | None) -> list[list[float]]:
    vectors = []
    for item in items:
        vector = np.asarray(item.vector, dtype=np.float32)
        if dim is not None and vector.shape[0] != dim:
            raise ValueError(f"vector has {vector.shape[0]} dims, store expects {dim}")
        vectors.append(vector.tolist())
    return vectors


def clamp_score(score: float) -> float:
    return max(-1.0, min(1.0, float(score)))


def guard_reason(collection: str, size: int, dim: int, signature: str) -> str:
    return (
        f"dimension guard: Qdrant collection {collection!r} holds {size}-d vectors but the "
        f"active embedder ({signature}) makes {dim}-d vectors, so memoryd neither writes nor "
        f"searches it. Fix: set a new collection name (e.g. {collection}_{dim}) in "
        "PUT /api/settings/qdrant; memoryd creates it and backfills every memory."
    )


def ms_since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


# -- the qdrant-client backend -----------------------------------------------------------
