-- kw_changes also logs a memory moved to another session: which memories
-- are written next to which (the neighbour prior) depends on the owner, the session
-- and the write order, so with this every change to it is logged, and a reader can
-- keep the neighbours it looked up until the log moves (storage/sqlite/dialect.py).
DROP TRIGGER kw_changes_au;

CREATE TRIGGER kw_changes_au AFTER UPDATE OF content, key, context, api_key_id, user_id,
    session_id
ON memories
WHEN old.content IS NOT new.content OR old.key IS NOT new.key
    OR old.context IS NOT new.context OR old.api_key_id IS NOT new.api_key_id
    OR old.user_id IS NOT new.user_id OR old.session_id IS NOT new.session_id BEGIN
    INSERT INTO kw_changes (seq) VALUES (new.seq);
END;
