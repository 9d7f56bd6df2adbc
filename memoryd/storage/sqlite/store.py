"""``SqliteStore``: the Store contract (``memoryd.storage.base``) over one SQLite file.

A session is ``storage.sql.SqlSession`` bound to one connection, with the SQLite
dialect (FTS5, the outbox's triggers): reads on the calling thread's read-only
connection, writes on the writer thread inside ``Database.write`` (one transaction,
group-committed with its neighbours).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

from memoryd.storage.base import Capabilities, Change, Reader, Writer
from memoryd.storage.sql.session import SqlSession
from memoryd.storage.sql.store import DatabaseStore
from memoryd.storage.sqlite.database import Connection, Database
from memoryd.storage.sqlite.dialect import SqliteDialect
from memoryd.storage.sqlite.keywords import ResidentKeywords

T = TypeVar("T")


class SqliteStore(DatabaseStore):
    """The embedded default store. ``db`` is the underlying ``Database`` for the parts
    that are SQLite by nature (sqlite-vec, backup, repair) and for tests."""

    db: Database

    def __init__(self, db: Database, *, keywords: ResidentKeywords | None = None) -> None:
        self.db = db
        self.capabilities: Capabilities = db.capabilities
        self._dialect = SqliteDialect(fts5=db.capabilities.fts5, keywords=keywords)
        if keywords is not None:
            keywords.reader = db.snapshot  # its background builds read their own snapshot

    @property
    def keywords(self) -> ResidentKeywords | None:
        """The resident keyword copies, when this process keeps them."""
        return self._dialect.keywords

    @classmethod
    def open(cls, path: str | Path, *, load_vec: bool = True) -> SqliteStore:
        return cls(Database(path, load_vec=load_vec))

    @property
    def path(self) -> Path:
        return self.db.path

    def _session(self, conn: Connection) -> SqlSession:
        return SqlSession(lambda fn: fn(conn), self._dialect, conn)

    def read(self) -> Reader:
        return self._session(self.db.read())

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Reader]:
        with self.db.snapshot() as conn:
            yield self._session(conn)

    def write(self, fn: Callable[[Writer], T]) -> T:
        return self.db.write(lambda conn: fn(self._session(conn)))

    def submit(self, fn: Callable[[Writer], T]) -> Future[T]:
        return self.db.submit(lambda conn: fn(self._session(conn)))

    def scrub(self) -> None:
        """Deleted content is zeroed as it goes (``secure_delete``); the write-ahead log
        still holds older images of those pages until it is checkpointed and cut."""
        self.db.checkpoint()

    def watch(self, fn: Callable[[Change], None]) -> None:
        """Never called back: one server owns a SQLite file (the data-dir lock), and its
        own writes drop its caches. What the CLI writes beside it is seen after the
        caches' short TTL."""
        del fn
