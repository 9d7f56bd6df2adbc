-- The outbox also queues a memory when the in-store index stores new vectors for it
-- (its flag cleared): with context-aware indexing a neighbour's edit or delete changes
-- a memory's context view without touching its row, and Qdrant holds that vector too.
CREATE OR REPLACE FUNCTION memoryd_outbox_queue() RETURNS trigger LANGUAGE plpgsql AS $$
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
        AND OLD.expires_at IS NOT DISTINCT FROM NEW.expires_at
        AND NOT (OLD.needs_reindex = 1 AND NEW.needs_reindex = 0) THEN
        RETURN NULL;
    END IF;
    INSERT INTO qdrant_pending (seq, memory_id, gen) VALUES (NEW.seq, NEW.id, 1)
    ON CONFLICT (seq) DO UPDATE SET gen = qdrant_pending.gen + 1;
    RETURN NULL;
END $$;
