-- Reconciliation (keeping memories current): an extracted fact names its slot
-- (`home_location`, `pet:dog:name`, `opinion:python`; copied from metadata.slot on
-- every write), and a newer value of a single-valued slot marks the older memory as
-- superseded instead of deleting it. Retrieval skips superseded rows; lists, export
-- and import keep them as history.
ALTER TABLE memories ADD COLUMN slot TEXT;
ALTER TABLE memories ADD COLUMN superseded_at TEXT;
ALTER TABLE memories ADD COLUMN superseded_by TEXT;
UPDATE memories SET slot = json_extract(metadata, '$.slot')
 WHERE json_valid(metadata) AND json_type(metadata, '$.slot') = 'text';
CREATE INDEX idx_memories_owner_slot ON memories (api_key_id, slot) WHERE slot IS NOT NULL;
