"""One SQLite file: a single writer thread, per-thread read connections, migrations.

Why a writer thread: SQLite allows one writer at a time. Funnelling every write
through one connection on one thread means no caller ever sees ``database is locked``
from contention inside this process; concurrent writers just queue. Queued writes
are group-committed: the writer takes everything waiting (up to ``MAX_BATCH``), runs
each task in its own SAVEPOINT inside one ``BEGIN IMMEDIATE`` transaction, and
acknowledges each task only after the COMMIT, so an acknowledged write is durable and
one failing task rolls back only itself.

Reads run on a connection per thread (``query_only``), concurrently with the writer
thanks to WAL. The driver is apsw, because the stdlib ``sqlite3`` here cannot load
extensions (sqlite-vec).

Storage faults (disk full, I/O errors) fail the writes they hit with
``StorageFullError`` / ``StorageUnavailableError`` (never acknowledged, so never
lost), are remembered as ``fault`` for health and status, and clear by themselves on
the next commit that changes something; the writer thread carries on throughout.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import apsw

from memoryd.errors import UnavailableError
from memoryd.storage.base import Capabilities, StorageFault, fault_status
from memoryd.storage.sqlite.faults import fault_of, probe_write, storage_error
from memoryd.storage.sqlite.files import discard_if_empty, prepare_database_file
from memoryd.storage.sqlite.migrations import apply_migrations

log = logging.getLogger(__name__)

T = TypeVar("T")
Connection = apsw.Connection
MAX_BATCH = 64
PROBE_INTERVAL_S = 5.0  # a degraded database tries one probe write at most this often
PROBE_TIMEOUT_S = 2.0


def _lower(*args: apsw.SQLiteValue) -> apsw.SQLiteValue:
    (value,) = args
    return value.lower() if isinstance(value, str) else value


def probe_fts5(conn: Connection) -> tuple[bool, str]:
    """Whether this SQLite build has FTS5, and why not (a temp table: nothing persists;
    the store and ``memoryd doctor`` ask the same way)."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp._memoryd_fts_probe USING fts5(x)")
        try:
            conn.execute("INSERT INTO temp._memoryd_fts_probe(x) VALUES ('probe works')")
            rows = list(
                conn.execute("SELECT rowid FROM temp._memoryd_fts_probe WHERE x MATCH 'probe'")
            )
        finally:
            conn.execute("DROP TABLE temp._memoryd_fts_probe")
    except apsw.Error as exc:
        return False, f"FTS5 unavailable in this SQLite build: {exc}"
    if len(rows) != 1:
        return False, "FTS5 probe returned wrong results"
    return True, "FTS5 available"


def load_vec_extension(conn: Connection) -> tuple[bool, str]:
    """Load sqlite-vec into ``conn``: (loaded, its version or why not)."""
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        (version,) = next(conn.execute("SELECT vec_version()"))
    except Exception as exc:  # ImportError, apsw.Error, OSError: all mean "no vec tier"
        return False, f"sqlite-vec not loadable: {exc}"
    return True, f"sqlite-vec {version}"


class _WriteTask:
    __slots__ = ("fn", "future")

    def __init__(self, fn: Callable[[Connection], Any]) -> None:
        self.fn = fn
        self.future: Future[Any] = Future()


