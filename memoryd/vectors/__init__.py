"""Vector stores: the sqlite-vec tier inside the SQLite file, and Qdrant (opt-in)."""

from memoryd.vectors.base import ReadyState, VectorItem, VectorStore

__all__ = ["ReadyState", "VectorItem", "VectorStore"]
