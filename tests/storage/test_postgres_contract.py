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


def test_a_deadlocked_write_is_run_again(pg_url: str) -> None:
    """Two writes that lock the same rows in opposite orders: PostgreSQL aborts one of
    them, and the store runs it again, so both land (SQLite's single writer never
    deadlocks, so callers need not know)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from memoryd.models import MemoryPatch
    from memoryd.storage.base import Writer
    from memoryd.storage.postgres.store import PostgresStore
    from tests.storage.contract import NOW, add

    store = PostgresStore.open(pg_url)
    try:
        first, second = add(store, "a", "one"), add(store, "a", "two")
        both_locked = threading.Barrier(2, timeout=30)
        runs = {"x": 0, "y": 0}

        def crossing(name: str, order: list[str]) -> None:
            def fn(w: Writer) -> None:
                runs[name] += 1
                w.update(order[0], MemoryPatch(content=f"{name} first"), NOW)
                if runs[name] == 1:
                    both_locked.wait()  # each holds one row and wants the other's
                w.update(order[1], MemoryPatch(content=f"{name} second"), NOW)

            store.write(fn)

        with ThreadPoolExecutor(2) as pool:
            done = [
                pool.submit(crossing, "x", [first.id, second.id]),
                pool.submit(crossing, "y", [second.id, first.id]),
            ]
            for future in done:
                future.result(timeout=60)
        assert sorted(runs.values()) == [1, 2]  # one was aborted and ran again
    finally:
        store.close()


def test_servers_preparing_pgvector_together_build_one_table(pg_url: str) -> None:
    """Four servers' vector indexes made ready at once for the same embedder: one
    builds ``vec_memories``, the others find it ready (they raced on CREATE TABLE)."""
    from concurrent.futures import ThreadPoolExecutor

    from memoryd.storage.postgres.store import PostgresStore
    from memoryd.vectors.pgvector import PgVectorStore

    stores = [PostgresStore.open(pg_url) for _ in range(4)]
    try:
        vectors = [PgVectorStore(s.db) for s in stores]
        with ThreadPoolExecutor(4) as pool:
            states = list(pool.map(lambda v: v.ensure_ready("test:dim8:8", 8), vectors))
        assert all(state.ready for state in states)
        assert not any(state.recreated for state in states)
        assert vectors[0].stats()["activeDim"] == 8
    finally:
        for store in stores:
            store.close()
