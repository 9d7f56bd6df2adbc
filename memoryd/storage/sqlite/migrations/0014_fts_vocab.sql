-- requires: fts5
-- The keyword index's own document counts, one row per term. BM25's IDF
-- needs, per query term, the rows that hold it; a MATCH count walks the term's whole
-- position list (10 ms for a word in 100k memories), this reads one entry. It counts
-- every column, fts_scope too, so terms that could be a scope token (hex) still count
-- by MATCH (storage/sqlite/dialect.py).
CREATE VIRTUAL TABLE memory_fts_rows USING fts5vocab(memory_fts, 'row');
