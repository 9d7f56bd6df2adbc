"""``memoryd serve`` as a real subprocess on a free port with a temporary data dir."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import apsw
import httpx
import pytest

from memoryd.bootstrap import local_model_installed
from memoryd.server import DataDirLock, ServeError, resolve_admin_token

MEMORYD = Path(sys.executable).with_name("memoryd")
READY = re.compile(r"memoryd listening on (http://\S+)")
TOKEN_LINE = re.compile(r"admin token \(saved to (\S+)\): (\S+)")
START_TIMEOUT_S = 20.0

pytestmark = pytest.mark.skipif(not MEMORYD.exists(), reason="console script not installed")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"MEMORYD_ADMIN_TOKEN", "MEMORYD_HOST", "MEMORYD_PORT", "MEMORYD_DATA_DIR"}
    }
    env["MEMORYD_LOG_FORMAT"] = "json"
    return env | extra


class ServerProcess:
    """One ``memoryd serve`` child; stderr goes to a file the test can read."""

    def __init__(
        self,
        data_dir: Path,
        log: Path,
        *args: str,
        any_port: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.log_path = log
        self._log: IO[bytes] = log.open("wb")
        port = ["--port", "0"] if any_port else []
        cmd = [str(MEMORYD), "--data-dir", str(data_dir), "serve", *port, *args]
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=self._log, env=_clean_env(**(env or {}))
        )
        self.url = ""

    @property
    def stderr(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"server exited with {self.proc.returncode}:\n{self.stderr}")
            found = READY.search(self.stderr)
            if found:
                self.url = found[1]
                try:
                    if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                        return self.url
                except httpx.TransportError:
                    pass
            time.sleep(0.05)
        pytest.fail(f"server not ready after {timeout}s:\n{self.stderr}")

    def wait_exit(self, timeout: float = 15.0) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"server did not exit within {timeout}s:\n{self.stderr}")

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._log.close()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    started: list[ServerProcess] = []

    def start(*args: str, data_dir: Path | None = None, **env: str) -> ServerProcess:
        log = tmp_path / f"server-{len(started)}.log"
        server = ServerProcess(data_dir or tmp_path / "data", log, *args, env=env)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.kill()


def _integrity_ok(db_path: Path) -> None:
    conn = apsw.Connection(str(db_path))
    try:
        rows = list(conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()
    assert rows == [("ok",)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# -- start-up, token, auth, request ids, shutdown ----------------------------------------


@pytest.mark.slow
def test_fresh_start_token_auth_and_graceful_stop(spawn: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = spawn()
    url = server.wait_ready()
    token_file = data / "admin_token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    printed = TOKEN_LINE.findall(server.stderr)
    assert printed == [(str(token_file), token)]  # printed exactly once
    assert server.stderr.count(token) == 1  # and never logged anywhere else

    assert httpx.get(f"{url}/healthz").status_code == 200
    assert httpx.get(f"{url}/metrics").status_code == 200
    assert httpx.get(f"{url}/api/memory/engine-status").status_code == 401
    wrong = httpx.get(f"{url}/api/memory/engine-status", headers={"Authorization": "Bearer no"})
    assert wrong.status_code == 401
    auth = {"Authorization": f"Bearer {token}"}
    ok = httpx.get(f"{url}/api/memory/engine-status", headers=auth)
    assert ok.status_code == 200
    assert "embedding" in ok.json()

    echoed = httpx.get(f"{url}/healthz", headers={"x-request-id": "trace-42"})
    assert echoed.headers["x-request-id"] == "trace-42"
    assert re.fullmatch(r"[0-9a-f]{32}", httpx.get(f"{url}/healthz").headers["x-request-id"])

    started = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - started < 10
    assert "Traceback" not in server.stderr
    assert '"request_id": "trace-42"' in server.stderr  # the access log line
    assert token not in server.stderr.replace(f"): {token}", "")  # only the one print
    _integrity_ok(data / "memoryd.db")

    again = spawn()
    again.wait_ready()
    assert not TOKEN_LINE.search(again.stderr)  # not printed a second time
    assert (data / "admin_token").read_text().strip() == token
    assert httpx.get(f"{again.url}/api/memory/engine-status", headers=auth).status_code == 200
    assert again.stop() == 0


@pytest.mark.slow
def test_sigint_also_stops_cleanly(spawn: Any, tmp_path: Path) -> None:
    server = spawn()
    server.wait_ready()
    server.proc.send_signal(signal.SIGINT)
    assert server.wait_exit() == 0
    _integrity_ok(tmp_path / "data" / "memoryd.db")


@pytest.mark.slow
def test_env_admin_token_wins(spawn: Any, tmp_path: Path) -> None:
    server = spawn(MEMORYD_ADMIN_TOKEN="env-token-0123456789abcdef")
    url = server.wait_ready()
    assert not (tmp_path / "data" / "admin_token").exists()
    assert not TOKEN_LINE.search(server.stderr)
    good = {"Authorization": "Bearer env-token-0123456789abcdef"}
    assert httpx.get(f"{url}/api/memory/engine-status", headers=good).status_code == 200
    assert httpx.get(f"{url}/api/memory/engine-status").status_code == 401
    assert server.stop() == 0


def test_empty_env_admin_token_is_an_error(spawn: Any) -> None:
    server = spawn(MEMORYD_ADMIN_TOKEN="")
    assert server.wait_exit() == 1
    assert "MEMORYD_ADMIN_TOKEN is set but empty" in server.stderr
    assert "Traceback" not in server.stderr


def test_a_short_admin_token_is_refused_outside_dev(spawn: Any, tmp_path: Path) -> None:
    """A guessable admin token stops the start, naming the fix; ``--dev``
    (``MEMORYD_DEV``) accepts it."""
    server = spawn(MEMORYD_ADMIN_TOKEN="short-token")
    assert server.wait_exit() == 1
    assert "short (11 characters)" in server.stderr
    assert "--dev" in server.stderr
    assert "short-token" not in server.stderr
    assert "Traceback" not in server.stderr
    dev = spawn("--dev", MEMORYD_ADMIN_TOKEN="short-token")
    url = dev.wait_ready()
    good = {"Authorization": "Bearer short-token"}
    assert httpx.get(f"{url}/api/memory/engine-status", headers=good).status_code == 200
    assert dev.stop() == 0


# -- two servers, busy port --------------------------------------------------------------


@pytest.mark.slow
def test_second_server_on_the_same_data_dir_refuses(spawn: Any, tmp_path: Path) -> None:
    first = spawn()
    first.wait_ready()
    second = spawn()
    assert second.wait_exit() == 1
    message = f"another memoryd server is using {tmp_path / 'data'} (pid {first.proc.pid})"
    assert message in second.stderr
    assert "Traceback" not in second.stderr
    # the first one is unaffected
    assert httpx.get(f"{first.url}/healthz").status_code == 200
    assert first.stop() == 0
    # and once it is gone the data dir is free again
    third = spawn()
    third.wait_ready()
    assert third.stop() == 0


def test_busy_port_is_one_clear_error(spawn: Any, tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        server = ServerProcess(
            tmp_path / "data", tmp_path / "busy.log", "--port", str(port), any_port=False
        )
        try:
            assert server.wait_exit() == 1
            err = server.stderr
        finally:
            server.kill()
    assert f"error: port {port} is already in use on 127.0.0.1" in err
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1


@pytest.mark.slow
def test_host_and_port_from_the_environment(spawn: Any, tmp_path: Path) -> None:
    port = _free_port()
    server = ServerProcess(
        tmp_path / "data",
        tmp_path / "env.log",
        any_port=False,
        env={"MEMORYD_HOST": "127.0.0.1", "MEMORYD_PORT": str(port)},
    )
    try:
        assert server.wait_ready() == f"http://127.0.0.1:{port}"
        assert server.stop() == 0
    finally:
        server.kill()


def test_bad_port_in_the_environment(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(MEMORYD), "--data-dir", str(tmp_path / "data"), "serve"],
        capture_output=True,
        text=True,
        env=_clean_env(MEMORYD_PORT="http"),
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert "MEMORYD_PORT: not a port number" in result.stderr
    assert "Traceback" not in result.stderr


# -- migrations --------------------------------------------------------------------------


@pytest.mark.slow
def test_start_on_an_older_data_dir_runs_pending_migrations(spawn: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = spawn()
    first.wait_ready()
    assert first.stop() == 0
    db = data / "memoryd.db"
    conn = apsw.Connection(str(db))
    try:
        conn.execute("DELETE FROM schema_migrations WHERE version = 3")
        conn.execute("DROP TRIGGER IF EXISTS vec_memories_ad")
        conn.execute("DROP TABLE vec_memories")
        assert [v for (v,) in conn.execute("SELECT version FROM schema_migrations")] == [
            1,
            2,
            4,
            5,
            6,
            7,
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            16,
            17,
            18,
        ]
    finally:
        conn.close()

    server = spawn()
    server.wait_ready()
    assert server.stop() == 0
    conn = apsw.Connection(str(db))
    try:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations")]
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert 3 in versions
    assert {"vec_memories", "vec_memories_ad"} <= tables
    _integrity_ok(db)


# -- graceful shutdown keeps acknowledged work -------------------------------------------


@pytest.mark.slow
def test_sigterm_right_after_writes_loses_nothing(spawn: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = "graceful-token-0123456789"
    auth = {"Authorization": f"Bearer {token}"}
    server = spawn(MEMORYD_ADMIN_TOKEN=token)
    url = server.wait_ready()
    with httpx.Client(base_url=url, headers=auth, timeout=10) as client:
        for i in range(50):
            created = client.post(
                "/api/memory",
                json={"apiKeyId": "alice", "key": f"fact-{i}", "content": f"fact number {i}"},
            )
            assert created.status_code == 201, created.text
    assert server.stop(timeout=90) == 0  # drains embedding before the engine closes
    _integrity_ok(data / "memoryd.db")
    model = local_model_installed(_clean_env())
    conn = apsw.Connection(str(data / "memoryd.db"))
    try:
        (stored,) = next(conn.execute("SELECT COUNT(*) FROM memories WHERE api_key_id = 'alice'"))
        (flagged,) = next(conn.execute("SELECT COUNT(*) FROM memories WHERE needs_reindex = 1"))
        (vectors,) = next(conn.execute("SELECT COUNT(*) FROM vec_memories"))
    finally:
        conn.close()
    assert stored == 50
    if model:  # with the local model on, the drain embedded every one before exiting
        assert flagged == 0
        assert vectors == 50

    again = spawn(MEMORYD_ADMIN_TOKEN=token)
    url = again.wait_ready()
    with httpx.Client(base_url=url, headers=auth, timeout=10) as client:
        listed = client.get("/api/memory", params={"apiKeyId": "alice", "limit": 200}).json()
        assert listed["total"] == 50
        assert {m["key"] for m in listed["data"]} == {f"fact-{i}" for i in range(50)}
        if model:
            deadline = time.monotonic() + 60
            while True:
                status = client.get("/api/memory/engine-status").json()
                if status["reindex"]["pending"] == 0:
                    break
                assert time.monotonic() < deadline, status
                time.sleep(0.2)
            assert status["vectorStore"]["needsReindex"] == 0
    assert again.stop(timeout=90) == 0


# -- the helpers, in process -------------------------------------------------------------


def test_resolve_admin_token_generates_reads_and_tightens(tmp_path: Path) -> None:
    data = tmp_path / "d"
    token, created = resolve_admin_token(data, {})
    assert created
    assert len(token) >= 40
    path = data / "admin_token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert resolve_admin_token(data, {}) == (token, False)
    path.chmod(0o644)
    assert resolve_admin_token(data, {}) == (token, False)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert resolve_admin_token(data, {"MEMORYD_ADMIN_TOKEN": " from-env-token-123456 "}) == (
        "from-env-token-123456",
        False,
    )
    with pytest.raises(ServeError, match="set but empty"):
        resolve_admin_token(data, {"MEMORYD_ADMIN_TOKEN": "  "})
    with pytest.raises(ServeError, match="printable ASCII"):
        resolve_admin_token(data, {"MEMORYD_ADMIN_TOKEN": "has a space"})
    path.write_text("\n")
    with pytest.raises(ServeError, match="is empty"):
        resolve_admin_token(data, {})


def test_data_dir_lock_is_exclusive_per_process(tmp_path: Path) -> None:
    tmp_path.joinpath("memoryd.pid").write_text("")
    code = (
        "import sys; from pathlib import Path; from memoryd.server import DataDirLock, ServeError\n"
        "try:\n    DataDirLock(Path(sys.argv[1])).acquire()\n"
        "except ServeError as e:\n    print(e.message); sys.exit(3)\n"
    )
    with DataDirLock(tmp_path):
        assert (tmp_path / "memoryd.pid").read_text().strip() == str(os.getpid())
        other = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False
        )
        assert other.returncode == 3, other.stderr
        assert f"(pid {os.getpid()})" in other.stdout
    free = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert free.returncode == 0, free.stdout + free.stderr


def test_malloc_arenas_are_capped_unless_the_environment_says_otherwise() -> None:
    """``serve`` caps glibc's malloc arenas (less memory held under a steady load); an
    operator's ``MALLOC_ARENA_MAX`` wins, and a libc without ``mallopt`` is left alone."""
    import sys

    from memoryd.server import limit_malloc_arenas

    assert limit_malloc_arenas({"MALLOC_ARENA_MAX": "8"}) is False
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    if sys.platform.startswith("linux") and libc and libc.startswith("glibc"):
        assert limit_malloc_arenas({}) is True
    else:
        assert limit_malloc_arenas({}) is False
