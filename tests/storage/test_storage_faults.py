"""Storage faults and private files, through real servers.

Disk full is a real ``SQLITE_FULL``: ``PRAGMA max_page_count`` on the writer's own
connection, pinned to the current page count, makes every write that needs a new
page fail exactly as a full disk does (WAL mode included); raising it again is the
operator freeing space.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memoryd.app import create_app
from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.engine import MemoryEngine
from memoryd.storage.sqlite.database import Database
from memoryd.testing import serve_asgi
from tests.conftest import ADMIN
from tests.gateway_support import running_gateway

MEMORYD = Path(sys.executable).with_name("memoryd")
READY = re.compile(r"memoryd listening on (http://\S+)")
AUTH = {"Authorization": f"Bearer {ADMIN}"}
BIG = "a fact worth keeping " * 1000  # ~21 KB: always needs fresh pages
needs_cli = pytest.mark.skipif(not MEMORYD.exists(), reason="console script not installed")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _env() -> dict[str, str]:
    drop = {"MEMORYD_ADMIN_TOKEN", "MEMORYD_HOST", "MEMORYD_PORT", "MEMORYD_DATA_DIR"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return env | {"MEMORYD_LOG_FORMAT": "text", "MEMORYD_ADMIN_TOKEN": ADMIN}


def _memoryd(data: Path, *args: str, **kw: Any) -> subprocess.Popen[bytes]:
    cmd = [str(MEMORYD), "--data-dir", str(data), *args]
    return subprocess.Popen(cmd, env=_env(), umask=0o022, **kw)


def _run(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(MEMORYD), "--data-dir", str(data), *args]
    return subprocess.run(
        cmd, env=_env(), umask=0o022, capture_output=True, text=True, timeout=60, check=False
    )


def _pin_pages(engine: MemoryEngine, pages: int) -> None:
    """Set the writer connection's max_page_count (1 pins it to the current size)."""

    def pin(conn: Any) -> None:
        conn.execute(f"PRAGMA max_page_count = {pages}").fetchall()

    engine.store.db.write(pin)


def disk_full(engine: MemoryEngine) -> None:
    _pin_pages(engine, 1)


def space_freed(engine: MemoryEngine) -> None:
    _pin_pages(engine, 4_294_967_294)


@pytest.fixture
def api(engine: MemoryEngine) -> Iterator[httpx.Client]:
    with (
        serve_asgi(create_app(engine, admin_token=ADMIN)) as url,
        httpx.Client(base_url=url, headers=AUTH, timeout=30) as http,
    ):
        yield http


def _create(http: httpx.Client, content: str, key: str) -> httpx.Response:
    return http.post("/api/memory", json={"apiKeyId": "alice", "content": content, "key": key})


# -- 7: private files ---------------------------------------------------------------------


