-- A semantic search first embeds its owner's newest unembedded memories
-- (flags.newest_flagged_of). Without an index of flagged rows per owner SQLite walked
-- the owner's whole created_at index checking each row's flag, every search, even when
-- nothing was flagged (a tenth of a static-embedder search at 600 memories).
CREATE INDEX IF NOT EXISTS idx_memories_flagged_owner
    ON memories (api_key_id, created_at) WHERE needs_reindex = 1;
