"""``memoryd serve``: one uvicorn process serving the ASGI app over a data dir.

Start-up order: logging → the data-dir lock → the admin token → the listening socket
→ the engine (which runs pending migrations) → uvicorn. Every failure before uvicorn
runs is a ``ServeError`` with a one-line message (the CLI prints it and exits 1).

Shutdown: SIGTERM or SIGINT starts uvicorn's graceful shutdown (stop accepting, let
in-flight requests finish for half of ``MEMORYD_SHUTDOWN_S``), then the app's lifespan
stops the background work within the rest (``MemoryEngine.shutdown``): unrun extraction
jobs stay queued and unembedded memories flagged, for the next start.

SQLite keeps two processes on one data dir safe (WAL, one writer, busy timeouts), so the
CLI can work beside a server; two *servers* would each run a reindex worker and a decay
sweep, so a server holds an exclusive ``flock`` on ``<data_dir>/memoryd.pid`` and a
second one refuses to start, naming the first one's pid.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import secrets
import signal
import socket
import stat
import sys
import threading
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from memoryd import welcome
from memoryd.config import DEFAULT_HOST, DEFAULT_PORT, inert_variables

if TYPE_CHECKING:
    import uvicorn

    from memoryd.storage.base import Store

log = logging.getLogger(__name__)

TOKEN_FILE = "admin_token"
#: Where a shared (PostgreSQL) store keeps the admin token every replica accepts.
TOKEN_SETTING = "server.adminToken"
PID_FILE = "memoryd.pid"
GRACEFUL_SHUTDOWN_S = 30
_TOKEN_CHARS = re.compile(r"^[\x21-\x7e]+$")  # printable ASCII, no spaces: fits a header
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class Worker:
    """What a worker of ``serve --workers`` inherits: the listening socket, and a pipe
    on which it tells the supervisor it serves."""

    listen_fd: int
    ready_fd: int

    @classmethod
    def parse(cls, value: str) -> Worker:
        listen, _, ready = value.partition(":")
        return cls(int(listen), int(ready))

    def listening_socket(self) -> socket.socket:
        return socket.socket(fileno=self.listen_fd)

    def ready(self) -> None:
        # A restarted worker's supervisor no longer listens: a closed pipe is fine.
        with contextlib.suppress(OSError):
            os.write(self.ready_fd, f"{os.getpid()}\n".encode("ascii"))
        with contextlib.suppress(OSError):
            os.close(self.ready_fd)


class ServeError(Exception):
    """A start-up failure with a message fit for one line on stderr."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# -- configuration -----------------------------------------------------------------------


def default_host(env: Mapping[str, str]) -> str:
    return env.get("MEMORYD_HOST", "").strip() or DEFAULT_HOST


def default_port(env: Mapping[str, str]) -> int:
    raw = env.get("MEMORYD_PORT", "").strip()
    if not raw:
        return DEFAULT_PORT
    try:
        port = int(raw)
    except ValueError:
        raise ServeError(f"MEMORYD_PORT: not a port number: {raw!r}") from None
    if not 0 <= port <= 65535:
        raise ServeError(f"MEMORYD_PORT: out of range (0..65535): {port}")
    return port


def default_workers(env: Mapping[str, str]) -> int:
    raw = env.get("MEMORYD_WORKERS", "").strip()
    if not raw:
        return 1
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise ServeError(f"MEMORYD_WORKERS: not a number of processes from 1 to 64: {raw!r}")
    return int(raw)


def default_log_level(env: Mapping[str, str]) -> str:
    return env.get("MEMORYD_LOG_LEVEL", "").strip().lower() or "info"


# -- the admin token ---------------------------------------------------------------------


def flag(env: Mapping[str, str], name: str) -> bool:
    """A yes/no variable: ``MEMORYD_DEV`` (``serve --dev``), ``MEMORYD_LOG_CONTENT``."""
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def check_token(token: str, source: str, dev: bool = False) -> str:
    if not _TOKEN_CHARS.match(token):
        raise ServeError(f"{source}: the admin token must be printable ASCII without spaces")
    if len(token) < MIN_TOKEN_CHARS and not dev:  # guessable; --dev allows it on a laptop
        short = f"the admin token is short ({len(token)} characters)"
        raise ServeError(f"{source}: {short}; use 16 or more (serve --dev accepts it)")
    return token


