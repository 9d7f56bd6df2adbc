-- Extraction jobs, durable from the moment the gateway answers until their facts are
-- stored: a job is inserted (and committed) before the response's last byte goes out
-- and deleted once extraction ran, so a crash in between leaves it here and the next
-- start runs it again (facts upsert on owner + key, so a re-run stores nothing twice).
CREATE TABLE IF NOT EXISTS extraction_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    api_key_id TEXT NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    texts TEXT NOT NULL,  -- JSON [[text, source], ...]
    created_at TEXT NOT NULL
);
