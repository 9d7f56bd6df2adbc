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