def _tighten(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        try:
            os.chmod(path, 0o600)
        except OSError as exc:
            log.warning("%s is readable by others (mode %o) and chmod failed: %s", path, mode, exc)
        else:
            log.warning("%s was readable by others (mode %o); changed it to 0600", path, mode)


def resolve_admin_token(data_dir: Path, env: Mapping[str, str]) -> tuple[str, bool]:
    """The admin token and whether it was generated just now (print it once, then).

    ``MEMORYD_ADMIN_TOKEN`` wins when set (set but empty is an error); else
    ``<data_dir>/admin_token``; else a new random token saved there with mode 0600.
    """
    if "MEMORYD_ADMIN_TOKEN" in env:
        token = env.get("MEMORYD_ADMIN_TOKEN", "").strip()
        if not token:
            raise ServeError("MEMORYD_ADMIN_TOKEN is set but empty")
        return check_token(token, "MEMORYD_ADMIN_TOKEN", flag(env, "MEMORYD_DEV")), False
    path = data_dir / TOKEN_FILE
    if not path.exists():
        token = secrets.token_urlsafe(32)
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass  # another process created it a moment ago: use theirs
        else:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(token + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            return token, True
    try:
        _tighten(path)
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ServeError(f"cannot read the admin token file {path}: {exc}") from None
    if not token:
        raise ServeError(f"the admin token file {path} is empty; delete it to generate a new one")
    return check_token(token, str(path), flag(env, "MEMORYD_DEV")), False


def shared_admin_token(
    store: Store, proposed: str | None = None, dev: bool = False
) -> tuple[str, bool]:
    """The admin token kept in a shared database, and whether ``proposed`` (a new random
    one by default) just became it. Servers starting together agree on one token: the
    first insert wins and the others read it back."""
    from memoryd.models import utcnow

    candidate = proposed or secrets.token_urlsafe(32)
    try:
        token = store.write(lambda tx: tx.setting_default(TOKEN_SETTING, candidate, utcnow()))
    except Exception as exc:
        raise ServeError(f"cannot read the admin token from the database: {exc}") from None
    if not isinstance(token, str) or not token.strip():
        raise ServeError(
            f"the admin token stored in the database ({TOKEN_SETTING}) is not a string; "
            "set MEMORYD_ADMIN_TOKEN instead"
        )
    return check_token(token.strip(), "the database's admin token", dev), token == candidate


def carry_file_token(data_dir: Path, store: Store) -> str:
    """``memoryd migrate``: the data dir's token becomes the database's, so the clients
    and scripts that used the single server keep working against the replicas. Says
    what happened (never the token)."""
    path = data_dir / TOKEN_FILE
    if not path.exists():
        return "no token file in the data dir"
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        return f"token file not copied ({exc})"
    if not token or not _TOKEN_CHARS.match(token):
        return "token file not copied (empty or not a token)"
    stored, adopted = shared_admin_token(store, token)
    if adopted or stored == token:
        return "copied: the servers accept the data dir's admin token"
    return "not copied: the database already has a different admin token"


# -- the data-dir lock -------------------------------------------------------------------


class DataDirLock:
    """An exclusive, non-blocking ``flock`` on ``<data_dir>/memoryd.pid``, held for the
    server's lifetime. The kernel drops it when the process dies (even ``kill -9``),
    so a stale pid file never blocks a start. The file is emptied, not deleted, on
    release: unlinking a lock file lets two processes lock two different inodes."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / PID_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").split()[:1] or ["unknown"]
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise ServeError(f"cannot lock {self.path}: {exc.strerror}") from None
            raise ServeError(
                f"another memoryd server is using {self.data_dir} (pid {holder[0]})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def announce(self, url: str) -> None:
        """Add the server's URL: ``memoryd status`` asks only a server holding the lock."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"{os.getpid()}\n{url}\n".encode(), 0)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> DataDirLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


# -- the socket and the uvicorn server ---------------------------------------------------


def display_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before anything heavy starts, so a busy port is one clear error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(f"cannot resolve host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(f"port {port} is already in use on {host}") from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(False)
    return sock


def make_server(
    config: uvicorn.Config,
    *,
    url: str,
    on_ready: Callable[[], None] | None = None,
    banner: list[str] | None = None,
) -> uvicorn.Server:
    """uvicorn's server, plus a ready banner (or ``on_ready``); a signal is a clean stop
    (exit 0). Built here so that importing this module (the CLI does) skips uvicorn."""
    import uvicorn

    class MemorydServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and on_ready is not None:
                on_ready()
            elif self.started:
                lines = banner or [f"memoryd listening on {url}"]
                print("\n".join(lines), file=sys.stderr, flush=True)

        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None, None, None]:
            # uvicorn re-raises the captured signal after its graceful shutdown, which
            # would make every ``kill <pid>`` look like a crash (exit -15). Same
            # handlers, without the re-raise.
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return MemorydServer(config)


M_ARENA_MAX = -8  # glibc's ``mallopt`` parameter for the number of malloc arenas
MALLOC_ARENAS = 2  # arenas a server keeps (glibc's default: 8 per core)


def limit_malloc_arenas(env: Mapping[str, str]) -> bool:
    """Cap glibc's malloc arenas unless ``MALLOC_ARENA_MAX`` is set: each arena keeps
    what its threads freed, and two saved 57 MB in a 10-minute load at the same
    throughput (docs/benchmarks/memory-under-load.md). False off glibc."""
    if env.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_ARENA_MAX, MALLOC_ARENAS))
    except (OSError, AttributeError):  # not glibc
        return False


