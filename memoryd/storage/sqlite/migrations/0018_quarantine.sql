-- A queued extraction job keeps where its words were said (the request's
-- start and id), so a job deferred to this table is still dropped by an erasure of
-- its subject after that moment, and its facts still name their request.
ALTER TABLE extraction_queue ADD COLUMN said_at TEXT;
ALTER TABLE extraction_queue ADD COLUMN request_id TEXT;
-- Messages the guard refused (they steer the assistant), held for review when the
-- setting quarantineGuarded is on; never read by retrieval. Erasure removes them.
CREATE TABLE quarantine (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    api_key_id TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    reason TEXT NOT NULL,
    said_at TEXT NOT NULL,
    request_id TEXT
);
CREATE INDEX idx_quarantine_owner ON quarantine (api_key_id, user_id, id);
