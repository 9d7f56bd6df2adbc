-- Vectors for the sqlite-vec tier, one per memory, keyed by memories.seq. A plain
-- table (not vec0): the KNN joins it to memories after the owner/session/expiry
-- filters, so its cost grows with the owner's own memories (NOTES.md measurements)
-- and every filtered search returns k hits. The dimension lives in memory_vec_meta,
-- so the table needs no width and can exist before any embedder is chosen.
CREATE TABLE IF NOT EXISTS vec_memories (
    seq INTEGER PRIMARY KEY,
    emb BLOB NOT NULL
);

CREATE TRIGGER IF NOT EXISTS vec_memories_ad AFTER DELETE ON memories BEGIN
    DELETE FROM vec_memories WHERE seq = old.seq;
END;
