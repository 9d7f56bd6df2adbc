"""Tier 2: Qdrant through ``qdrant-client`` (SPEC §7), a server or the embedded local mode.

``QdrantStore`` implements the vector-store contract of ``vectors.base`` against one
collection: created on first use with the embedder's real vector size and Cosine
distance (plus payload indexes on a server), quantization ``none``/``int8``/``binary``
fixed at creation (an existing collection is never altered), point id = the memory id
(a UUID; any other id maps to a stable UUID5 and the payload keeps the real one).
Every search filters on ``kind`` and the owners (``apiKeyId``), plus the session, the
type and the retention cut-off when asked, and drops expired points.

Dimension guard: a collection whose vector size differs from the active embedder is
never written or searched; ``ensure_ready`` says so and names the fix (a new
collection name). Health is ``GET /readyz`` on a server and a collection listing in
local mode, both with latency.

``qdrant-client`` is optional (the ``qdrant`` extra): it is imported only when a store
talks to Qdrant, so this module and its pure helpers import without it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.models import Memory, parse_iso, utcnow
from memoryd.qdrant_config import QdrantConfig, quantization_config, search_quantization_params
from memoryd.storage.memories import Filter
from memoryd.vectors.base import ReadyState, VectorItem

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
    """The point payload of SPEC §7."""
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


def row_payload(row: Sequence[Any]) -> dict[str, Any]:
    """Payload from ``(id, api_key_id, session_id, type, key, content, created_at,
    expires_at)`` as stored in SQLite (ISO strings)."""
    expires = parse_iso(row[7]) if row[7] else None
    return payload(
        memory_id=row[0],
        owner=row[1],
        session_id=row[2] or "",
        type=row[3],
        key=row[4],
        content=row[5],
        created_at=parse_iso(row[6]),
        expires_at=expires,
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


class QdrantStore:
    """One collection on a Qdrant server, or in qdrant-client's embedded local mode."""

    name = "qdrant"

    def __init__(self, config: QdrantConfig, *, timeout_s: int = TIMEOUT_S) -> None:
        if config.mode == "none":
            raise QdrantUnavailable("not_configured: set a host (server) or a path (local mode)")
        self.config = config
        self.collection = config.collection
        self.local = config.mode == "local"
        self.timeout_s = timeout_s
        self._client: Any = None
        self._lock = threading.RLock()  # local mode is one SQLite file: one caller at a time
        self._dim: int | None = None
        self._vector_name: str | None = None
        self.guard: str | None = None

    # -- connection --------------------------------------------------------------------

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    def _connect(self) -> Any:
        try:
            from qdrant_client import QdrantClient
        except ImportError as exc:
            raise QdrantUnavailable(
                "qdrant-client is not installed: pip install 'memoryd[qdrant]'"
            ) from exc
        cfg = self.config
        if self.local:
            assert cfg.path is not None
            if cfg.path == ":memory:":
                return QdrantClient(location=":memory:")
            Path(cfg.path).expanduser().mkdir(parents=True, exist_ok=True)
            try:
                return QdrantClient(
                    path=str(Path(cfg.path).expanduser()), force_disable_check_same_thread=True
                )
            except RuntimeError as exc:  # "already accessed by another instance"
                raise QdrantUnavailable(f"local Qdrant storage unavailable: {exc}") from exc
        # The key goes in the ``api-key`` header ourselves: qdrant-client would warn on
        # every plain-http connection, which is the user's choice to make.
        headers = {"api-key": cfg.api_key} if cfg.api_key else None
        return QdrantClient(
            url=cfg.url, headers=headers, timeout=self.timeout_s, check_compatibility=False
        )

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            self._dim = None
        if client is not None:
            client.close()

    # -- lifecycle ---------------------------------------------------------------------

    def ensure_ready(self, signature: str, dimensions: int | None) -> ReadyState:
        if not dimensions:
            return ReadyState(False, "no dimensions available yet (learned from the first vector)")
        with self._lock:
            if self._dim == dimensions:
                return ReadyState(True, f"Qdrant collection {self.collection!r} ready")
            try:
                state = self._prepare(signature, dimensions)
            except QdrantUnavailable as exc:
                return ReadyState(False, str(exc))
            except Exception as exc:
                return ReadyState(False, f"Qdrant unavailable: {_brief(exc)}")
            return state

    def _prepare(self, signature: str, dimensions: int) -> ReadyState:
        from qdrant_client import models as qm

        client = self.client()
        created = False
        if not client.collection_exists(self.collection):
            quant = quantization_config(self.config.quantization)
            try:
                client.create_collection(
                    self.collection,
                    vectors_config=qm.VectorParams(size=dimensions, distance=qm.Distance.COSINE),
                    quantization_config=_quantization_model(quant),
                )
                created = True
            except Exception:
                if not client.collection_exists(self.collection):  # lost a creation race?
                    raise
            if created and not self.local:  # local mode has no payload indexes
                self._create_indexes(client)
        info = client.get_collection(self.collection)
        size, name = _vector_params(info.config.params.vectors)
        if size != dimensions:
            self.guard = guard_reason(self.collection, size, dimensions, signature)
            self._dim = None
            return ReadyState(False, self.guard)
        self.guard = None
        self._dim, self._vector_name = dimensions, name
        verb = "created" if created else "ready"
        return ReadyState(True, f"Qdrant collection {self.collection!r} {verb} ({dimensions}-d)")

    def _create_indexes(self, client: Any) -> None:
        from qdrant_client import models as qm

        keyword = qm.PayloadSchemaType.KEYWORD
        tenant = qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
        for field, schema in (
            ("apiKeyId", tenant),
            ("kind", keyword),
            ("sessionId", keyword),
            ("type", keyword),
            ("createdAtUnix", qm.PayloadSchemaType.FLOAT),
            ("expiresAtUnix", qm.PayloadSchemaType.FLOAT),
        ):
            client.create_payload_index(self.collection, field, field_schema=schema, wait=True)

    @property
    def dimensions(self) -> int | None:
        return self._dim

    # -- writes ------------------------------------------------------------------------

    def _vector(self, values: list[float]) -> Any:
        return {self._vector_name: values} if self._vector_name else values

    def upsert(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        from qdrant_client import models as qm

        if self._dim is None:
            raise QdrantUnavailable("Qdrant collection not ready (ensure_ready first)")
        vectors = check_dims(items, self._dim)
        points = [
            qm.PointStruct(
                id=point_id(item.memory_id), vector=self._vector(v), payload=item_payload(item)
            )
            for item, v in zip(items, vectors, strict=True)
        ]
        with self._lock:
            client = self.client()
            for start in range(0, len(points), UPSERT_BATCH):
                batch = points[start : start + UPSERT_BATCH]
                client.upsert(self.collection, points=batch, wait=True)

    def delete(self, memory_ids: Sequence[str]) -> None:
        ids = [point_id(m) for m in memory_ids]
        if not ids:
            return
        from qdrant_client import models as qm

        with self._lock:
            client = self.client()
            if not client.collection_exists(self.collection):
                return
            for start in range(0, len(ids), 1000):
                selector = qm.PointIdsList(points=list(ids[start : start + 1000]))
                client.delete(self.collection, points_selector=selector, wait=True)

    # -- reads -------------------------------------------------------------------------

    def _filter(self, terms: Terms) -> Any:
        from qdrant_client import models as qm

        must: list[Any] = [qm.FieldCondition(key="kind", match=qm.MatchValue(value=KIND))]
        if terms.owners is not None:
            owners = qm.MatchAny(any=list(terms.owners))
            must.append(qm.FieldCondition(key="apiKeyId", match=owners))
        if terms.session_id is not None:
            must.append(
                qm.FieldCondition(key="sessionId", match=qm.MatchValue(value=terms.session_id))
            )
        if terms.type is not None:
            must.append(qm.FieldCondition(key="type", match=qm.MatchValue(value=terms.type)))
        if terms.created_after is not None:
            must.append(
                qm.FieldCondition(key="createdAtUnix", range=qm.Range(gte=terms.created_after))
            )
        must.append(
            qm.Filter(
                should=[
                    qm.IsEmptyCondition(is_empty=qm.PayloadField(key="expiresAtUnix")),
                    qm.FieldCondition(key="expiresAtUnix", range=qm.Range(gt=terms.now)),
                ]
            )
        )
        return qm.Filter(must=must)

    def search(self, vector: np.ndarray, k: int, flt: Filter) -> list[tuple[str, float]]:
        return [(mid, score) for mid, score, _ in self.search_payloads(vector, k, flt, ())]

    def search_payloads(
        self, vector: np.ndarray, k: int, flt: Filter, fields: Sequence[str] | bool = ()
    ) -> list[tuple[str, float, dict[str, Any]]]:
        """``(memory_id, score, payload)`` best first; ``fields`` selects the payload
        keys to return (``True`` = all)."""
        if self._dim is None or k <= 0 or (flt.owners is not None and not flt.owners):
            return []
        from qdrant_client import models as qm

        params = None
        search = search_quantization_params(self.config.quantization)
        if search is not None and not self.local:  # local mode is exact and warns on params
            params = qm.SearchParams(quantization=qm.QuantizationSearchParams(rescore=True))
        wanted: Any = True if fields is True else ["memoryId", *list(fields or ())]
        query = np.asarray(vector, dtype=np.float32).tolist()
        with self._lock:
            result = self.client().query_points(
                self.collection,
                query=query,
                using=self._vector_name,
                limit=k,
                query_filter=self._filter(Terms.of(flt)),
                search_params=params,
                with_payload=wanted,
            )
        out = []
        for point in result.points:
            data = dict(point.payload or {})
            out.append((str(data.get("memoryId", point.id)), clamp_score(point.score), data))
        return out

    def count(self) -> int:
        from qdrant_client import models as qm

        kind = qm.Filter(must=[qm.FieldCondition(key="kind", match=qm.MatchValue(value=KIND))])
        with self._lock:
            client = self.client()
            if not client.collection_exists(self.collection):
                return 0
            return int(client.count(self.collection, count_filter=kind, exact=True).count)

    def cleanup(self, retention_days: int, now: datetime | None = None) -> int:
        """Delete points expired or created more than ``retention_days`` ago; counts
        first and returns how many went."""
        from qdrant_client import models as qm

        moment, created_before = cleanup_cutoffs(retention_days, now)
        flt = qm.Filter(
            must=[qm.FieldCondition(key="kind", match=qm.MatchValue(value=KIND))],
            should=[
                qm.FieldCondition(key="expiresAtUnix", range=qm.Range(lt=moment)),
                qm.FieldCondition(key="createdAtUnix", range=qm.Range(lt=created_before)),
            ],
        )
        with self._lock:
            client = self.client()
            if not client.collection_exists(self.collection):
                return 0
            found = int(client.count(self.collection, count_filter=flt, exact=True).count)
            if found:
                selector = qm.FilterSelector(filter=flt)
                client.delete(self.collection, points_selector=selector, wait=True)
        return found

    def memory_ids(self, batch: int = 1000) -> Iterator[list[str]]:
        """Every memory id with a point here, in pages (reconciliation)."""
        offset: Any = None
        while True:
            with self._lock:
                client = self.client()
                if not client.collection_exists(self.collection):
                    return
                records, offset = client.scroll(
                    self.collection, limit=batch, offset=offset, with_payload=["memoryId"]
                )
            ids = [str((r.payload or {}).get("memoryId", r.id)) for r in records]
            if ids:
                yield ids
            if offset is None:
                return

    def stats(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "mode": "local" if self.local else "server",
            "collection": self.collection,
            "vectorSize": self._dim,
            "quantization": self.config.quantization,
            "pointCount": self.count(),
        }

    def health(self) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            if self.local:
                with self._lock:
                    self.client().get_collections()
            else:
                self._readyz()
        except Exception as exc:
            return {"ok": False, "latencyMs": ms_since(start), "error": _brief(exc)}
        return {"ok": True, "latencyMs": ms_since(start)}

    def _readyz(self) -> None:
        import httpx

        headers = {"api-key": self.config.api_key} if self.config.api_key else {}
        response = httpx.get(f"{self.config.url}/readyz", headers=headers, timeout=self.timeout_s)
        if response.status_code != 200:
            body = response.text.strip()[:200]
            raise QdrantUnavailable(body or f"HTTP {response.status_code}")


def _vector_params(vectors: Any) -> tuple[int, str | None]:
    """``(size, name)`` of a collection's vectors: unnamed, or the first named vector."""
    if isinstance(vectors, dict):
        name = next(iter(vectors))
        return int(vectors[name].size), str(name)
    return int(vectors.size), None


def _quantization_model(config: dict[str, Any] | None) -> Any:
    if config is None:
        return None
    from qdrant_client import models as qm

    if "scalar" in config:
        return qm.ScalarQuantization.model_validate(config)
    return qm.BinaryQuantization.model_validate(config)


def _brief(exc: BaseException) -> str:
    """A one-line error message without a traceback (connection errors are verbose)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]
