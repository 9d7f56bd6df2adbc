"""``memoryd serve --workers N``: several processes on one port over PostgreSQL, a
clear refusal on SQLite, the admin token kept in the database. Real processes, real
HTTP, a real PostgreSQL."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from memoryd.cli import main
from tests.server.test_server import MEMORYD, ServerProcess

pytest.importorskip("psycopg")
pytestmark = pytest.mark.skipif(not MEMORYD.exists(), reason="console script not installed")

TOKEN_LINE = re.compile(r"admin token \(saved to the database\): (\S+)")
#: Generous: a loaded machine starts two embedders slowly (never a speed check).
WAIT_S = 120.0


def children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def test_workers_on_sqlite_are_refused_with_the_reason(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--data-dir", str(tmp_path / "d"), "serve", "--workers", "2"], env={}
    )
    assert result.exit_code == 1
    assert "--workers needs the shared PostgreSQL store" in result.output
    assert "SQLite" in result.output
    assert not (tmp_path / "d" / "memoryd.db").exists()  # refused before touching anything


@pytest.fixture
def pool(tmp_path: Path, pg_url: str) -> Iterator[ServerProcess]:
    server = ServerProcess(
        tmp_path / "data",
        tmp_path / "pool.log",
        "--workers",
        "2",
        env={"MEMORYD_DATABASE_URL": pg_url},
    )
    try:
        yield server
    finally:
        server.stop(timeout=90)
        server.kill()


def test_two_workers_share_the_port_and_the_databases_admin_token(
    pool: ServerProcess, tmp_path: Path, pg_url: str
) -> None:
    url = pool.wait_ready(WAIT_S)
    assert "(2 workers)" in pool.stderr
    found = TOKEN_LINE.search(pool.stderr)
    assert found, pool.stderr
    admin = {"Authorization": f"Bearer {found[1]}"}
    workers = children(pool.proc.pid)
    assert len(workers) == 2

    # Both processes answer on the one port, with the one token.
    answered: set[int] = set()
    for _ in range(400):
        got = httpx.get(f"{url}/api/memory/engine-status", headers=admin, timeout=60)
        assert got.status_code == 200, got.text
        answered.add(got.json()["process"]["pid"])
        if answered == workers:
            break
    assert answered == workers

    # A second server on another machine (another data dir) accepts the same token,
    # without being told: it is in the database, not in a file.
    other = ServerProcess(
        tmp_path / "elsewhere", tmp_path / "b.log", env={"MEMORYD_DATABASE_URL": pg_url}
    )
    try:
        other_url = other.wait_ready(WAIT_S)
        assert TOKEN_LINE.search(other.stderr) is None  # generated once, by the first
        assert httpx.get(f"{other_url}/api/keys", headers=admin, timeout=60).status_code == 200
    finally:
        other.stop(timeout=90)
        other.kill()
    assert not (tmp_path / "data" / "admin_token").exists()


def test_a_worker_that_dies_is_replaced_and_sigterm_stops_them_all(pool: ServerProcess) -> None:
    url = pool.wait_ready(WAIT_S)
    first = children(pool.proc.pid)
    victim = min(first)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        now = children(pool.proc.pid)
        if len(now) == 2 and victim not in now:
            break
        time.sleep(0.1)
    now = children(pool.proc.pid)
    assert len(now) == 2
    assert victim not in now
    # The survivor kept serving meanwhile; the replacement serves once it has started.
    assert httpx.get(f"{url}/healthz", timeout=60).status_code == 200
    assert "starting another" in pool.stderr
    assert pool.stop(timeout=90) == 0
    assert children(pool.proc.pid) == set()
