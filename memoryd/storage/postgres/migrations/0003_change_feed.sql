-- Several servers cache keys, settings, providers and memories in process: a change
-- committed by one is announced to the others on the channel "memoryd_changes" as
-- "<table>:<key>" (NOTIFY is transactional: sent at commit, never for a rollback).
-- An access-count bump does not change what a cache holds that matters, so it is not
-- announced (it happens on every injected memory of every request).
CREATE FUNCTION memoryd_announce() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        changed := to_jsonb(OLD) ->> TG_ARGV[0];
    ELSE
        changed := to_jsonb(NEW) ->> TG_ARGV[0];
    END IF;
    PERFORM pg_notify('memoryd_changes', TG_TABLE_NAME || ':' || left(changed, 4000));
    RETURN NULL;
END $$;

CREATE TRIGGER memories_announce AFTER INSERT OR DELETE ON memories
FOR EACH ROW EXECUTE FUNCTION memoryd_announce('id');
CREATE TRIGGER memories_announce_update AFTER UPDATE ON memories
FOR EACH ROW WHEN (
    (OLD.api_key_id, OLD.user_id, OLD.session_id, OLD.type, OLD.key, OLD.content,
    OLD.metadata, OLD.created_at, OLD.updated_at, OLD.expires_at, OLD.superseded_at,
    OLD.superseded_by)
    IS DISTINCT FROM
    (NEW.api_key_id, NEW.user_id, NEW.session_id, NEW.type, NEW.key, NEW.content,
    NEW.metadata, NEW.created_at, NEW.updated_at, NEW.expires_at, NEW.superseded_at,
    NEW.superseded_by)
)
EXECUTE FUNCTION memoryd_announce('id');

CREATE TRIGGER api_keys_announce AFTER INSERT OR UPDATE OR DELETE ON api_keys
FOR EACH ROW EXECUTE FUNCTION memoryd_announce('id');
CREATE TRIGGER settings_announce AFTER INSERT OR UPDATE OR DELETE ON settings
FOR EACH ROW EXECUTE FUNCTION memoryd_announce('key');
