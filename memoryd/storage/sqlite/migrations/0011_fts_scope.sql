-- requires: fts5
-- The keyword index learns whose each memory is. FTS5 matched a query's
-- words across every owner's memories and ranked them all before the owner filter
-- dropped most: a search cost grew with the whole file, not with the owner. A fourth
-- column holds two tokens, the owner's id and the end user's id (hex, so each is one
-- token whatever its characters; "u" alone for memories shared across the key's end
-- users), and searches AND them into the MATCH. It weighs 0 in BM25; the SQL filter
-- stays the authority, the tokens only narrow what FTS5 ranks.
ALTER TABLE memories ADD COLUMN fts_scope TEXT
    GENERATED ALWAYS AS (hex(api_key_id) || ' u' || hex(user_id)) VIRTUAL;

DROP TRIGGER IF EXISTS memory_fts_ai;
DROP TRIGGER IF EXISTS memory_fts_ad;
DROP TRIGGER IF EXISTS memory_fts_au;
DROP TABLE IF EXISTS memory_fts;

CREATE VIRTUAL TABLE memory_fts USING fts5(
    content,
    key,
    context,
    fts_scope,
    content = 'memories',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memory_fts (rowid, content, key, context, fts_scope)
    VALUES (new.seq, new.content, new.key, new.context, new.fts_scope);
END;

CREATE TRIGGER memory_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, key, context, fts_scope)
    VALUES ('delete', old.seq, old.content, old.key, old.context, old.fts_scope);
END;

-- Guarded: access-count bumps and flag changes must not rewrite the index.
CREATE TRIGGER memory_fts_au AFTER UPDATE OF content, key, context, api_key_id, user_id
ON memories
WHEN old.content IS NOT new.content OR old.key IS NOT new.key
    OR old.context IS NOT new.context OR old.api_key_id IS NOT new.api_key_id
    OR old.user_id IS NOT new.user_id BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, key, context, fts_scope)
    VALUES ('delete', old.seq, old.content, old.key, old.context, old.fts_scope);
    INSERT INTO memory_fts (rowid, content, key, context, fts_scope)
    VALUES (new.seq, new.content, new.key, new.context, new.fts_scope);
END;

INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');
