"""Moving in from OmniRoute and mem0. An OmniRoute database is built with
the seed's own DDL (migrations 015, 022/023, 083 and 111 as the reference gives them,
and its key_value settings), with three owners, expired and live rows, unreadable
metadata and settings rows; ``memoryd import omniroute`` (CLI, in a subprocess) brings
it in, the memories come back through the gateway with the official ``openai`` client
for the keys they were mapped to, and a second run changes nothing. The legacy
camelCase ``memory`` table imports too; so does a mem0 export, twice."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from memoryd.engine import MemoryEngine
from memoryd.engine.importers import from_mem0, from_omniroute
from memoryd.errors import NotFoundError, ValidationError
from memoryd.models import utcnow
from memoryd.storage.sqlite.foreign import read_omniroute
from tests.conftest import make_engine
from tests.embedders import no_source
from tests.gateway_support import Gateway, gateway_on, running_gateway

#: OmniRoute's migrations, as ../shared/reference/omniroute-memory.md section 1 gives them.
SEED_DDL = [
    # 015_create_memories.sql
    """CREATE TABLE memories (
        id TEXT PRIMARY KEY,
        api_key_id TEXT NOT NULL,
        session_id TEXT,
        type TEXT NOT NULL CHECK(type IN ('factual','episodic','procedural','semantic')),
        key TEXT,
        content TEXT NOT NULL,
        metadata TEXT,
        created_at TEXT NOT NULL DEFAULT (datetime('now')),
        updated_at TEXT NOT NULL DEFAULT (datetime('now')),
        expires_at TEXT)""",
    "CREATE INDEX idx_memories_api_key ON memories(api_key_id)",
    "CREATE INDEX idx_memories_session ON memories(session_id)",
    "CREATE INDEX idx_memories_type ON memories(type)",
    "CREATE INDEX idx_memories_expires ON memories(expires_at)",
    # 022_add_memory_fts5.sql
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(content, key, content='memories')",
    # 023_fix_memory_fts_uuid.sql
    "ALTER TABLE memories ADD COLUMN memory_id INTEGER",
    "UPDATE memories SET memory_id = CAST(rowid AS INTEGER)",
    "CREATE UNIQUE INDEX idx_memories_memory_id ON memories(memory_id)",
    "DROP TABLE IF EXISTS memory_fts",
    "CREATE VIRTUAL TABLE memory_fts USING fts5(content, key, content='memories')",
    """CREATE TRIGGER memory_fts_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memory_fts(rowid, content, key) VALUES (new.memory_id, new.content, new.key);
    END""",
    """CREATE TRIGGER memory_fts_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, content, key)
        VALUES ('delete', old.memory_id, old.content, old.key);
    END""",
    # 083_memory_vec.sql
    """CREATE TABLE IF NOT EXISTS memory_vec_meta (id INTEGER PRIMARY KEY CHECK (id = 1),
        active_dim INTEGER, embedding_signature TEXT, last_reset_at TEXT,
        vec_loaded INTEGER NOT NULL DEFAULT 0)""",
    "INSERT OR IGNORE INTO memory_vec_meta VALUES (1, NULL, NULL, NULL, 0)",
    "ALTER TABLE memories ADD COLUMN needs_reindex INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX idx_memories_needs_reindex ON memories(needs_reindex) WHERE needs_reindex = 1",
    # 111_memory_typed_decay.sql
    "ALTER TABLE memories ADD COLUMN access_count INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE memories ADD COLUMN last_accessed_at TEXT",
    # the generic settings store
    """CREATE TABLE key_value (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT,
        PRIMARY KEY (namespace, key))""",
]

ROWS = [
    # id, owner, session, type, key, content, metadata, created, expires, access count
    (
        "m1",
        "key-alpha",
        "s1",
        "factual",
        "employer",
        "User works at Initech",
        '{"src":"chat"}',
        "2026-01-05T10:00:00.000Z",
        None,
        4,
    ),
    (
        "m2",
        "key-alpha",
        "",
        "semantic",
        "pet:dog",
        "User's dog is called Rex",
        "{not json",
        "2026-02-01 09:30:00",
        None,
        0,
    ),
    (
        "m3",
        "key-alpha",
        "",
        "episodic",
        "trip:2020",
        "User went to Oslo in 2020",
        None,
        "2020-01-01T00:00:00.000Z",
        "2021-01-01T00:00:00.000Z",
        0,
    ),  # expired
    (
        "m4",
        "key-beta",
        "s9",
        "procedural",
        "",
        "Always answer in British English",
        "[1, 2]",
        "2026-03-01T00:00:00.000Z",
        "2099-01-01T00:00:00.000Z",
        2,
    ),
    (
        "m5",
        "",
        "",
        "factual",
        "pref:editor",
        "User prefers Vim",
        "{}",
        "2026-03-02T00:00:00.000Z",
        None,
        0,
    ),
]
SETTINGS = {
    "memoryEnabled": True,
    "memoryMaxTokens": 1500,
    "memoryStrategy": "semantic",
    "memoryRetentionDays": 365,
    "memoryEmbeddingSource": "auto",
    "skillsEnabled": True,
    "qdrantEnabled": True,
    "qdrantCollection": "omniroute_memory",
    "theme": "dark",
}


def omniroute_db(path: Path, *, legacy: bool = False) -> Path:
    conn = apsw.Connection(str(path))
    if legacy:
        conn.execute(
            "CREATE TABLE memory (id TEXT PRIMARY KEY, apiKeyId TEXT, sessionId TEXT, "
            "type TEXT, key TEXT, content TEXT, metadata TEXT, createdAt TEXT, "
            "updatedAt TEXT, expiresAt TEXT)"
        )
        for r in ROWS:
            conn.execute(
                "INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*r[:8], r[7], r[8]),
            )
    else:
        for statement in SEED_DDL:
            conn.execute(statement)
        for r in ROWS:
            conn.execute(
                "INSERT INTO memories (id, api_key_id, session_id, type, key, content, "
                "metadata, created_at, updated_at, expires_at, access_count, memory_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "(SELECT COALESCE(MAX(memory_id), 0) + 1 FROM memories))",
                (*r[:8], "2026-04-01T12:00:00.000Z", r[8], r[9]),
            )
        for name, value in SETTINGS.items():
            conn.execute(
                "INSERT INTO key_value VALUES ('settings', ?, ?)", (name, json.dumps(value))
            )
    conn.close()
    return path


def memoryd(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_omniroute_database_moves_in_and_answers_through_the_gateway(
    tmp_path: Path,
) -> None:
    source = omniroute_db(tmp_path / "omniroute.db")
    data = tmp_path / "data"
    assert memoryd(data, "keys", "create", "team-beta").returncode == 0

    planned = memoryd(data, "--json", "import", "omniroute", str(source), "--dry-run")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["dryRun"] is True
    assert plan["totals"]["rows"] == 5
    assert plan["totals"]["expired"] == 1

    done = memoryd(
        data, "--json", "import", "omniroute", str(source), "--map", "key-beta=team-beta"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    keys = {k["source"]: k for k in report["keys"]}
    assert set(keys) == {"key-alpha", "key-beta", ""}
    alpha = keys["key-alpha"]
    assert (alpha["keyId"], alpha["keyName"], alpha["created"]) == (
        "key-alpha",
        "omniroute:key-alpha",
        True,
    )
    assert alpha["secret"].startswith("mk_")
    assert (alpha["rows"], alpha["expired"], alpha["imported"]) == (3, 1, 2)
    assert keys["key-beta"]["keyName"] == "team-beta"
    assert keys["key-beta"]["imported"] == 1
    assert report["settings"] == {
        "enabled": True,
        "maxTokens": 1500,
        "strategy": "semantic",
        "retentionDays": 365,
        "embeddingSource": "auto",
    }
    notes = "\n".join(report["notes"])
    for name in ("skillsEnabled", "qdrantEnabled", "qdrantCollection"):
        assert f"setting {name} not taken" in notes
    assert "theme" not in notes  # not a memory setting: not reported

    again = memoryd(
        data, "--json", "import", "omniroute", str(source), "--map", "key-beta=team-beta"
    )
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)["totals"]
    assert (second["imported"], second["updated"], second["skipped"]) == (0, 0, 4)

    engine = make_engine(data, resolver=no_source)
    try:
        kept = {m.content: m for m in engine.list_memories(owner="key-alpha").data}
        assert set(kept) == {"User works at Initech", "User's dog is called Rex"}
        initech = kept["User works at Initech"]
        assert initech.access_count == 4
        assert initech.metadata["src"] == "chat"
        assert initech.metadata["omnirouteId"] == "m1"
        assert initech.session_id == "s1"
        assert initech.key == "employer"
        assert kept["User's dog is called Rex"].metadata["importedFrom"] == "omniroute"
        assert engine.settings.get().strategy == "semantic"
        with running_gateway(engine, "chat") as gateway:
            answer_for(gateway, alpha["secret"], "Should I stay at Initech, where I work?")
            assert "User works at Initech" in gateway.injected()
    finally:
        engine.close()


def answer_for(gateway: Gateway, secret: str, question: str) -> Any:
    import openai

    with openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=secret, max_retries=0) as c:
        return c.chat.completions.create(
            model="chat-model", messages=[{"role": "user", "content": question}]
        )


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    eng = make_engine(tmp_path / "mdata", resolver=no_source)
    try:
        yield eng
    finally:
        eng.close()


def test_the_legacy_memory_table_imports_too(engine: MemoryEngine, tmp_path: Path) -> None:
    dump = read_omniroute(omniroute_db(tmp_path / "legacy.db", legacy=True))
    assert dump.table == "memory"
    report = from_omniroute(engine, dump).to_dict()
    assert report["totals"]["imported"] == 4
    assert report["totals"]["expired"] == 1
    assert "older memory table" in " ".join(report["notes"])
    contents = {m.content for m in engine.list_memories().data}
    assert "Always answer in British English" in contents


def test_not_an_omniroute_file_is_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = apsw.Connection(str(other))
    conn.execute("CREATE TABLE things (x)")
    conn.close()
    done = memoryd(tmp_path / "d", "import", "omniroute", str(other))
    assert done.returncode == 1
    assert "not an OmniRoute database" in done.stderr
    assert "Traceback" not in done.stderr


MEM0_EXPORT = {
    "results": [
        {
            "id": "a1b2",
            "memory": "Likes hiking in the Alps",
            "hash": "x",
            "metadata": {"category": "hobby"},
            "created_at": "2025-11-02T08:00:00-08:00",
            "updated_at": "2025-11-03T08:00:00-08:00",
            "user_id": "alice",
            "agent_id": "travel-bot",
            "run_id": "trip-42",
        },
        {
            "id": "c3d4",
            "memory": "Is allergic to peanuts",
            "metadata": None,
            "created_at": "2025-10-01T00:00:00Z",
            "updated_at": None,
            "user_id": "bob",
        },
    ]
}


def test_a_mem0_export_round_trip(engine: MemoryEngine, tmp_path: Path) -> None:
    report = from_mem0(engine, MEM0_EXPORT).to_dict()
    assert report["keys"][0]["keyName"] == "mem0"
    assert report["totals"]["imported"] == 2
    key = report["keys"][0]["keyId"]
    (alice,) = engine.list_memories(owner=key, user_id="alice").data
    assert alice.content == "Likes hiking in the Alps"
    assert alice.session_id == "trip-42"
    assert alice.metadata["agentId"] == "travel-bot"
    assert alice.metadata["category"] == "hobby"
    assert alice.created_at.isoformat().startswith("2025-11-02T16:00:00")
    (bob,) = engine.list_memories(owner=key, user_id="bob").data
    assert bob.content == "Is allergic to peanuts"
    exported = list(engine.export(key))
    assert {e["content"] for e in exported} == {m["memory"] for m in MEM0_EXPORT["results"]}
    again = from_mem0(engine, MEM0_EXPORT["results"]).to_dict()  # a bare list works too
    assert (again["totals"]["imported"], again["totals"]["skipped"]) == (0, 2)
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(MEM0_EXPORT))
    bad = tmp_path / "bad.json"
    bad.write_text('{"nothing": 1}')
    assert "not a mem0 export" in memoryd(tmp_path / "d2", "import", "mem0", str(bad)).stderr
    cli = memoryd(tmp_path / "d2", "--json", "import", "mem0", str(path))
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["totals"]["imported"] == 2


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with gateway_on(tmp_path / "rest", "rest", no_source) as base:
        yield base


def test_both_imports_over_rest(gateway: Gateway, tmp_path: Path) -> None:
    """The database is the body; nothing of it stays in the data dir afterwards."""
    body = omniroute_db(tmp_path / "upload.db").read_bytes()
    headers = {"content-type": "application/octet-stream"}
    planned = gateway.api(
        "POST",
        "/api/memory/import/omniroute",
        params={"dryRun": "true"},
        content=body,
        headers=headers,
    )
    assert planned.status_code == 200, planned.text
    assert planned.json()["dryRun"] is True
    assert gateway.engine.list_memories().total == 0
    done = gateway.api(
        "POST",
        "/api/memory/import/omniroute",
        params=[("map", f"key-beta={gateway.owner}")],
        content=body,
        headers=headers,
    )
    assert done.status_code == 200, done.text
    assert done.json()["totals"]["imported"] == 4
    beta = [m.content for m in gateway.engine.list_memories(owner=gateway.owner).data]
    assert beta == ["Always answer in British English"]
    assert not list((tmp_path / "rest").glob(".omniroute-upload-*"))
    empty = gateway.api("POST", "/api/memory/import/omniroute", content=b"", headers=headers)
    assert empty.status_code == 400
    garbage = gateway.api(
        "POST", "/api/memory/import/omniroute", content=b"not sqlite" * 100, headers=headers
    )
    assert garbage.status_code == 400, garbage.text
    bad_map = gateway.api(
        "POST",
        "/api/memory/import/omniroute",
        params={"map": "nokey"},
        content=body,
        headers=headers,
    )
    assert bad_map.status_code == 400
    assert "OLD=KEY" in bad_map.json()["error"]["message"]

    mem0 = gateway.api(
        "POST", "/api/memory/import/mem0", params={"apiKeyId": gateway.owner}, json=MEM0_EXPORT
    )
    assert mem0.status_code == 200, mem0.text
    assert mem0.json()["totals"]["imported"] == 2
    alice = gateway.engine.list_memories(owner=gateway.owner, user_id="alice").data
    assert [m.content for m in alice] == ["Likes hiking in the Alps"]
    wrong = gateway.api("POST", "/api/memory/import/mem0", json={"nothing": 1})
    assert wrong.status_code == 400


def test_a_crafted_file_is_refused_not_run(tmp_path: Path) -> None:
    """A virtual table over an endless recursive view would never finish (and fill the
    temp disk): only plain tables are read."""
    evil = tmp_path / "evil.db"
    conn = apsw.Connection(str(evil))
    conn.execute(
        "CREATE VIEW v AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT x AS id, 'k' AS api_key_id, 'hello' AS content FROM c"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE memories USING fts5(api_key_id, content, content='v', "
        "content_rowid='id')"
    )
    conn.close()
    with pytest.raises(ValidationError, match="not an OmniRoute database"):
        read_omniroute(evil)


def test_a_bad_map_makes_no_key_and_bad_rows_are_reported(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    source = omniroute_db(tmp_path / "o.db")
    dump = read_omniroute(source)
    before = {k.id for k in engine.keys.list()}
    with pytest.raises(NotFoundError):
        from_omniroute(engine, dump, {"key-beta": "no-such-key"})
    assert {k.id for k in engine.keys.list()} == before  # nothing made, nothing imported
    assert engine.list_memories().total == 0

    conn = apsw.Connection(str(source))
    conn.execute(
        "INSERT INTO memories (id, api_key_id, type, key, content, memory_id) "
        "VALUES ('blob', 'key-alpha', 'factual', 'b', X'00ff', 99)"
    )
    conn.close()
    report = from_omniroute(engine, read_omniroute(source)).to_dict()
    alpha = next(k for k in report["keys"] if k["source"] == "key-alpha")
    assert alpha["imported"] == 2
    assert len(alpha["errors"]) == 1  # the BLOB content: one bad row, not a failed import


def test_a_second_import_keeps_what_memoryd_counted_since(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    dump = read_omniroute(omniroute_db(tmp_path / "o.db"))
    from_omniroute(engine, dump)
    (initech,) = [m for m in engine.list_memories().data if "Initech" in m.content]
    assert initech.access_count == 4  # OmniRoute's count, kept
    engine.store.write(lambda tx: tx.bump_access([initech.id], utcnow(), 3))
    again = from_omniroute(engine, dump).to_dict()
    assert again["totals"]["imported"] == 0
    kept = engine.get(initech.id)
    assert kept is not None
    assert kept.access_count == 7  # not set back to the file's 4


def test_settings_that_would_break_memoryd_are_not_taken(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    source = omniroute_db(tmp_path / "o.db")
    conn = apsw.Connection(str(source))
    conn.execute("INSERT INTO key_value VALUES ('settings', 'memoryVectorStore', '\"qdrant\"')")
    conn.close()
    report = from_omniroute(engine, read_omniroute(source)).to_dict()
    assert "vectorStore" not in report["settings"]
    assert any("memoryVectorStore=qdrant not taken" in n for n in report["notes"])
    untouched = from_omniroute(engine, read_omniroute(source), settings=False).to_dict()
    assert untouched["settings"] == {}
