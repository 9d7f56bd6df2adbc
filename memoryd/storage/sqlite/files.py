"""Private files: the database, its WAL and SHM, backups and exports are mode 0600.

They hold every memory and the provider keys, so their mode must not depend on the
umask or on the data dir's mode. SQLite creates ``-wal`` and ``-shm`` with the mode of
the database file, so creating the database file ourselves (``O_EXCL``, 0600) before
SQLite opens it covers all three. Files found group- or world-accessible are
tightened with a warning, as the admin token file is.

The database file is also checked before SQLite sees it: SQLite treats a zero-byte
file as a new empty database and only fails late on a foreign one, so a truncated or
overwritten ``memoryd.db`` would otherwise start an empty server silently.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO

from memoryd.errors import UnavailableError

log = logging.getLogger(__name__)

PRIVATE = 0o600
SQLITE_HEADER = b"SQLite format 3\x00"


def tighten(path: Path) -> None:
    """Make an existing file 0600 if others can access it (a warning says so)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if not mode & 0o077:
        return
    try:
        os.chmod(path, PRIVATE)
    except OSError as exc:
        log.warning("%s is readable by others (mode %o) and chmod failed: %s", path, mode, exc)
    else:
        log.warning("%s was readable by others (mode %o); changed it to 0600", path, mode)


def create_private(path: Path) -> bool:
    """Create ``path`` empty with mode 0600; False if it already exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def open_private(path: Path) -> IO[str]:
    """Open ``path`` for writing text (created 0600, or truncated and tightened)."""
    tighten(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE)
    return os.fdopen(fd, "w", encoding="utf-8")


def private_output(path: Path | None) -> AbstractContextManager[IO[str]]:
    """Where an export goes: the file ``path`` (0600), or stdout for None."""
    return nullcontext(sys.stdout) if path is None else open_private(path)


def check_database_file(path: Path) -> None:
    """Refuse a database file that is empty or not SQLite, naming it and the way out."""
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise UnavailableError(f"cannot read the database {path}: {exc.strerror}") from None
    if not header:
        raise UnavailableError(
            f"the database {path} is empty (0 bytes), not a memoryd database: restore it "
            "from a backup (memoryd backup), or move it away to start with a new database"
        )
    if header != SQLITE_HEADER:
        raise UnavailableError(
            f"the database {path} is not an SQLite file: restore it from a backup "
            "(memoryd backup), or move it away to start with a new database"
        )


def prepare_database_file(path: Path) -> bool:
    """Before SQLite opens ``path``: create it 0600 if absent (True: a new database),
    else check it is SQLite and tighten it and its WAL/SHM."""
    if create_private(path):
        return True
    check_database_file(path)
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        tighten(file)
    return False


def discard_if_empty(path: Path) -> None:
    """Remove ``path`` if it is still the empty file ``create_private`` made."""
    with contextlib.suppress(OSError):
        if path.stat().st_size == 0:
            path.unlink()


def warn_if_open_dir(path: Path) -> None:
    """Log a warning when the data dir is group- or world-accessible."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return
    if mode & 0o077:
        log.warning(
            "the data dir %s is accessible by other users (mode %o); run: chmod 700 %s",
            path,
            mode,
            path,
        )
