"""``memoryd serve --workers N``: N server processes on one port, one shared database.

One Python process uses about one core (the GIL); a machine with more needs more
processes. The supervisor binds the port, settles the admin token (the env's, else the
database's, so every worker accepts the same one), then starts N ordinary
``memoryd serve`` processes that inherit the listening socket (the kernel spreads
connections over their ``accept``). It prints the ready line once all N serve, restarts
a worker that dies (a crash loop stops everything instead), and on SIGTERM/SIGINT
passes the signal on and waits for the workers' graceful shutdown.

Only with PostgreSQL: a SQLite file has one writer, and its server holds the data-dir
lock, so a second process could not serve it (``ServeError`` says so).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType

from memoryd.server import (
    GRACEFUL_SHUTDOWN_S,
    ServeError,
    bind_socket,
    check_token,
    display_url,
    flag,
    shared_admin_token,
)

log = logging.getLogger(__name__)

#: A worker that died more than this often in ``CRASH_WINDOW_S`` is a crash loop.
MAX_RESTARTS = 5
CRASH_WINDOW_S = 60.0
#: Starting a worker loads the embedder: generous on a busy machine.
START_TIMEOUT_S = 300.0


def run_workers(
    workers: int,
    host: str,
    port: int,
    data_dir: str | Path,
    *,
    log_level: str,
    log_format: str,
    env: Mapping[str, str],
) -> None:
    """Supervise ``workers`` server processes until a signal. Raises ``ServeError``."""
    from memoryd.http.observability import configure_logging

    database_url = env.get("MEMORYD_DATABASE_URL", "").strip()
    if not database_url:
        raise ServeError(
            "--workers needs the shared PostgreSQL store (--database-url or "
            "MEMORYD_DATABASE_URL): a SQLite data dir has one writer and one server "
            "holding its lock, so a second process could not serve it"
        )
    fmt = {"json": True, "text": False}.get(log_format)
    configure_logging(log_level, fmt, content=flag(env, "MEMORYD_LOG_CONTENT"))
    token = _admin_token(data_dir, env)
    sock = bind_socket(host, port)
    url = display_url(host, sock.getsockname()[1])
    child_env = {**env, "MEMORYD_ADMIN_TOKEN": token, "MEMORYD_DATABASE_URL": database_url}
    base = [sys.executable, "-m", "memoryd", "--data-dir", str(data_dir), "serve"]
    base += ["--log-level", log_level, "--log-format", log_format or "auto"]
    group = _Workers(sock.fileno(), base, child_env)
    stopping: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        group.start(workers, lambda: bool(stopping))
        if not stopping:
            print(f"memoryd listening on {url} ({workers} workers)", file=sys.stderr, flush=True)
        group.supervise(lambda: bool(stopping))
    finally:
        group.stop()
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if group.failed:
        raise ServeError(group.failed)
    log.info("memoryd stopped")


def _admin_token(data_dir: str | Path, env: Mapping[str, str]) -> str:
    """The env's token, or the database's (generated and printed by the first server)."""
    if "MEMORYD_ADMIN_TOKEN" in env:
        token = env.get("MEMORYD_ADMIN_TOKEN", "").strip()
        if not token:
            raise ServeError("MEMORYD_ADMIN_TOKEN is set but empty")
        return check_token(token, "MEMORYD_ADMIN_TOKEN", flag(env, "MEMORYD_DEV"))
    from memoryd.bootstrap import open_store

    try:
        store = open_store(data_dir=data_dir, env_overrides=dict(env))
    except Exception as exc:
        raise ServeError(f"cannot open the database: {exc}") from None
    try:
        token, generated = shared_admin_token(store, dev=flag(env, "MEMORYD_DEV"))
    finally:
        store.close()
    if generated:
        print(f"admin token (saved to the database): {token}", file=sys.stderr)
    return token


class _Workers:
    def __init__(self, listen_fd: int, command: list[str], env: Mapping[str, str]) -> None:
        self.listen_fd = listen_fd
        self.command = command
        self.env = dict(env)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.restarts: list[float] = []
        self.failed = ""

    def _spawn(self) -> tuple[subprocess.Popen[bytes], int]:
        """A worker, and the read end of the pipe it reports ready on."""
        read_fd, write_fd = os.pipe()
        try:
            proc = subprocess.Popen(
                [*self.command, "--worker-of", f"{self.listen_fd}:{write_fd}"],
                env=self.env,
                pass_fds=(self.listen_fd, write_fd),
            )
        except OSError:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        return proc, read_fd

    def start(self, count: int, stopping: Callable[[], bool]) -> None:
        """Start ``count`` workers and wait until each serves (or one fails)."""
        pending = [self._spawn() for _ in range(count)]
        self.procs = [proc for proc, _ in pending]
        try:
            for proc, read_fd in pending:
                if not self._wait_ready(proc, read_fd, stopping):
                    if not self.failed:
                        self.failed = "stopped while starting"
                    return
        finally:
            for _, read_fd in pending:
                with contextlib.suppress(OSError):
                    os.close(read_fd)

    def _wait_ready(
        self, proc: subprocess.Popen[bytes], read_fd: int, stopping: Callable[[], bool]
    ) -> bool:
        import select

        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if stopping():
                return False
            readable, _, _ = select.select([read_fd], [], [], 0.2)
            if readable:
                if os.read(read_fd, 64).strip():
                    return True
                # The pipe closed without a word: the worker exited (or will).
                code = proc.wait(timeout=GRACEFUL_SHUTDOWN_S)
                self.failed = f"a worker exited while starting (code {code}; see the log above)"
                return False
        self.failed = f"a worker did not start within {START_TIMEOUT_S:.0f} s"
        return False

    def supervise(self, stopping: Callable[[], bool]) -> None:
        """Until a signal: a worker that dies is started again, unless they keep dying."""
        while not self.failed and not stopping():
            time.sleep(0.2)
            for index, proc in enumerate(self.procs):
                code = proc.poll()
                if code is None:
                    continue
                now = time.monotonic()
                self.restarts = [t for t in self.restarts if now - t < CRASH_WINDOW_S]
                if len(self.restarts) >= MAX_RESTARTS:
                    self.failed = (
                        f"workers keep exiting ({MAX_RESTARTS} restarts within "
                        f"{CRASH_WINDOW_S:.0f} s, the last with code {code}); stopping"
                    )
                    return
                log.warning("worker pid %d exited with code %s; starting another", proc.pid, code)
                self.restarts.append(now)
                replacement, read_fd = self._spawn()
                os.close(read_fd)  # it serves once started; nobody waits for its word
                self.procs[index] = replacement

    def stop(self) -> None:
        """SIGTERM to every worker, then wait for their graceful shutdown."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + GRACEFUL_SHUTDOWN_S + 15
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("worker pid %d did not stop in time; killing it", proc.pid)
                proc.kill()
                proc.wait()
