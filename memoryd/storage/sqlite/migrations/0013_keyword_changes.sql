-- A log of every change to what the keyword index holds, whichever process
-- writes: the resident keyword copies (storage/sqlite/keywords.py) catch up from it, as
-- the resident vector copies do from vec_changes. One row per memory inserted, deleted,
-- or changed in a column FTS5 indexes (content, key, context, and the owner and end
-- user behind fts_scope). It keeps itself to the last 100,000 changes; a copy further
-- behind is rebuilt.
CREATE TABLE kw_changes (id INTEGER PRIMARY KEY AUTOINCREMENT, seq INTEGER NOT NULL);

CREATE TRIGGER kw_changes_ai AFTER INSERT ON memories BEGIN
    INSERT INTO kw_changes (seq) VALUES (new.seq);
END;

CREATE TRIGGER kw_changes_ad AFTER DELETE ON memories BEGIN
    INSERT INTO kw_changes (seq) VALUES (old.seq);
END;

CREATE TRIGGER kw_changes_au AFTER UPDATE OF content, key, context, api_key_id, user_id
ON memories
WHEN old.content IS NOT new.content OR old.key IS NOT new.key
    OR old.context IS NOT new.context OR old.api_key_id IS NOT new.api_key_id
    OR old.user_id IS NOT new.user_id BEGIN
    INSERT INTO kw_changes (seq) VALUES (new.seq);
END;

CREATE TRIGGER kw_changes_prune AFTER INSERT ON kw_changes WHEN new.id % 1000 = 0 BEGIN
    DELETE FROM kw_changes WHERE id <= new.id - 100000;
END;
