-- The profile: a memory's attribute (metadata "attribute", the capture
-- schema's name for what the fact is about) and whether a person pinned it into their
-- profile (metadata "pinned": 1 pinned, 0 unpinned, NULL follow the attribute), both
-- copied from metadata on every write so a request finds its owner's profile with one
-- index seek. Metadata that is not JSON is left alone, as SQLite's json_valid does.
ALTER TABLE memories ADD COLUMN attribute TEXT;
ALTER TABLE memories ADD COLUMN pinned INTEGER;
CREATE FUNCTION pg_temp.memoryd_json(raw TEXT) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    RETURN raw::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;
UPDATE memories SET attribute = pg_temp.memoryd_json(metadata) ->> 'attribute'
 WHERE metadata LIKE '%"attribute"%'
   AND jsonb_typeof(pg_temp.memoryd_json(metadata) -> 'attribute') = 'string';
UPDATE memories SET pinned = CASE pg_temp.memoryd_json(metadata) -> 'pinned'
    WHEN 'true'::jsonb THEN 1 WHEN 'false'::jsonb THEN 0 END
 WHERE metadata LIKE '%"pinned"%'
   AND jsonb_typeof(pg_temp.memoryd_json(metadata) -> 'pinned') = 'boolean';
CREATE INDEX idx_memories_owner_attribute ON memories (api_key_id, attribute)
    WHERE attribute IS NOT NULL;
CREATE INDEX idx_memories_owner_pinned ON memories (api_key_id, pinned)
    WHERE pinned IS NOT NULL;
