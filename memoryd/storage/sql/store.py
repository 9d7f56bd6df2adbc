"""What a SQL store hands straight to its database object: flushing, the fault state,
health, closing. ``SqliteStore`` and ``PostgresStore`` differ only in their sessions."""

from __future__ import annotations

from typing import Any, Protocol, Self

from memoryd.storage.base import StorageFault


class Health(Protocol):
    """The database side both backends' ``db`` objects share."""

    @property
    def fault(self) -> StorageFault | None: ...
    def flush(self) -> None: ...
    def storage_status(self) -> dict[str, Any]: ...
    def probe(self) -> StorageFault | None: ...
    def ping(self) -> None: ...
    def close(self) -> None: ...


class DatabaseStore:
    db: Health

    def flush(self) -> None:
        self.db.flush()

    @property
    def fault(self) -> StorageFault | None:
        return self.db.fault

    def storage_status(self) -> dict[str, Any]:
        return self.db.storage_status()

    def probe(self) -> StorageFault | None:
        return self.db.probe()

    def ping(self) -> None:
        self.db.ping()

    def scrub(self) -> None:
        """PostgreSQL: the committed delete removes the rows from every query; their
        dead tuples stay in the table's pages until VACUUM. SQLite does more."""

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
