-- Who a memory is about: metadata "subjects", kept here as "|anna|user|"
-- (lowercase, sorted) so retrieval can list an owner's known subjects cheaply.
ALTER TABLE memories ADD COLUMN subjects TEXT;
CREATE INDEX idx_memories_owner_subjects ON memories (api_key_id, subjects)
    WHERE subjects IS NOT NULL;
