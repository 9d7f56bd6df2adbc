"""The opt-in Qdrant tier: ``client`` (a Qdrant server or local mode), ``edge`` (Qdrant
Edge in process), ``payload`` (what a point carries), ``config`` (settings), ``schema``
(its SQLite bookkeeping), ``tier`` (dual write and the retrieval ladder) and ``admin``
(status, sync, rebuild)."""
