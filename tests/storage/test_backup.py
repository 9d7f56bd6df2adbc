"""``memoryd backup``: an online SQLite backup of a live data dir.

Real SQLite files throughout: a backup of an open engine, backups taken while a
thread keeps writing, the CLI against a real ``memoryd serve`` process that is being
written to over HTTP, refusal to overwrite without ``--force``, and a restore.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest
from click.testing import CliRunner

from memoryd.bootstrap import open_engine
from memoryd.cli import main
from memoryd.engine import MemoryEngine
from memoryd.errors import ConflictError, NotFoundError
from memoryd.models import NewMemory
from memoryd.storage.sqlite.backup import backup_database
from tests.conftest import add
from tests.server.test_server import MEMORYD, ServerProcess


def inspect(path: Path) -> dict[str, Any]:
    """integrity_check, journal mode and every memory id of a backup file."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            "integrity": [r[0] for r in conn.execute("PRAGMA integrity_check")],
            "journal": next(conn.execute("PRAGMA journal_mode"))[0],
            "ids": {r[0] for r in conn.execute("SELECT id FROM memories")},
            "fts": next(conn.execute("SELECT count(*) FROM memory_fts"))[0],
            "rows": {
                r[0]: (r[1], r[2])
                for r in conn.execute("SELECT id, api_key_id, content FROM memories")
            },
        }
    finally:
        conn.close()


def test_backup_of_an_open_engine_has_every_memory(engine: MemoryEngine, tmp_path: Path) -> None:
    made = [add(engine, "alice" if i % 2 else "bob", f"fact number {i}") for i in range(50)]
    dest = tmp_path / "out" / "copy.db"
    dest.parent.mkdir()
    result = backup_database(engine.store.db.path, dest)
    assert result.path == dest
    assert result.memories == 50
    assert result.bytes == dest.stat().st_size > 0
    seen = inspect(dest)
    assert seen["integrity"] == ["ok"]
    assert seen["journal"] == "delete"  # one self-contained file
    assert seen["ids"] == {m.id for m in made}
    assert seen["fts"] == 50
    assert seen["rows"][made[3].id] == ("alice", "fact number 3")
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert sorted(p.name for p in dest.parent.iterdir()) == ["copy.db"]  # no temp, no -wal
    # the source is untouched and still in use
    add(engine, "alice", "after the backup")
    assert engine.list_memories(owner="alice").total == 26


def test_an_existing_destination_is_kept_unless_forced(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    add(engine, "alice", "one")
    dest = tmp_path / "copy.db"
    dest.write_bytes(b"precious")
    with pytest.raises(ConflictError, match="--force"):
        backup_database(engine.store.db.path, dest)
    assert dest.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    result = backup_database(engine.store.db.path, dest, force=True)
    assert result.memories == 1
    assert inspect(dest)["integrity"] == ["ok"]


def test_missing_source_or_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no database"):
        backup_database(tmp_path / "nope.db", tmp_path / "copy.db")
    assert not (tmp_path / "nope.db").exists()  # never created by the attempt
    assert not (tmp_path / "copy.db").exists()
    source = tmp_path / "src.db"
    conn = apsw.Connection(str(source))
    conn.execute("CREATE TABLE t(x)")
    conn.close()
    with pytest.raises(NotFoundError, match="does not exist"):
        backup_database(source, tmp_path / "missing-dir" / "copy.db")


def test_a_directory_destination_gets_a_dated_file(engine: MemoryEngine, tmp_path: Path) -> None:
    add(engine, "alice", "one")
    result = backup_database(engine.store.db.path, tmp_path)
    assert result.path.parent == tmp_path
    assert result.path.name.startswith("memoryd-")
    assert result.path.suffix == ".db"
    assert inspect(result.path)["ids"]


def test_backups_taken_while_writes_happen(engine: MemoryEngine, tmp_path: Path) -> None:
    for i in range(500):  # enough pages that a copy takes a moment
        add(engine, "seed", f"seed memory {i} " + "padding " * 40)
    acked: list[str] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        i = 0
        while not stop.is_set():
            try:
                memory, _ = engine.create(
                    NewMemory(api_key_id="w", content=f"write {i} " + "x" * 200, key=f"k{i}")
                )
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)
                return
            acked.append(memory.id)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(0.1)
        for n in range(5):
            before = set(acked)
            result = backup_database(engine.store.db.path, tmp_path / f"b{n}.db")
            after = len(acked)
            seen = inspect(result.path)
            assert seen["integrity"] == ["ok"]
            assert before <= seen["ids"]  # every write acknowledged before the copy
            written = len(seen["ids"]) - 500
            assert len(before) <= written <= after + 64  # a snapshot, not a mixture
            assert seen["fts"] == len(seen["ids"])
    finally:
        stop.set()
        thread.join(10)
    assert not errors
    assert len(acked) > 10  # the writes really went on during the backups


