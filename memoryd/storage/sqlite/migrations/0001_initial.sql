-- memories: the primary store. `seq` is the stable rowid alias that FTS5 and the
-- vector tables key on (AUTOINCREMENT: a deleted memory's seq is never reused, so a
-- stale index row can never point at a different memory). `id` is the public id.
CREATE TABLE memories (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    api_key_id TEXT NOT NULL CHECK (length(api_key_id) > 0),
    session_id TEXT NOT NULL DEFAULT '',
    type TEXT NOT NULL CHECK (type IN ('factual', 'episodic', 'procedural', 'semantic')),
    key TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    expires_at TEXT,
    needs_reindex INTEGER NOT NULL DEFAULT 0,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT
);

CREATE UNIQUE INDEX idx_memories_owner_key ON memories (api_key_id, key);
CREATE INDEX idx_memories_owner_session ON memories (api_key_id, session_id);
CREATE INDEX idx_memories_owner_created ON memories (api_key_id, created_at);
CREATE INDEX idx_memories_expires ON memories (expires_at);
CREATE INDEX idx_memories_needs_reindex ON memories (needs_reindex) WHERE needs_reindex = 1;

CREATE TABLE memory_vec_meta (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    active_dim INTEGER,
    embedding_signature TEXT,
    last_reset_at TEXT,
    vec_ready INTEGER NOT NULL DEFAULT 0
);
INSERT INTO memory_vec_meta (id, active_dim, embedding_signature, last_reset_at, vec_ready)
VALUES (1, NULL, NULL, NULL, 0);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    memory_enabled INTEGER
);

CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
