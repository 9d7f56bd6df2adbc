"""Start-up repair: a damaged FTS index is rebuilt, vector rows agree with memories."""

from __future__ import annotations

from pathlib import Path

from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory
from memoryd.storage.sqlite.repair import repair
from tests.conftest import make_engine


def _open(path: Path) -> MemoryEngine:
    env = {"MEMORYD_DATA_DIR": str(path)}
    from tests.embedders import no_source

    return make_engine(path, env, resolver=no_source)


def test_damage_is_repaired_when_the_engine_opens(tmp_path: Path) -> None:
    engine = _open(tmp_path)
    kept, _ = engine.create(NewMemory("alice", "the quick brown fox"))
    indexed, _ = engine.create(NewMemory("alice", "an indexed memory"))

    def damage(conn: object) -> None:
        # an FTS row with no memory behind it, a vector with no memory, and a memory
        # that claims to be indexed but has no vector
        conn.execute("INSERT INTO memory_fts (rowid, content, key) VALUES (999, 'ghost', 'g')")  # type: ignore[attr-defined]
        conn.execute("INSERT INTO vec_memories (seq, emb) VALUES (12345, x'00')")  # type: ignore[attr-defined]
        conn.execute("UPDATE memories SET needs_reindex = 0 WHERE id = ?", (indexed.id,))  # type: ignore[attr-defined]

    engine.store.db.write(damage)
    engine.close()

    engine = _open(tmp_path)
    try:
        conn = engine.store.db.read()
        ghost = conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'ghost'")
        assert ghost.fetchall() == []
        fox = engine.preview("alice", "quick fox", strategy="hybrid")
        assert [h.memory.id for h in fox.hits] == [kept.id]
        assert conn.execute("SELECT COUNT(*) FROM vec_memories").fetchone() == (0,)
        flag = conn.execute("SELECT needs_reindex FROM memories WHERE id = ?", (indexed.id,))
        assert flag.fetchone() == (1,)
        # and a healthy database is left alone
        report = repair(engine.store.db)
        assert not report.changed
    finally:
        engine.close()
