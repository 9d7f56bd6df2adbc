-- Erasure receipts: who was erased (a key, or one end user of it: NULL is
-- every end user), when, and how many rows of each kind went; never what they said.
-- A job queued before an erasure asks here before it stores anything.
CREATE TABLE erasures (
    id TEXT PRIMARY KEY,
    api_key_id TEXT NOT NULL,
    user_id TEXT,
    erased_at TEXT NOT NULL,
    counts TEXT NOT NULL
);
CREATE INDEX idx_erasures_owner ON erasures (api_key_id, erased_at);
