"""Whether a retrieval stays inside this process (no network round trip).

The gateway may run memory work on its event loop instead of a worker thread when it
is cheap (``gateway.inline``), but a round trip there would hold every other request
for its duration, however fast it usually is. So only work that is CPU in this process
qualifies: the embedded primary store (SQLite; PostgreSQL is a server), a local
embedding source (MiniLM, the static model) or none, no Qdrant server in the path and
no remote reranker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memoryd.config.settings import MemorySettings
    from memoryd.engine.service import MemoryEngine

#: Embedding sources that compute in this process.
LOCAL_SOURCES = frozenset({"transformers", "static"})


def in_process(engine: MemoryEngine, settings: MemorySettings) -> bool:
    if engine.store.capabilities.shared:
        return False
    if settings.rerank_enabled and settings.rerank_provider_model:
        return False
    qdrant = engine.qdrant.config()
    if qdrant.enabled and qdrant.mode != "local":
        return False
    if engine.embeddings is None:
        return True
    source = engine.embeddings.resolution().source
    return source is None or source in LOCAL_SOURCES