class Database:
    """The memoryd SQLite file. ``write(fn)`` runs ``fn(conn)`` on the writer thread
    inside a transaction and returns its result; ``read()`` gives this thread's
    read-only connection."""

    def __init__(
        self, path: str | Path, *, load_vec: bool = True, busy_timeout_ms: int = 10_000
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.created = prepare_database_file(self.path)  # 0600, and refuses non-SQLite
        self._busy_timeout_ms = busy_timeout_ms
        self._want_vec = load_vec
        self._local = threading.local()
        # Weak: a thread's connection goes with the thread. The server's worker threads
        # come and go (anyio ends one idle for 10 s), and a list kept every connection a
        # thread ever opened, with its page cache and file handles, for the process's life.
        self._readers: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._readers_lock = threading.Lock()
        self._closed = False
        self._fault: StorageFault | None = None
        self._last_probe = 0.0
        self.probe_interval_s = PROBE_INTERVAL_S

        self._writer = self._open_writer()
        fts5, fts5_reason = probe_fts5(self._writer)
        vec, vec_reason = (
            load_vec_extension(self._writer)
            if load_vec
            else (False, "disabled by MEMORY_DISABLE_VEC")  # the one way it is turned off
        )
        deferred = apply_migrations(self._writer, fts5=fts5)
        (version,) = next(self._writer.execute("SELECT sqlite_version()"))
        self.capabilities = Capabilities(
            fts5=fts5,
            fts5_reason=fts5_reason,
            vec=vec,
            vec_reason=vec_reason,
            sqlite_version=str(version),
            deferred_migrations=tuple(deferred),
        )

        self._queue: queue.Queue[_WriteTask | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run_writer, name="memoryd-writer", daemon=True)
        self._thread.start()

    # -- connections -------------------------------------------------------------------

    def _open_writer(self) -> Connection:
        """The writer connection in WAL mode. A file created just now and left empty by
        a failure here is removed, so the next start does not refuse it as damaged."""
        conn: Connection | None = None
        try:
            conn = self._connect(read_only=False)
            conn.execute("PRAGMA journal_mode = WAL")
            # a deleted memory's bytes are zeroed, not left in free pages
            conn.execute("PRAGMA secure_delete = ON")
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if self.created:
                discard_if_empty(self.path)
            if isinstance(exc, apsw.NotADBError | apsw.CorruptError):
                raise UnavailableError(
                    f"the database {self.path} is damaged ({exc}): restore it from a backup "
                    "(memoryd backup), or move it away to start with a new database"
                ) from None
            raise
        return conn

    def _connect(self, *, read_only: bool) -> Connection:
        conn = apsw.Connection(str(self.path))
        conn.set_busy_timeout(self._busy_timeout_ms)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        # SQLite's lower() folds ASCII only: "Émile" would never match a search for it.
        conn.create_scalar_function("lower", _lower, 1, deterministic=True)
        if read_only:
            if self._want_vec and getattr(self, "capabilities", None) and self.capabilities.vec:
                load_vec_extension(conn)
            conn.execute("PRAGMA query_only = 1")
        return conn

    def checkpoint(self, attempts: int = 20) -> bool:
        """Copy the write-ahead log into the file and truncate it to nothing, so no
        older page image (a deleted memory's text) survives in it; True once done. A
        reader in the middle of a snapshot (a backup) holds the log: each try waits at
        most 50 ms (a waiting checkpoint holds writers back), a few seconds in all."""
        self.flush()
        conn = apsw.Connection(str(self.path))
        conn.set_busy_timeout(50)
        try:
            for _ in range(attempts):
                try:
                    row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                except apsw.BusyError:
                    row = None
                if row is not None and not row[0]:
                    return True
                time.sleep(0.1)
            log.warning("the write-ahead log is held by a reader: not truncated")
            return False
        finally:
            conn.close()

    def read(self) -> Connection:
        """This thread's read-only connection (opened on first use)."""
        if self._closed:
            raise UnavailableError("database is closed")
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect(read_only=True)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.add(conn)
        return conn

    def ping(self) -> None:
        """One trivial read: raises when the database does not answer (``/healthz``)."""
        self.read().execute("SELECT 1").fetchall()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction: several SELECTs that see one consistent state."""
        conn = self.read()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # -- writes ------------------------------------------------------------------------

    def write(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` in a write transaction and return its result once committed."""
        if threading.current_thread() is self._thread:
            return self._nested(fn)
        return self.submit(fn).result()

    def _nested(self, fn: Callable[[Connection], T]) -> T:
        """A write inside a write joins its transaction, all or nothing by itself: if it
        raises, what it changed is undone even when the caller catches the error."""
        conn = self._writer
        conn.execute("SAVEPOINT nested")
        try:
            result = fn(conn)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK TO nested")
                conn.execute("RELEASE nested")
            raise
        conn.execute("RELEASE nested")
        return result

    def submit(self, fn: Callable[[Connection], T]) -> Future[T]:
        """Queue ``fn`` for the writer without waiting (fire-and-forget bookkeeping)."""
        if self._closed:
            raise UnavailableError("database is closed")
        task = _WriteTask(fn)
        self._queue.put(task)
        return task.future

    def flush(self) -> None:
        """Wait until every write queued before this call has committed."""
        if not self._closed:
            self.write(lambda _conn: None)

    def _run_writer(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._commit_batch(batch)
            if stop:
                return

    def _commit_batch(self, batch: list[_WriteTask]) -> None:
        conn = self._writer
        outcomes: list[tuple[bool, Any]] = []
        faulted = False
        try:
            changes = conn.total_changes()
            conn.execute("BEGIN IMMEDIATE")
            for task in batch:
                conn.execute("SAVEPOINT task")
                try:
                    result = task.fn(conn)
                except BaseException as exc:
                    if not conn.in_transaction:  # SQLite rolled it all back (FULL, IOERR)
                        raise
                    conn.execute("ROLLBACK TO task")
                    conn.execute("RELEASE task")
                    err = storage_error(exc)
                    if err is not None:
                        self._set_fault(err)
                        faulted = True
                    outcomes.append((False, err or exc))
                else:
                    conn.execute("RELEASE task")
                    outcomes.append((True, result))
            conn.execute("COMMIT")
        except BaseException as exc:
            err = storage_error(exc)
            if err is None:
                log.exception("write transaction failed")
            else:
                self._set_fault(err)
            with contextlib.suppress(apsw.Error):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            for task in batch:
                if not task.future.done():
                    task.future.set_exception(err or exc)
            return
        if not faulted and conn.total_changes() > changes:
            self._clear_fault()
        for task, (ok, value) in zip(batch, outcomes, strict=True):
            if ok:
                task.future.set_result(value)
            else:
                task.future.set_exception(value)

    # -- storage faults ----------------------------------------------------------------

    @property
    def fault(self) -> StorageFault | None:
        """The storage fault the last writes hit (None: writes work)."""
        return self._fault

    def _set_fault(self, err: UnavailableError) -> None:
        current = self._fault
        if current is not None and current.code == err.code:
            return  # the same fault goes on: keep when it began
        self._fault = fault_of(err)
        log.error("storage fault, writes are failing: %s", self._fault.reason)

    def _clear_fault(self) -> None:
        if self._fault is not None:
            log.warning("storage recovered (fault since %s): writes work again", self._fault.since)
            self._fault = None

    def storage_status(self) -> dict[str, Any]:
        """The ``storage`` block of engine status: whether writes work (a disk-full or
        I/O fault the last writes hit, until the next successful write clears it)."""
        return fault_status(
            self.probe(), backend="sqlite", version=self.capabilities.sqlite_version
        )

    def probe(self) -> StorageFault | None:
        """The current fault, after one cheap write attempt if degraded and the last
        attempt is ``probe_interval_s`` old: a fault clears without any traffic."""
        fault = self._fault
        now = time.monotonic()
        if fault is None or self._closed or now - self._last_probe < self.probe_interval_s:
            return fault
        self._last_probe = now
        with contextlib.suppress(Exception):  # the outcome is in self._fault
            self.submit(probe_write).result(timeout=PROBE_TIMEOUT_S)
        return self._fault

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Drain queued writes, stop the writer, close every connection."""
        if self._closed:
            return
        self._queue.put(None)
        self._thread.join()
        self._closed = True
        with self._readers_lock:
            readers = list(self._readers)
            self._readers.clear()
        for conn in readers:
            with contextlib.suppress(apsw.Error):
                conn.close()
        self._writer.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
