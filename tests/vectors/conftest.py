"""Vector stores: sqlite-vec and pgvector inside the primary store, the resident
vectors of large owners, and Qdrant (local mode through ``qdrant-client``)."""
