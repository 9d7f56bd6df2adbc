"""The SQLite primary store (apsw): connection management, migrations, and every SQL
statement memoryd runs, grouped by concern (memories, history, queue, kv, keys, the
sqlite-vec table, the Qdrant sync bookkeeping, backup, repair)."""
