"""The vector-store contract every backend implements.

Ownership rules:

- ``search`` returns ``(memory_id, score)`` pairs with **score = cosine similarity,
  higher is better**, at most ``k``, best first, and only memories that pass the
  filter (owner first, then session, expiry, retention): a backend that cannot filter
  inside its search must over-fetch until it has ``k`` passing hits or none remain.
- ``ensure_ready(signature, dimensions)`` is called before any write or search with
  the active embedder's signature. A backend whose stored vectors were made under
  another signature discards them and says ``recreated=True``; the caller then marks
  every memory ``needs_reindex``. It never raises for "not configured": it returns
  ``ready=False`` with a reason.
- ``upsert``/``delete`` are idempotent. Vectors arrive L2-normalized.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from memoryd.storage.base import Filter, Reader, Writer

if TYPE_CHECKING:
    from memoryd.config.qdrant import QdrantConfig
    from memoryd.embedding import Embedder, EmbeddingResolution
    from memoryd.embedding.service import EmbeddingService


#: A memory's vectors: its own text, and its text with its earlier neighbours.
VIEWS = ("memory", "context")


@dataclass(frozen=True, slots=True)
class VectorItem:
    memory_id: str
    owner: str
    vector: np.ndarray
    payload: dict[str, Any] | None = None
    view: str = "memory"


@dataclass(frozen=True, slots=True)
class ReadyState:
    ready: bool
    reason: str
    recreated: bool = False


class VectorStore(Protocol):
    name: str

    def ensure_ready(self, signature: str, dimensions: int | None) -> ReadyState: ...

    def upsert(self, items: Sequence[VectorItem]) -> None: ...

    def delete(self, memory_ids: Sequence[str]) -> None: ...

    def search(
        self, vector: np.ndarray, k: int, flt: Filter, view: str = "memory"
    ) -> list[tuple[str, float]]: ...

    def stats(self) -> dict[str, Any]: ...

    def health(self) -> dict[str, Any]: ...


class InStoreVectors(VectorStore, Protocol):
    """The vector index inside the primary store (sqlite-vec, pgvector): the indexer
    stores a vector and clears the memory's reindex flag in one transaction."""

    quantization: str

    def upsert_in(self, tx: Writer, items: Sequence[VectorItem]) -> int: ...


class VectorSource(Protocol):
    """Where a vector tier gets its embeddings (the indexer is one): the active
    embedder, when one is ready, and the service that runs it. Tiers depend on this,
    not on the indexer, so the indexer and the tiers never import each other."""

    embeddings: EmbeddingService
    #: Each memory also has its context view (a tier pushes both vectors).
    context: bool

    def ready(self) -> tuple[EmbeddingResolution, Embedder] | None: ...


@dataclass(frozen=True, slots=True)
class TierSearch:
    """One tier-2 search: ``hits`` (memory id, score) and the ``backend`` that served
    them, or ``hits`` None and the ``reason`` retrieval records as its fallback."""

    hits: list[tuple[str, float]] | None
    backend: str | None
    reason: str | None


class ExternalTier(Protocol):
    """The opt-in external vector tier as the engine, retrieval and the API see it:
    the Qdrant tier, or a stand-in that says why there is none. Never None, so no
    caller branches on its absence."""

    #: False: this install cannot run the tier (every answer says why).
    available: bool

    def config(self) -> QdrantConfig: ...
    def update_config(self, partial: Mapping[str, Any]) -> QdrantConfig: ...
    def search(
        self, vector: np.ndarray, k: int, flt: Filter, view: str = "memory"
    ) -> TierSearch: ...
    def notify(self) -> None: ...
    def start_backfill(self, *, force: bool = False, reconcile: bool = False) -> dict[str, Any]: ...

    def status(self) -> dict[str, Any]: ...
    def health(self) -> dict[str, Any]: ...
    def test_search(self, query: str, top_k: int, owner: str) -> dict[str, Any]: ...
    def cleanup(self, retention_days: int | None = None) -> dict[str, Any]: ...
    def join(self, timeout: float | None = None) -> bool: ...
    def close(self) -> None: ...


def still_passing(
    reader: Reader, hits: Sequence[tuple[str, float]], flt: Filter
) -> list[tuple[str, float]]:
    """An external tier's hits the SQL filter still lets through: payloads can lag the
    store by a moment, so SQL has the last word. Qdrant's payload filter knows neither
    end users nor history: when most hits are another end user's or superseded, the
    retriever has the store's exact search answer instead (an end user's one relevant
    memory fell out of the top k)."""
    if not hits:
        return []
    passing = reader.existing_ids([mid for mid, _ in hits], flt)
    return [(mid, score) for mid, score in hits if mid in passing]
