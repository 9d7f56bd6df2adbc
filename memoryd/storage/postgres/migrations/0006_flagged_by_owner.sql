-- A semantic search first embeds its owner's newest unembedded memories: an index of
-- flagged rows per owner answers that without walking the owner's other rows.
CREATE INDEX IF NOT EXISTS idx_memories_flagged_owner
    ON memories (api_key_id, created_at) WHERE needs_reindex = 1;
