-- requires: fts5
-- Keyword index over memories, external content keyed by memories.seq. Deferred (not
-- recorded) when the SQLite build lacks FTS5, and applied with a full rebuild once it
-- has it.
CREATE VIRTUAL TABLE memory_fts USING fts5(
    content,
    key,
    content = 'memories',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memory_fts (rowid, content, key) VALUES (new.seq, new.content, new.key);
END;

CREATE TRIGGER memory_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, key)
    VALUES ('delete', old.seq, old.content, old.key);
END;

-- Guarded: access-count bumps and flag changes must not rewrite the index.
CREATE TRIGGER memory_fts_au AFTER UPDATE OF content, key ON memories
WHEN old.content IS NOT new.content OR old.key IS NOT new.key BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, key)
    VALUES ('delete', old.seq, old.content, old.key);
    INSERT INTO memory_fts (rowid, content, key) VALUES (new.seq, new.content, new.key);
END;

INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');
