"""The smoke suite: the installed wheel, as a user runs it.

It runs from a virtualenv that holds the built wheel and nothing of the source tree
(``.ci/run`` copies this folder out of the checkout first); the first test proves it.
Everything is a real process on loopback: ``memoryd serve``, ``memoryd mcp`` over
stdio, a throwaway PostgreSQL with pgvector, and the fake provider that ships in the
wheel (``memoryd.testing``), the one party outside memoryd.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from memoryd.testing import FakeUpstream, serve_asgi
from memoryd.testing.postgres import fresh_database, throwaway_server

BIN = Path(sys.executable).parent
MEMORYD = str(BIN / "memoryd")
ADMIN = "smoke-admin-token-0123456789abcdef"
READY = re.compile(r"memoryd listening on (http://\S+)")
#: Generous: a cold start on a busy two-core machine loads the embedder.
START_TIMEOUT_S = 120.0


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without memoryd's variables or a PYTHONPATH that could
    bring a source tree back in."""
    drop = ("MEMORYD_", "MEMORY_", "QDRANT_", "PYTHONPATH", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env | {"MEMORYD_LOG_FORMAT": "json", "MEMORYD_ADMIN_TOKEN": ADMIN} | extra


def run(
    *args: str, env: dict[str, str] | None = None, **kw: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMORYD, *args], env=env or clean_env(), capture_output=True, text=True, **kw
    )


class Server:
    """One ``memoryd serve`` child on a free port; its stderr goes to a file."""

    def __init__(self, log: Path, args: list[str], env: dict[str, str]) -> None:
        self.log_path = log
        self._log: IO[bytes] = log.open("wb")
        self.proc = subprocess.Popen(
            [MEMORYD, "serve", "--port", "0", *args],
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=env,
        )
        self.url = self._wait_ready()

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def _wait_ready(self) -> str:
        try:
            return self._ready_url()
        except BaseException:
            self.stop()  # not yet in the fixture's list: nothing else would stop it
            raise

    def _ready_url(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"memoryd serve exited with {self.proc.returncode}:\n{self.log()}")
            found = READY.search(self.log())
            if found:
                try:
                    if httpx.get(f"{found[1]}/healthz", timeout=5).status_code == 200:
                        return found[1]
                except httpx.TransportError:
                    pass
            time.sleep(0.1)
        pytest.fail(f"memoryd serve not ready after {START_TIMEOUT_S}s:\n{self.log()}")

    def admin(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
        )

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if not self._log.closed:
            self._log.close()
        return self.proc.returncode


@pytest.fixture(scope="session")
def upstream() -> Iterator[tuple[FakeUpstream, str]]:
    """The fake OpenAI-compatible provider, recording what memoryd forwards."""
    fake = FakeUpstream()
    with serve_asgi(fake.app) as url:
        yield fake, f"{url}/v1"


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throwaway PostgreSQL 18 with pgvector, or ``MEMORYD_TEST_DATABASE_URL``."""
    given = os.environ.get("MEMORYD_TEST_DATABASE_URL")
    with throwaway_server(tmp_path_factory.mktemp("pg"), given=given) as url:
        yield url


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty database on the server, dropped afterwards."""
    with fresh_database(pg_server, prefix="memoryd_smoke") as url:
        yield url


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(*args: str, **env: str) -> Server:
        server = Server(tmp_path / f"serve-{len(started)}.log", list(args), clean_env(**env))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 90.0) -> Any:
    """Poll ``probe`` until it returns something truthy (background work: extraction)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def locomo_dir() -> Path:
    """The shared LoCoMo conversations (never copied into the repository): required in
    CI, skipped elsewhere when they are not there."""
    given = os.environ.get("MEMORYD_SMOKE_LOCOMO", "")
    path = Path(given)
    if given and path.is_dir():
        return path
    why = f"MEMORYD_SMOKE_LOCOMO={given!r}: not a directory of LoCoMo conversation files"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: every socket stays bound until all are chosen."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def which(name: str) -> str:
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not on PATH")
    return found