# -- the CLI, against a running server ------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    if not MEMORYD.exists():
        pytest.skip("console script not installed")
    proc = ServerProcess(tmp_path / "data", tmp_path / "server.log")
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.kill()


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return subprocess.run(
        [str(MEMORYD), "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_cli_backup_while_the_server_is_written_to(server: ServerProcess, tmp_path: Path) -> None:
    token = (server.data_dir / "admin_token").read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    acked: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        with httpx.Client(base_url=server.url, headers=auth, timeout=30) as http:
            i = 0
            while not stop.is_set():
                body = {"apiKeyId": "alice", "key": f"k{i}", "content": f"fact {i}"}
                response = http.post("/api/memory", json=body)
                assert response.status_code == 201, response.text
                acked.append(response.json()["id"])
                i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(acked) < 50:
            time.sleep(0.02)
        before = set(acked)
        dest = tmp_path / "backup.db"
        done = cli(server.data_dir, "backup", str(dest), "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert (report["path"], report["integrity"]) == (str(dest), "ok")
        during = len(acked)

        again = cli(server.data_dir, "backup", str(dest))
        assert again.returncode == 1
        assert "already exists" in again.stderr
        assert "--force" in again.stderr
        forced = cli(server.data_dir, "backup", str(dest), "--force", "--json")
        assert forced.returncode == 0, forced.stderr
        before_forced = set(acked[:during])
    finally:
        stop.set()
        thread.join(30)
    assert len(acked) > during  # the server kept taking writes during the backups
    seen = inspect(dest)
    assert seen["integrity"] == ["ok"]
    assert before_forced <= seen["ids"]
    assert before <= seen["ids"]
    assert report["memories"] >= len(before)
    assert server.stop() == 0

    # restore: the server is stopped, the backup is copied in as the database
    restored = tmp_path / "restored"
    restored.mkdir()
    (restored / "memoryd.db").write_bytes(dest.read_bytes())
    engine = open_engine(data_dir=restored, start_indexing=False)
    try:
        ids = {m.id for m in engine.list_memories(owner="alice", limit=200).data}
        assert engine.list_memories(owner="alice").total == len(seen["ids"])
        assert ids <= seen["ids"]
    finally:
        engine.close()


def test_cli_backup_in_process_text_output(tmp_path: Path) -> None:
    runner = CliRunner()
    data = tmp_path / "data"
    added = runner.invoke(main, ["--data-dir", str(data), "memory", "add", "x", "--owner", "a"])
    assert added.exit_code == 0, added.output
    dest = tmp_path / "b.db"
    done = runner.invoke(main, ["--data-dir", str(data), "backup", str(dest)])
    assert done.exit_code == 0, done.output
    assert "backed up 1 memories" in done.output
    assert "integrity ok" in done.output
    refused = runner.invoke(main, ["--data-dir", str(data), "backup", str(dest)])
    assert refused.exit_code == 1
    missing = runner.invoke(main, ["--data-dir", str(tmp_path / "empty"), "backup", str(dest)])
    assert missing.exit_code == 1
    assert "no database" in missing.output


def test_cli_backup_to_a_missing_directory_named_with_a_slash(tmp_path: Path) -> None:
    """ "backups/" became a file named "backups" (and the next run was refused)."""
    runner = CliRunner()
    data = tmp_path / "data"
    runner.invoke(main, ["--data-dir", str(data), "memory", "add", "x", "--owner", "a"])
    folder = tmp_path / "nodir" / "deeper"
    done = runner.invoke(main, ["--data-dir", str(data), "--json", "backup", f"{folder}/"])
    assert done.exit_code == 0, done.output
    assert folder.is_dir()
    (name,) = [p.name for p in folder.iterdir()]
    assert name.startswith("memoryd-")
    assert name.endswith(".db")
