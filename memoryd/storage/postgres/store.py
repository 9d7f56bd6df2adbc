"""``PostgresStore``: the Store contract (``memoryd.storage.base``) on PostgreSQL.

Sessions are ``storage.sql.SqlSession`` with the PostgreSQL dialect, over ``PgConn``
(the portable SQL's placeholders): bound to one connection inside ``write`` and
``snapshot``, or taking a pooled connection per call (``read()``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

from memoryd.storage.base import Capabilities, Change, Reader, Writer
from memoryd.storage.postgres.changes import ChangeListener
from memoryd.storage.postgres.database import PgConn, PgDatabase
from memoryd.storage.postgres.dialect import PostgresDialect
from memoryd.storage.postgres.keywords import ResidentKeywords
from memoryd.storage.sql.session import SqlSession
from memoryd.storage.sql.store import DatabaseStore

T = TypeVar("T")


class PostgresStore(DatabaseStore):
    """The shared store for several memoryd servers (``MEMORYD_DATABASE_URL``)."""

    db: PgDatabase

    def __init__(self, db: PgDatabase, *, keyword_min_rows: int = 0, budget_mb: int = 256) -> None:
        self.db = db
        self.capabilities: Capabilities = db.capabilities
        self.dialect = PostgresDialect()  # it caches this database's term statistics
        self.changes = ChangeListener(db.url)
        if keyword_min_rows > 0:  # large owners' postings in memory, fresh by the feed
            self.keywords = ResidentKeywords(
                db, min_rows=keyword_min_rows, budget_bytes=budget_mb * 2**20
            )
            self.dialect.resident = self.keywords
            self.watch(self.keywords.changed)

    def _bound(self, conn: Any) -> SqlSession:
        """A session on one connection (inside a write or a snapshot)."""
        wrapped = PgConn(conn)
        return SqlSession(lambda fn: fn(wrapped), self.dialect, wrapped)

    keywords: ResidentKeywords | None = None

    @classmethod
    def open(
        cls, url: str, *, pool_size: int = 10, keyword_min_rows: int = 0, budget_mb: int = 256
    ) -> PostgresStore:
        return cls(
            PgDatabase(url, max_size=pool_size),
            keyword_min_rows=keyword_min_rows,
            budget_mb=budget_mb,
        )

    def read(self) -> Reader:
        return SqlSession(lambda fn: self.db.run(lambda conn: fn(PgConn(conn))), self.dialect)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Reader]:
        with self.db.snapshot() as conn:
            yield self._bound(conn)

    def write(self, fn: Callable[[Writer], T]) -> T:
        return self.db.write(lambda conn: fn(self._bound(conn)))

    def submit(self, fn: Callable[[Writer], T]) -> Future[T]:
        return self.db.submit(lambda conn: fn(self._bound(conn)))

    def watch(self, fn: Callable[[Change], None]) -> None:
        """Changes committed by any server (this one's too), from ``LISTEN``."""
        self.changes.add(fn)

    def storage_status(self) -> dict[str, Any]:
        status = {**self.db.storage_status(), "changeFeed": self.changes.status()}
        if self.keywords is not None:
            status["residentKeywords"] = self.keywords.stats()
        return status

    def close(self) -> None:
        self.changes.close()
        self.db.close()
