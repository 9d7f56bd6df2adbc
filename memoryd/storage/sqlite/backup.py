"""An online backup of the memoryd database: SQLite's backup API over a live file.

Safe while a server writes to the same file: the source is read through its own
connection in one read transaction (WAL lets writers go on meanwhile), so the copy
is a consistent snapshot of the moment the copy began; every write acknowledged
before that moment is in it. The whole copy is one backup step, so concurrent writes
never restart it.

The copy is written to a hidden temporary file next to the destination (mode 0600:
it holds every memory and the provider keys), switched to ``journal_mode = DELETE``
so the backup is one self-contained file, checked with ``PRAGMA integrity_check``,
fsynced, and only then moved into place: a failed backup leaves nothing behind, and
without ``force`` an existing destination is never replaced, even one that appears
while the copy runs.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw

from memoryd.errors import ConflictError, NotFoundError, UnavailableError, ValidationError
from memoryd.storage.sqlite.files import check_database_file

BUSY_RETRY_S = 30.0


@dataclass(frozen=True, slots=True)
class BackupResult:
    path: Path
    bytes: int
    memories: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "bytes": self.bytes,
            "memories": self.memories,
            "integrity": "ok",
            "seconds": round(self.seconds, 3),
        }


def default_name(now: datetime | None = None) -> str:
    """``memoryd-20260102-030405.db``: the file name used when the destination is a dir."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"memoryd-{stamp}.db"


def _target(source: Path, dest: Path, force: bool) -> Path:
    if not source.is_file():
        raise NotFoundError(f"no database at {source}")
    check_database_file(source)  # an empty or foreign file is no backup of anything
    if dest.is_dir():
        dest = dest / default_name()
    if not dest.parent.is_dir():
        raise NotFoundError(f"the directory {dest.parent} does not exist")
    if dest.exists():
        if dest.resolve() == source.resolve():
            raise ValidationError(f"{dest} is the database itself; back up to another file")
        if not force:
            raise ConflictError(f"{dest} already exists (pass --force to overwrite it)")
        if dest.is_dir():
            raise ConflictError(f"{dest} is a directory")
    return dest


def _copy(source: Path, tmp: Path, busy_timeout_ms: int) -> int:
    """Copy ``source`` into the empty file ``tmp``; returns the memory count."""
    src = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READWRITE)  # never creates
    try:
        src.set_busy_timeout(busy_timeout_ms)
        dst = apsw.Connection(str(tmp))
        try:
            deadline = time.monotonic() + BUSY_RETRY_S
            with dst.backup("main", src, "main") as job:
                while not job.done:
                    try:
                        job.step(-1)  # one step: one snapshot, never restarted by writers
                    except (apsw.BusyError, apsw.LockedError):
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.05)
            dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            check = [str(row[0]) for row in dst.execute("PRAGMA integrity_check")]
            if check != ["ok"]:
                raise UnavailableError(f"the backup failed its integrity check: {check[:5]}")
            try:
                (count,) = next(dst.execute("SELECT count(*) FROM memories"))
            except apsw.SQLError:  # not initialised yet: an empty database
                count = 0
        finally:
            dst.close()
    finally:
        src.close()
    return int(count)


def _fsync(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def backup_database(
    source: str | Path, dest: str | Path, *, force: bool = False, busy_timeout_ms: int = 10_000
) -> BackupResult:
    """Back ``source`` up to ``dest`` (a file, or a directory to put a dated file in).

    Raises ``NotFoundError`` (no source, no destination directory), ``ConflictError``
    (the destination exists and ``force`` is off), ``UnavailableError`` (the copy
    failed: locked for too long, disk full, integrity check)."""
    started = time.perf_counter()
    source, dest = Path(source).expanduser(), Path(dest).expanduser()
    target = _target(source, dest, force)
    tmp = target.parent / f".{target.name}.{uuid.uuid4().hex[:12]}.tmp"
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        try:
            memories = _copy(source, tmp, busy_timeout_ms)
        except apsw.Error as exc:
            raise UnavailableError(f"backup of {source} failed: {exc}") from None
        _fsync(tmp)
        if force:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)  # atomic, and fails if the target appeared meanwhile
            except FileExistsError:
                raise ConflictError(
                    f"{target} already exists (pass --force to overwrite it)"
                ) from None
            tmp.unlink()
        _fsync(target.parent, directory=True)
    finally:
        for leftover in (tmp, Path(f"{tmp}-journal"), Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    return BackupResult(target, target.stat().st_size, memories, time.perf_counter() - started)
