-- requires: fts5
-- The keyword index gains the context field (0009): FTS5's BM25 weighs each column
-- (content 1.0, key 0.5, context as retrieval asks) and normalises by the whole
-- document's length, which makes it BM25F over the three fields.
DROP TRIGGER IF EXISTS memory_fts_ai;
DROP TRIGGER IF EXISTS memory_fts_ad;
DROP TRIGGER IF EXISTS memory_fts_au;
DROP TABLE IF EXISTS memory_fts;

CREATE VIRTUAL TABLE memory_fts USING fts5(
    content,
    key,
    context,
    content = 'memories',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memory_fts (rowid, content, key, context)
    VALUES (new.seq, new.content, new.key, new.context);
END;

CREATE TRIGGER memory_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, key, context)
    VALUES ('delete', old.seq, old.content, old.key, old.context);
END;

-- Guarded: access-count bumps and flag changes must not rewrite the index.
CREATE TRIGGER memory_fts_au AFTER UPDATE OF content, key, context ON memories
WHEN old.content IS NOT new.content OR old.key IS NOT new.key
    OR old.context IS NOT new.context BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, key, context)
    VALUES ('delete', old.seq, old.content, old.key, old.context);
    INSERT INTO memory_fts (rowid, content, key, context)
    VALUES (new.seq, new.content, new.key, new.context);
END;

INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');
