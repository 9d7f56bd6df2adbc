"""The Store contract on PostgreSQL (a real server with pgvector, see ``pg_server``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memoryd.storage.base import Store
from tests.storage.contract import StoreContract

pytest.importorskip("psycopg")


class TestPostgresStore(StoreContract):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[Store]:
        from memoryd.storage.postgres.store import PostgresStore

        store = PostgresStore.open(pg_url)
        try:
            yield store
        finally:
            store.close()


def test_servers_starting_together_migrate_once(pg_url: str) -> None:
    """Four stores opening a fresh database at once: the extension and every migration
    are applied exactly once, under the advisory lock, and all four work."""
    from concurrent.futures import ThreadPoolExecutor

    import psycopg

    from memoryd.storage.postgres.store import PostgresStore

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: PostgresStore.open(pg_url), range(4)))
    try:
        for store in stores:
            assert store.read().count() == 0
    finally:
        for store in stores:
            store.close()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT version, COUNT(*) FROM schema_migrations GROUP BY 1").fetchall()
    assert rows
    assert all(n == 1 for _, n in rows)


def test_a_bad_or_unreachable_database_is_one_clear_error(pg_url: str) -> None:
    from memoryd.errors import UnavailableError
    from memoryd.storage.postgres.store import PostgresStore

    with pytest.raises(UnavailableError, match="cannot connect to PostgreSQL") as refused:
        PostgresStore.open("postgresql://nobody@127.0.0.1:1/none")
    assert "Connection refused" in refused.value.message
    with pytest.raises(UnavailableError, match="cannot connect to PostgreSQL"):
        PostgresStore.open(pg_url.replace("dbname=", "dbname=missing_"))
