-- memoryd on PostgreSQL: the same tables as the SQLite store, in one migration.
-- Times are canonical ISO-8601 UTC strings with milliseconds and "Z" (models.to_iso),
-- as in SQLite, so both stores compare and page them the same way.

CREATE TABLE memories (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    api_key_id TEXT NOT NULL CHECK (length(api_key_id) > 0),
    user_id TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '',
    type TEXT NOT NULL CHECK (type IN ('factual', 'episodic', 'procedural', 'semantic')),
    key TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    slot TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    expires_at TEXT,
    needs_reindex SMALLINT NOT NULL DEFAULT 0,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    superseded_at TEXT,
    superseded_by TEXT,
    -- content weighs more than the key, as bm25(memory_fts, 1.0, 0.5) does in SQLite
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', content), 'A')
        || setweight(to_tsvector('english', replace(key, '_', ' ')), 'B')
    ) STORED
);

CREATE UNIQUE INDEX idx_memories_owner_key ON memories (api_key_id, user_id, key);
CREATE INDEX idx_memories_owner_session ON memories (api_key_id, session_id, seq);
CREATE INDEX idx_memories_owner_created ON memories (api_key_id, created_at);
CREATE INDEX idx_memories_expires ON memories (expires_at);
CREATE INDEX idx_memories_needs_reindex ON memories (created_at, seq) WHERE needs_reindex = 1;
CREATE INDEX idx_memories_owner_slot ON memories (api_key_id, slot) WHERE slot IS NOT NULL;
CREATE INDEX idx_memories_tsv ON memories USING GIN (tsv);

CREATE TABLE api_keys (
    rowid BIGSERIAL UNIQUE,
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    memory_enabled SMALLINT
);

CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE extraction_queue (
    id BIGSERIAL PRIMARY KEY,
    api_key_id TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '',
    texts TEXT NOT NULL,  -- JSON [[text, source], ...]
    created_at TEXT NOT NULL
);

-- The external vector tier's outbox, kept by triggers as in SQLite (there created on
-- first use; here always, since a trigger costs a server little).
CREATE TABLE qdrant_pending (
    seq BIGINT PRIMARY KEY,
    memory_id TEXT NOT NULL,
    gen BIGINT NOT NULL DEFAULT 1
);
CREATE TABLE qdrant_tombstones (
    memory_id TEXT PRIMARY KEY,
    deleted_at TEXT NOT NULL
);
CREATE TABLE outbox_state (
    id SMALLINT PRIMARY KEY CHECK (id = 1),
    active BOOLEAN NOT NULL DEFAULT FALSE
);
INSERT INTO outbox_state (id, active) VALUES (1, FALSE);

CREATE FUNCTION memoryd_outbox_queue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (SELECT active FROM outbox_state WHERE id = 1) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        DELETE FROM qdrant_pending WHERE seq = OLD.seq;
        INSERT INTO qdrant_tombstones (memory_id, deleted_at)
        VALUES (OLD.id, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        ON CONFLICT (memory_id) DO UPDATE SET deleted_at = excluded.deleted_at;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.api_key_id IS NOT DISTINCT FROM NEW.api_key_id
        AND OLD.session_id IS NOT DISTINCT FROM NEW.session_id
        AND OLD.type IS NOT DISTINCT FROM NEW.type AND OLD.key IS NOT DISTINCT FROM NEW.key
        AND OLD.content IS NOT DISTINCT FROM NEW.content
        AND OLD.created_at IS NOT DISTINCT FROM NEW.created_at
        AND OLD.expires_at IS NOT DISTINCT FROM NEW.expires_at THEN
        RETURN NULL;
    END IF;
    INSERT INTO qdrant_pending (seq, memory_id, gen) VALUES (NEW.seq, NEW.id, 1)
    ON CONFLICT (seq) DO UPDATE SET gen = qdrant_pending.gen + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_outbox AFTER INSERT OR UPDATE OR DELETE ON memories
FOR EACH ROW EXECUTE FUNCTION memoryd_outbox_queue();

-- pgvector: the in-store vector index (created by the vector store once it knows the
-- embedder's dimension, like sqlite-vec's table), and its signature.
CREATE TABLE memory_vec_meta (
    id SMALLINT PRIMARY KEY CHECK (id = 1),
    active_dim INTEGER,
    embedding_signature TEXT,
    last_reset_at TEXT
);
INSERT INTO memory_vec_meta (id) VALUES (1);
