"""Tier 2: Qdrant through ``qdrant-client`` (docs/design/vectors.md#qdrant), a server or
the embedded local mode.

``QdrantStore`` implements the vector-store contract of ``vectors.base`` against one
collection: created on first use with the embedder's real vector size and Cosine
distance (plus payload indexes on a server), quantization ``none``/``int8``/``binary``
fixed at creation (an existing collection is never altered), point id = the memory id
(a UUID; any other id maps to a stable UUID5 and the payload keeps the real one).
Every search filters on ``kind`` and the owners (``apiKeyId``), plus the session, the
type and the retention cut-off when asked, and drops expired points.

Two named vectors per point, ``memory`` and ``context`` (``views``: why both are always
declared, and how an older single-vector collection keeps working and gains the second).

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
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.config.qdrant import (
    QdrantConfig,
    quantization_config,
    search_quantization_params,
)
from memoryd.storage.base import Filter
from memoryd.vectors.base import ReadyState, VectorItem
from memoryd.vectors.qdrant import views
from memoryd.vectors.qdrant.payload import (  # re-exported for the other modules
    _ID_NAMESPACE as _ID_NAMESPACE,
)
from memoryd.vectors.qdrant.payload import (
    KIND as KIND,
)
from memoryd.vectors.qdrant.payload import (
    TIMEOUT_S as TIMEOUT_S,
)
from memoryd.vectors.qdrant.payload import (
    UPSERT_BATCH as UPSERT_BATCH,
)
from memoryd.vectors.qdrant.payload import (
    QdrantUnavailable as QdrantUnavailable,
)
from memoryd.vectors.qdrant.payload import (
    Terms as Terms,
)
from memoryd.vectors.qdrant.payload import (
    check_dims as check_dims,
)
from memoryd.vectors.qdrant.payload import (
    clamp_score as clamp_score,
)
from memoryd.vectors.qdrant.payload import (
    cleanup_cutoffs as cleanup_cutoffs,
)
from memoryd.vectors.qdrant.payload import (
    guard_reason as guard_reason,
)
from memoryd.vectors.qdrant.payload import (
    item_payload as item_payload,
)
from memoryd.vectors.qdrant.payload import (
    memory_payload as memory_payload,
)
from memoryd.vectors.qdrant.payload import (
    ms_since as ms_since,
)
from memoryd.vectors.qdrant.payload import (
    payload as payload,
)
from memoryd.vectors.qdrant.payload import (
    point_id as point_id,
)
from memoryd.vectors.qdrant.payload import (
    qdrant_client_installed as qdrant_client_installed,
)
from memoryd.vectors.qdrant.payload import (
    row_payload as row_payload,
)
from memoryd.vectors.qdrant.payload import (
    unix as unix,
)
from memoryd.vectors.qdrant.views import CONTEXT, MEMORY, NAMED, Layout, layout_of, unavailable


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
        self._layout: Layout = NAMED
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
            _check_local_lock(Path(cfg.path).expanduser())
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
                params = qm.VectorParams(size=dimensions, distance=qm.Distance.COSINE)
                client.create_collection(
                    self.collection,
                    vectors_config={MEMORY: params, CONTEXT: params},
                    quantization_config=_quantization_model(quant),
                )
                created = True
            except Exception:
                if not client.collection_exists(self.collection):  # lost a creation race?
                    raise
            if created and not self.local:  # local mode has no payload indexes
                self._create_indexes(client)
        info = client.get_collection(self.collection)
        size, layout = layout_of(_vector_sizes(info.config.params.vectors), dimensions)
        if size != dimensions:
            self.guard = guard_reason(self.collection, size, dimensions, signature)
            self._dim = None
            return ReadyState(False, self.guard)
        self.guard = None
        self._dim, self._layout = dimensions, layout
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

    @property
    def context_unavailable(self) -> str | None:
        return unavailable(self.collection, self._layout) if self._dim else None

    def add_context_vector(self) -> None:
        """Qdrant's create-vector-name (server 1.18+): the points keep their memory
        vector, and get a context vector when pushed again."""
        from qdrant_client import models as qm

        with self._lock:
            if self._dim is None or self._layout.context is not None:
                return
            config = qm.DenseVectorConfig(size=self._dim, distance=qm.Distance.COSINE)
            vector = qm.DenseVectorNameConfig(dense=config)
            self.client().create_vector_name(self.collection, CONTEXT, vector, wait=True)
            self._layout = Layout(self._layout.memory, CONTEXT)

    # -- writes ------------------------------------------------------------------------

    def upsert(self, items: Sequence[VectorItem]) -> None:
        if not items:
            return
        from qdrant_client import models as qm

        if self._dim is None:
            raise QdrantUnavailable("Qdrant collection not ready (ensure_ready first)")
        points = [
            qm.PointStruct(id=point_id(item.memory_id), vector=v, payload=item_payload(item))
            for item, v in views.points(items, self._layout, self._dim)
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

    def search(
        self, vector: np.ndarray, k: int, flt: Filter, view: str = MEMORY
    ) -> list[tuple[str, float]]:
        hits = self.search_payloads(vector, k, flt, (), view)
        return [(mid, score) for mid, score, _ in hits]

    def search_payloads(
        self,
        vector: np.ndarray,
        k: int,
        flt: Filter,
        fields: Sequence[str] | bool = (),
        view: str = MEMORY,
    ) -> list[tuple[str, float, dict[str, Any]]]:
        """``(memory_id, score, payload)`` best first; ``fields`` selects the payload
        keys to return (``True`` = all); nothing for a view the collection lacks."""
        if self._dim is None or k <= 0 or (flt.owners is not None and not flt.owners):
            return []
        if self._layout.name_of(view) is None:
            return []
        from qdrant_client import models as qm

        params = None
        search = search_quantization_params(self.config.quantization)
        if search is not None and not self.local:  # local mode is exact and warns on params
            oversampling = 3.0 if self.config.quantization == "binary" else None
            params = qm.SearchParams(
                quantization=qm.QuantizationSearchParams(rescore=True, oversampling=oversampling)
            )
        wanted: Any = True if fields is True else ["memoryId", *list(fields or ())]
        query = np.asarray(vector, dtype=np.float32).tolist()
        with self._lock:
            result = self.client().query_points(
                self.collection,
                query=query,
                using=self._layout.using(view),
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
            "vectors": self._layout.names,
            "contextView": self.context_unavailable or "available",
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


def _check_local_lock(folder: Path) -> None:
    """Fail cleanly when another client holds the local storage: qdrant-client would
    raise too, but leak its lock file handle on the way."""
    lock = folder / ".lock"
    if not lock.exists():
        return
    import portalocker

    with lock.open("r+") as handle:
        try:
            portalocker.lock(
                handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException:
            raise QdrantUnavailable(
                f"local Qdrant storage {folder} is in use by another process or client"
            ) from None
        portalocker.unlock(handle)


def _vector_sizes(vectors: Any) -> dict[str, int]:
    """``{name: size}`` of a collection's vectors (``""``: the unnamed one)."""
    if isinstance(vectors, dict):
        return {str(name): int(params.size) for name, params in vectors.items()}
    return {"": int(vectors.size)}


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