@needs_cli
def test_database_wal_shm_backup_and_export_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    log = tmp_path / "server.log"
    with log.open("wb") as err:
        proc = _memoryd(data, "serve", "--port", "0", stderr=err, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (found := READY.search(log.read_text())):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        url = found[1]
        created = httpx.post(
            f"{url}/api/memory",
            json={"apiKeyId": "alice", "content": "likes tea", "key": "drink"},
            headers=AUTH,
            timeout=30,
        )
        assert created.status_code == 201, created.text
        for name in ("memoryd.db", "memoryd.db-wal", "memoryd.db-shm"):
            assert _mode(data / name) == 0o600, name

        backups = tmp_path / "backups"
        backups.mkdir()
        backup = _run(data, "backup", str(backups), "--json")
        assert backup.returncode == 0, backup.stderr
        (copy,) = backups.iterdir()
        assert _mode(copy) == 0o600

        fresh, stale = tmp_path / "alice.jsonl", tmp_path / "old.jsonl"
        stale.write_text("old\n")
        stale.chmod(0o644)
        for target in (fresh, stale):
            exported = _run(data, "export", "--owner", "alice", "-o", str(target))
            assert exported.returncode == 0, exported.stderr
            assert "likes tea" in target.read_text()
            assert _mode(target) == 0o600, target
    finally:
        proc.terminate()
        proc.wait(20)
    assert f"chmod 700 {data}" in log.read_text()


def test_existing_loose_database_files_are_tightened(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "memoryd.db"
    Database(path, load_vec=False).close()
    for name in ("memoryd.db", "memoryd.db-wal"):
        (tmp_path / name).touch()
        (tmp_path / name).chmod(0o644)
    with caplog.at_level(logging.WARNING), Database(path, load_vec=False):
        assert _mode(path) == 0o600
        assert _mode(tmp_path / "memoryd.db-wal") == 0o600
    assert "changed it to 0600" in caplog.text


# -- 8: storage faults --------------------------------------------------------------------


def test_disk_full_is_507_degraded_and_recovers_by_itself(
    engine: MemoryEngine, api: httpx.Client, tmp_path: Path
) -> None:
    acked = [_create(api, f"fact {i} " + BIG[:2000], f"k{i}") for i in range(5)]
    assert [r.status_code for r in acked] == [201] * 5
    assert api.get("/healthz").json()["status"] == "ok"

    disk_full(engine)
    failed = _create(api, BIG, "big")
    assert failed.status_code == 507, failed.text
    assert failed.json()["error"]["code"] == "storage_full"
    assert "full" in failed.json()["error"]["message"]

    health = api.get("/healthz")
    assert health.status_code == 200
    body = health.json()
    assert body["status"] == "degraded"
    assert body["reason"].startswith("storage_full: ")
    assert body["since"]
    status = api.get("/api/memory/engine-status").json()["storage"]
    assert status["available"] is False
    assert status["fault"] == "storage_full"
    probe = api.get("/api/memory/health").json()  # the dashboard's health dot
    assert probe["storageFault"] == "storage_full" or probe["working"] is True

    # Reads keep working meanwhile.
    assert api.get("/api/memory", params={"apiKeyId": "alice"}).json()["stats"]["total"] == 5

    space_freed(engine)
    retried = _create(api, BIG, "big")
    assert retried.status_code == 201, retried.text
    assert api.get("/healthz").json()["status"] == "ok"
    assert api.get("/api/memory/engine-status").json()["storage"]["available"] is True

    # Every acknowledged write survives, across a restart too; the failed one is the retry.
    data = engine.config.data_dir
    engine.close()
    reopened = build_engine(EngineConfig.from_env({}, data_dir=data), {})
    try:
        keys = sorted(m["key"] for m in reopened.export("alice"))
        assert keys == ["big", "k0", "k1", "k2", "k3", "k4"]
    finally:
        reopened.close()


def test_healthz_probe_clears_the_fault_without_traffic(
    engine: MemoryEngine, api: httpx.Client
) -> None:
    disk_full(engine)
    assert _create(api, BIG, "big").status_code == 507
    engine.store.db.probe_interval_s = 0.0  # probe on every call
    assert api.get("/healthz").json()["status"] == "degraded"  # the probe fails: still full

    space_freed(engine)
    after = api.get("/healthz").json()
    assert after["status"] == "ok"
    assert "reason" not in after
    assert engine.store.db.fault is None


def test_chat_keeps_working_when_the_disk_is_full(engine: MemoryEngine) -> None:
    with running_gateway(engine) as gw:
        # every turn is queued when the answer is extracted too (a turn
        # the rules find no fact in writes nothing), so the job's row meets the full disk
        engine.settings.update({"extractFrom": ["user", "assistant"]})
        disk_full(engine)
        reply = gw.send("remember this: " + BIG)
        assert reply.choices[0].message.content == gw.upstream.reply
        health = httpx.get(f"{gw.url}/healthz", timeout=10).json()
        assert health["status"] == "degraded"
        assert health["reason"].startswith("storage_full")
        space_freed(engine)
        assert (
            gw.api("POST", "/api/memory", json={"apiKeyId": "x", "content": BIG}).status_code == 201
        )


# -- 11: an empty or foreign memoryd.db ----------------------------------------------------


@needs_cli
@pytest.mark.parametrize(
    ("content", "says"),
    [(b"", "is empty (0 bytes)"), (b"this is not a database\n" * 50, "is not an SQLite file")],
    ids=["zero-byte", "garbage"],
)
def test_unusable_database_file_is_refused(tmp_path: Path, content: bytes, says: str) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    db = data / "memoryd.db"
    db.write_bytes(content)
    proc = _memoryd(data, "serve", "--port", "0", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("memoryd serve started on an unusable database")
    assert proc.returncode == 1
    lines = [line for line in err.decode().splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err.decode()
    assert str(db) in lines[0]
    assert says in lines[0]
    assert "move it away" in lines[0]
    assert db.read_bytes() == content
    assert not (data / "memoryd.db-wal").exists()

    for command in (("export", "--owner", "alice"), ("backup", str(tmp_path / "copy.db"))):
        cli = _run(data, *command)
        assert cli.returncode == 1, command
        assert says in cli.stderr
        assert str(db) in cli.stderr
        assert "Traceback" not in cli.stderr
    assert db.read_bytes() == content
    assert not (tmp_path / "copy.db").exists()


def test_absent_database_is_created(tmp_path: Path) -> None:
    with Database(tmp_path / "new" / "memoryd.db", load_vec=False) as db:
        assert db.created
    with Database(tmp_path / "new" / "memoryd.db", load_vec=False) as db:
        assert not db.created