def serve(
    host: str,
    port: int,
    data_dir: str | Path,
    *,
    log_level: str = "info",
    json_logs: bool | None = None,
    env: Mapping[str, str] | None = None,
    worker: Worker | None = None,
    demo: bool = False,
) -> None:
    """Run the server until SIGTERM/SIGINT. Raises ``ServeError`` if it cannot start.
    ``worker``: one of ``serve --workers``' processes, on the supervisor's socket;
    ``demo``: the default provider is the demo one (``welcome.demo_provider``)."""
    env = os.environ if env is None else env
    with welcome.demo_provider(env) if demo else contextlib.nullcontext(env) as used:
        _serve(host, port, data_dir, log_level, json_logs, used, worker, demo)


def _serve(
    host: str,
    port: int,
    data_dir: str | Path,
    log_level: str,
    json_logs: bool | None,
    env: Mapping[str, str],
    worker: Worker | None,
    demo: bool,
) -> None:
    import uvicorn

    from memoryd.app import create_app
    from memoryd.bootstrap import open_engine
    from memoryd.http.observability import configure_logging, register_secret
    from memoryd.http.protocol import (
        ConnectionLimits,
        check_fd_headroom,
        parser_name,
        protocol_class,
    )
    from memoryd.storage.sqlite.files import warn_if_open_dir

    limit_malloc_arenas(env)  # before the engine's threads start
    try:
        configure_logging(log_level, json_logs, content=flag(env, "MEMORYD_LOG_CONTENT"))
        limits = ConnectionLimits.from_env(env)  # slow clients and the connection cap
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    for line in [welcome.unread_variables_line(env), *inert_variables(env)]:
        if line is not None:
            log.warning(line)
    root = Path(data_dir).expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ServeError(f"cannot create the data dir {root}: {exc.strerror}") from None
    if (problem := welcome.unwritable(root)) is not None:
        raise ServeError(problem)
    warn_if_open_dir(root)  # the files in it are 0600; the dir should be private too

    database_url = env.get("MEMORYD_DATABASE_URL", "").strip()
    # Several servers share one PostgreSQL database by design; the lock guards a file.
    lock = contextlib.nullcontext() if database_url else DataDirLock(root)
    # Replicas take the token from the shared store (or the env): read once it is open.
    from_database = bool(database_url) and "MEMORYD_ADMIN_TOKEN" not in env
    with lock:
        token, generated = ("", False) if from_database else resolve_admin_token(root, env)
        sock = bind_socket(host, port) if worker is None else worker.listening_socket()
        url = display_url(host, sock.getsockname()[1])
        if isinstance(lock, DataDirLock):
            lock.announce(url)
        try:
            try:
                engine = open_engine(data_dir=root, env_overrides=dict(env))
            except Exception as exc:
                log.debug("engine open failed", exc_info=True)
                what = "the database" if database_url else f"the data dir {root}"
                raise ServeError(f"cannot open {what}: {exc}") from None
            try:
                if from_database:
                    token, generated = shared_admin_token(
                        engine.store, dev=flag(env, "MEMORYD_DEV")
                    )
            except ServeError:
                engine.close()
                raise
            register_secret(token)
            if generated:
                where = "the database" if from_database else str(root / TOKEN_FILE)
                print(f"admin token (saved to {where}): {token}", file=sys.stderr)
            from memoryd.core.extraction.table import compiled_rules

            compiled_rules()  # the extraction rules, before the first chat rather than in it
            engine.recover_extractions()  # what a killed predecessor acknowledged, not ran
            if database_url:  # a shared store: also what another server died holding
                engine.extraction.sweep()
            try:
                app = create_app(engine, admin_token=token, close_engine=True)
                config = uvicorn.Config(
                    app,
                    host=host,
                    port=port,
                    log_config=None,
                    access_log=False,  # memoryd.access logs each request, with its id
                    lifespan="on",
                    timeout_graceful_shutdown=int(engine.config.shutdown_s // 2),  # in flight
                    http=protocol_class(limits),
                )
                log.info("connections: %s (%s)", limits.describe(), parser_name(limits))
                check_fd_headroom(limits)
                default = engine.providers().get("default")
                lines = welcome.banner(
                    url,
                    default.base_url if default is not None else None,
                    keys=len(engine.keys.list()),
                    demo=env.get("MEMORYD_UPSTREAM_BASE_URL") if demo else None,
                    data="the PostgreSQL store" if database_url else str(root),
                )
                server = make_server(
                    config,
                    url=url,
                    on_ready=None if worker is None else worker.ready,
                    banner=lines,
                )
                server.run(sockets=[sock])
            finally:
                engine.close()  # idempotent; the lifespan already closed it normally
        finally:
            sock.close()
    if not server.started:
        raise ServeError("the server failed to start (see the log above)")
    log.info("memoryd stopped")
