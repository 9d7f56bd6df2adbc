-- End users inside a key: an app that serves many people through one API
-- key names them per request (`user`, `safety_identifier`, `x-memoryd-user`). A memory
-- belongs to its key and, optionally, to one end user of it; '' is the key's shared
-- memory, so every memory stored before this migration stays visible to all of the
-- key's end users. Keys are unique per end user: two people may both live in Madrid.
ALTER TABLE memories ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
DROP INDEX IF EXISTS idx_memories_owner_key;
CREATE UNIQUE INDEX idx_memories_owner_key ON memories (api_key_id, user_id, key);
ALTER TABLE extraction_queue ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
