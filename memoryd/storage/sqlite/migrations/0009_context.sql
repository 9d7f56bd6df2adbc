-- Context-aware indexing: each memory of a session keeps the text of up to
-- two memories before and after it (same owner, end user and session), a second field
-- of the keyword index. Kept current by the store on every write (storage/sql/context.py);
-- this fills it for the memories written before.
ALTER TABLE memories ADD COLUMN context TEXT NOT NULL DEFAULT '';

UPDATE memories AS m SET context = CASE WHEN m.session_id = '' THEN '' ELSE COALESCE(concat_ws(char(10),
    (SELECT p.content FROM memories p WHERE p.api_key_id = m.api_key_id AND p.user_id = m.user_id AND p.session_id = m.session_id AND p.seq < m.seq ORDER BY p.seq DESC LIMIT 1 OFFSET 1),
    (SELECT p.content FROM memories p WHERE p.api_key_id = m.api_key_id AND p.user_id = m.user_id AND p.session_id = m.session_id AND p.seq < m.seq ORDER BY p.seq DESC LIMIT 1 OFFSET 0),
    (SELECT p.content FROM memories p WHERE p.api_key_id = m.api_key_id AND p.user_id = m.user_id AND p.session_id = m.session_id AND p.seq > m.seq ORDER BY p.seq LIMIT 1 OFFSET 0),
    (SELECT p.content FROM memories p WHERE p.api_key_id = m.api_key_id AND p.user_id = m.user_id AND p.session_id = m.session_id AND p.seq > m.seq ORDER BY p.seq LIMIT 1 OFFSET 1)), '')
END WHERE m.session_id <> '';
