-- The profile: a memory's attribute (metadata "attribute", the capture
-- schema's name for what the fact is about) and whether a person pinned it into their
-- profile (metadata "pinned": 1 pinned, 0 unpinned, NULL follow the attribute), both
-- copied from metadata on every write so a request finds its owner's profile with one
-- index seek.
ALTER TABLE memories ADD COLUMN attribute TEXT;
ALTER TABLE memories ADD COLUMN pinned INTEGER;
UPDATE memories SET attribute = json_extract(metadata, '$.attribute')
 WHERE json_valid(metadata) AND json_type(metadata, '$.attribute') = 'text';
UPDATE memories SET pinned = CASE json_type(metadata, '$.pinned')
    WHEN 'true' THEN 1 WHEN 'false' THEN 0 END
 WHERE json_valid(metadata) AND json_type(metadata, '$.pinned') IN ('true', 'false');
CREATE INDEX idx_memories_owner_attribute ON memories (api_key_id, attribute)
    WHERE attribute IS NOT NULL;
CREATE INDEX idx_memories_owner_pinned ON memories (api_key_id, pinned)
    WHERE pinned IS NOT NULL;
