"""The PostgreSQL connection side: a psycopg pool, transactions, migrations, faults.

``write(fn)`` runs ``fn(conn)`` in one transaction on a pooled connection (a write
inside it is a SAVEPOINT); ``snapshot()`` one REPEATABLE READ, READ ONLY transaction;
anything else reads in autocommit on a pooled connection. While a thread is inside a
snapshot its other reads use that connection, as a SQLite thread's reads use its one
connection, so a vector search inside a retrieval's snapshot sees the snapshot; a
read inside a write sees committed state only, as on SQLite. Migrations run once at
open, under an advisory lock, so several servers starting together apply each exactly
once.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import unquote

import psycopg
import psycopg.errors
from psycopg_pool import ConnectionPool, PoolTimeout

from memoryd.errors import StorageFullError, StorageUnavailableError, UnavailableError
from memoryd.storage.base import Capabilities, StorageFault, fault_status, register_driver
from memoryd.storage.sql.migration_files import MIGRATION_FILE

log = logging.getLogger(__name__)

T = TypeVar("T")
MIGRATION_LOCK = 0x6D656D6F7279  # "memory": one advisory lock id for every memoryd
PROBE_INTERVAL_S = 5.0
#: While the database is known to be down, how long a request waits for a connection
#: before it is told so (else the pool's whole timeout: health checks and scrapes
#: timed out behind it); and how long ``ping`` (``/healthz``) ever waits.
DOWN_WAIT_S = 0.5
#: A pooled connection idle this long is checked (one empty query) before it is lent:
#: after an outage every idle connection is dead, and the first request on each failed.
CHECK_IDLE_S = 2.0
#: How long the pool keeps retrying a lost connection (backing off 1, 2, 4 s ...) before
#: it gives up and lets the next request try at once: psycopg_pool's 5 minutes meant
#: that after a minute's outage the pool did not reconnect for half a minute more.
RECONNECT_S = 3.0
RETRIES = 3
#: Errors that end a transaction through no fault of its own: run it again.
RETRYABLE = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)


def storage_error(exc: BaseException) -> UnavailableError | None:
    """A lost or refused database is a 503 ``storage_unavailable``, a full disk a 507."""
    if isinstance(exc, StorageFullError | StorageUnavailableError):
        return exc
    err: UnavailableError
    if isinstance(exc, psycopg.errors.DiskFull):
        err = StorageFullError("the database server's disk is full; the write was not stored")
    elif isinstance(exc, psycopg.OperationalError | PoolTimeout):
        err = StorageUnavailableError(f"the database is unavailable: {_brief(exc)}")
    else:
        return None
    err.__cause__ = exc
    return err


def _brief(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


register_driver(psycopg.Error, storage_error)


class PgConn:
    """A psycopg connection speaking the portable SQL of ``storage.sql``: ``?``
    placeholders (sent as ``%s``, with literal ``%`` escaped) and apsw's ``changes()``
    (the last statement's row count)."""

    __slots__ = ("_rowcount", "raw")

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw
        self._rowcount = 0

    def execute(self, query: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        # Always with a parameter list: psycopg then reads "%%" as "%" even with none.
        translated = query.replace("%", "%%").replace("?", "%s").encode()
        cursor = self.raw.execute(translated, list(params))
        self._rowcount = max(cursor.rowcount, 0)
        return cursor

    def changes(self) -> int:
        return self._rowcount


def _scalar(conn: psycopg.Connection[Any], query: str) -> Any:
    row = conn.execute(query.encode()).fetchone()
    return row[0] if row else None


def safe_url(url: str) -> str:
    """The URL (or conninfo string) without its password, for messages and status."""
    url = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", r"\1***", url)


def redacted(text: str, url: str) -> str:
    """A driver's message without the URL's password: libpq quotes a URL it cannot parse
    whole ("missing '=' after 'mysql://u:secret@h/db'"), and messages get pasted."""
    if url:
        text = text.replace(url, safe_url(url))
        # ... or quote the password alone ('unexpected spaces found in "top secret"')
        found = re.search(r"://[^:/@]*:([^@]*)@", url) or re.search(
            r"password\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&]+)", url
        )
        secret = found[1].strip("'") if found else ""
        for variant in {secret, unquote(secret)}:
            if len(variant) >= 3:
                text = text.replace(variant, "***")
    text = re.sub(r"(://[^:/@\s\"']*):[^@\s\"']*@", r"\1:***@", text)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&\"]+)", r"\1***", text)


class PgDatabase:
    def __init__(self, url: str, *, max_size: int = 10, timeout_s: float = 10.0) -> None:
        self.url = url
        self._local = threading.local()
        self._fault: StorageFault | None = None
        self._last_probe = 0.0
        self.probe_interval_s = PROBE_INTERVAL_S
        try:  # one direct attempt first: its error names the cause (refused, auth, no db)
            psycopg.connect(url, connect_timeout=max(1, int(timeout_s))).close()
        except psycopg.Error as exc:
            raise UnavailableError(
                f"cannot connect to PostgreSQL at {safe_url(url)}: {redacted(_brief(exc), url)}"
            ) from None
        self._returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self._asking = threading.Lock()
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True},
            configure=self._configure,
            reset=self._note_returned,
            reconnect_timeout=RECONNECT_S,
            open=False,
            timeout=timeout_s,
            name="memoryd",
        )
        try:
            self.pool.open(wait=True, timeout=timeout_s)
        except PoolTimeout:
            self.pool.close()
            raise UnavailableError(
                f"cannot connect to PostgreSQL at {safe_url(url)} within {timeout_s:.0f} s "
                "(is the server up, and the URL right?)"
            ) from None
        try:
            self.capabilities = self._prepare()
        except BaseException:
            self.pool.close()
            raise
        self._submitter = ThreadPoolExecutor(1, thread_name_prefix="memoryd-pg-submit")
        self._closed = False

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        # Filtered KNN keeps scanning the HNSW graph until k rows pass (pgvector >= 0.8).
        with contextlib.suppress(psycopg.Error):
            conn.execute("SET hnsw.iterative_scan = strict_order")

    def _note_returned(self, conn: psycopg.Connection[Any]) -> None:
        self._returned[conn] = time.monotonic()

    def _down(self) -> bool:
        fault = self._fault
        return fault is not None and fault.code == "storage_unavailable"

    @contextlib.contextmanager
    def _borrowed(self, wait_s: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, checked first when it sat idle ``CHECK_IDLE_S`` or more
        (one empty query; most are back sooner under load, and cost nothing). A dead
        one makes the pool check all its idle ones at once and lend a live one: after
        an outage the first request on each would fail, or walk the dead ones with the
        pool's backoff. While the database is known to be down, a request waits
        ``DOWN_WAIT_S``, then one direct connection says whether it is back: if so, it
        waits for the pool to reconnect rather than fail; else it fails now."""
        down = wait_s is None and self._down()
        try:
            conn = self.pool.getconn(DOWN_WAIT_S if down else wait_s)
        except PoolTimeout:
            if not down or not self._back():
                raise
            conn = self.pool.getconn()
        try:
            back = self._returned.get(conn)
            if back is None or time.monotonic() - back >= CHECK_IDLE_S:
                conn = self._live(conn, wait_s)
            with conn:
                yield conn
        finally:
            self.pool.putconn(conn)

    def _live(self, conn: psycopg.Connection[Any], wait_s: float | None) -> psycopg.Connection[Any]:
        try:
            ConnectionPool.check_connection(conn)
            return conn
        except psycopg.Error:
            self.pool.putconn(conn)  # broken: the pool discards it
        self.pool.check()  # every idle one at once; the dead ones are replaced
        return self.pool.getconn(wait_s)

    def _answers(self) -> bool:
        """Whether the database takes a direct connection now (at most one asker)."""
        if not self._asking.acquire(blocking=False):
            return False
        try:
            psycopg.connect(self.url, connect_timeout=2).close()
            return True
        except psycopg.Error:
            return False
        finally:
            self._asking.release()

    def _back(self) -> bool:
        """Whether the database is back (clears the fault, and readies the pool)."""
        if not self._answers():
            return False
        self._fault = None
        self.pool.check()  # drop the dead connections, and grow now
        return True

    def _prepare(self) -> Capabilities:
        with self.pool.connection() as conn:
            applied = apply_migrations(conn)
            if applied:
                log.info("PostgreSQL migrations applied: %s", ", ".join(applied))
            version = _scalar(conn, "SHOW server_version")
            vec = _scalar(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        return Capabilities(
            fts5=True,
            fts5_reason="PostgreSQL full-text search",
            vec=True,
            vec_reason=f"pgvector {vec}",
            sqlite_version=f"PostgreSQL {version}",
            backend="postgresql",
            shared=True,
            keyword_backend="tsvector",
        )

    # -- connections and transactions -------------------------------------------------

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """This thread's snapshot connection if it is in one, else a pooled one (a read
        during a write sees committed state only, as on SQLite)."""
        current = getattr(self._local, "snapshot", None)
        if current is not None:
            yield current
            return
        self._check_open()
        with self._guard(), self._borrowed() as conn:
            yield conn

    def run(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        with self.connection() as conn:
            return fn(conn)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[psycopg.Connection[Any]]:
        current = getattr(self._local, "snapshot", None)
        if current is not None:
            yield current
            return
        self._check_open()
        with self._guard(), self._borrowed() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._local.snapshot = conn
            try:
                yield conn
            finally:
                self._local.snapshot = None
                conn.execute("COMMIT")

    def write(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        current = getattr(self._local, "writer", None)
        if current is not None:
            with current.transaction():  # nested: a savepoint of the outer write
                return fn(current)
        self._check_open()
        for attempt in range(RETRIES + 1):
            try:
                with self._guard(write=True), self._borrowed() as conn:
                    self._local.writer = conn
                    try:
                        with conn.transaction():
                            result = fn(conn)
                    finally:
                        self._local.writer = None
            except psycopg.errors.UniqueViolation:
                # Two writers upserting one key at once (two workers, or two threads):
                # each read found no row and one insert won. The other transaction rolled
                # back whole; run again, it finds the row and updates it (was a 500).
                if attempt == RETRIES:
                    raise
                time.sleep(0.01 * (attempt + 1))
                continue
            except StorageUnavailableError as err:
                # Two writers that lock rows in different orders (a reindex marking every
                # memory while the indexer clears flags): PostgreSQL aborts one. The
                # transaction rolled back whole, so running it again is safe.
                if attempt == RETRIES or not isinstance(err.__cause__, RETRYABLE):
                    raise
                self._fault = None
                time.sleep(0.05 * (attempt + 1))
                continue
            self._fault = None
            return result
        raise AssertionError("unreachable")

    def submit(self, fn: Callable[[psycopg.Connection[Any]], T]) -> Future[T]:
        """In submission order, on one thread (as SQLite's single writer)."""
        self._check_open()
        return self._submitter.submit(self.write, fn)

    def flush(self) -> None:
        if not self._closed:
            self._submitter.submit(lambda: None).result()

    @contextlib.contextmanager
    def _guard(self, *, write: bool = False) -> Iterator[None]:
        """Driver failures leave as memoryd errors; a lost database is a fault."""
        try:
            yield
        except psycopg.Error as exc:
            err = storage_error(exc)
            if err is None:
                raise
            if write or isinstance(exc, psycopg.OperationalError | PoolTimeout):
                self._fault = StorageFault(
                    err.code, err.message, datetime.now(UTC).isoformat(timespec="seconds")
                )
            raise err from exc

    def _check_open(self) -> None:
        if getattr(self, "_closed", False):
            raise UnavailableError("database is closed")

    # -- health ------------------------------------------------------------------------

    @property
    def fault(self) -> StorageFault | None:
        return self._fault

    def storage_status(self) -> dict[str, Any]:
        """Whether writes work, plus what an operator of a shared database asks first:
        the server's version, pgvector's, and how busy the pool is."""
        stats = self.pool.get_stats()
        return fault_status(
            self.probe(),
            backend="postgresql",
            version=self.capabilities.sqlite_version,
            pgvector=self.capabilities.vec_reason,
            url=safe_url(self.url),
            pool={
                "size": stats.get("pool_size", 0),
                "available": stats.get("pool_available", 0),
                "max": self.pool.max_size,
                "waiting": stats.get("requests_waiting", 0),
            },
        )

    def probe(self) -> StorageFault | None:
        if self._fault is None:
            return None
        now = time.monotonic()
        if now - self._last_probe < self.probe_interval_s:
            return self._fault
        self._last_probe = now
        with contextlib.suppress(UnavailableError):
            self.ping()
            self._fault = None
        return self._fault

    def ping(self) -> None:
        """One trivial read within ``DOWN_WAIT_S``: raises when the database does not
        answer, and marks it down, so requests stop waiting the pool's full timeout."""
        self._check_open()
        try:
            with self._borrowed(DOWN_WAIT_S) as conn:
                conn.execute("SELECT 1").fetchone()
        except PoolTimeout as exc:  # every connection busy, or none to be had
            if self._down() and self._back():
                return  # back: the pool reconnects now
            if not self._down() and self._answers():
                return  # busy, not down: the database answers
            with self._guard():
                raise exc from None  # down: marked, and said as a storage error
        except psycopg.Error as exc:
            with self._guard():
                raise exc from None

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._submitter.shutdown(wait=True)
        self.pool.close()


def discover() -> list[tuple[int, str, str]]:
    found = []
    for entry in resources.files("memoryd.storage.postgres.migrations").iterdir():
        match = MIGRATION_FILE.match(entry.name)
        if match:
            found.append((int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    return sorted(found)


def _ensure_pgvector(conn: psycopg.Connection[Any]) -> None:
    """Create the extension (under the migration lock: two servers starting together
    would otherwise race on it), or say why it cannot be."""
    if _scalar(conn, "SELECT 1 FROM pg_extension WHERE extname = 'vector'"):
        return
    if not _scalar(conn, "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"):
        raise UnavailableError(
            "the database server has no pgvector extension: install pgvector on it "
            "(every managed PostgreSQL offers it)"
        )
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise UnavailableError(
            f"cannot create the pgvector extension ({_brief(exc)}): ask an administrator "
            "to run CREATE EXTENSION vector in this database"
        ) from None


def apply_migrations(conn: psycopg.Connection[Any]) -> list[str]:
    """Every pending migration, each in its own transaction with its record, under a
    session advisory lock: a second server starting at once waits, then finds them
    applied."""
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        _ensure_pgvector(conn)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
        applied = []
        for version, name, sql in discover():
            if version in done:
                continue
            with conn.transaction():
                conn.execute(sql.encode())  # our own migration files, not user text
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                    (version, name, datetime.now(UTC).isoformat()),
                )
            applied.append(f"{version:04d}_{name}")
        return applied
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
