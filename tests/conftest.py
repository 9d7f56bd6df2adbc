"""Shared fixtures: a real engine on a real store, in a temporary data dir.

``engine`` and ``semantic_engine`` run on the SQLite file by default; a module that
overrides ``store_kind`` with ``params=STORES`` runs every test on both stores (the
PostgreSQL one is a fresh database on a real server, see ``pg_server``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.embedding.service import Resolver
from memoryd.engine import MemoryEngine
from memoryd.models import Memory, MemoryType, NewMemory


def make_engine(
    data_dir: Path,
    env: Mapping[str, str] | None = None,
    *,
    resolver: Resolver | None,
    start_indexing: bool = True,
) -> MemoryEngine:
    """The one way a test builds an engine by hand: a real SQLite file in ``data_dir``,
    configured from ``env`` (the data dir added) as ``memoryd serve`` would be, with
    ``resolver`` choosing the embedder (``embedders.no_source``: keyword only)."""
    full = {"MEMORYD_DATA_DIR": str(data_dir), **(env or {})}
    return build_engine(
        EngineConfig.from_env(full, data_dir=data_dir),
        full,
        embedding_resolver=resolver,
        start_indexing=start_indexing,
    )


#: The primary stores a parametrized module runs on.
STORES = ["sqlite", "postgres"]


@pytest.fixture
def store_kind() -> str:
    """Which primary store ``engine`` uses; a module overrides this fixture with
    ``@pytest.fixture(params=STORES)`` to run on both."""
    return "sqlite"


@pytest.fixture
def store_env(store_kind: str, request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment that selects ``store_kind`` (a fresh database for PostgreSQL)."""
    if store_kind == "postgres":
        return {"MEMORYD_DATABASE_URL": request.getfixturevalue("pg_url")}
    return {}


@pytest.fixture
def engine(tmp_path: Path, store_env: dict[str, str]) -> Iterator[MemoryEngine]:
    """Keyword-only: no embedding source (the vector tier has its own fixtures)."""
    from tests.embedders import no_source

    data = tmp_path / "data"
    eng = make_engine(data, store_env, resolver=no_source)
    try:
        yield eng
    finally:
        eng.close()


@pytest.fixture
def semantic_engine(tmp_path: Path, store_env: dict[str, str]) -> Iterator[MemoryEngine]:
    """The vector tier on, with the deterministic hash embedder (tests/embedders.py)."""
    from tests.embedders import fixed_resolver

    data = tmp_path / "sdata"
    eng = make_engine(data, store_env, resolver=fixed_resolver("hash", 64))
    try:
        yield eng
    finally:
        eng.close()


def add(
    engine: MemoryEngine,
    owner: str,
    content: str,
    *,
    key: str | None = None,
    type: MemoryType = MemoryType.FACTUAL,
    session_id: str = "",
    metadata: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    created_at: datetime | None = None,
) -> Memory:
    """Create a memory; ``created_at`` backdates a new one (as an import does)."""
    memory, _ = engine.create(
        NewMemory(
            api_key_id=owner,
            content=content,
            key=key,
            type=type,
            session_id=session_id,
            metadata=metadata,
            expires_at=expires_at,
            created_at=created_at,
        )
    )
    return memory


class RecordingConnection:
    """A read connection that passes statements through and remembers each one, so a
    test can read the query plans of what a search really ran."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.statements: list[tuple[str, list[Any]]] = []

    def execute(self, statement: str, params: Any = ()) -> Any:
        self.statements.append((statement, list(params)))
        return self.conn.execute(statement, params)

    def plan(self, index: int = -1) -> list[str]:
        """The steps of ``EXPLAIN QUERY PLAN`` for one recorded statement."""
        statement, params = self.statements[index]
        return [str(r[3]) for r in self.conn.execute(f"EXPLAIN QUERY PLAN {statement}", params)]


def raw_write(engine: MemoryEngine, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement (``?`` placeholders) on whichever store ``engine`` uses, for
    the few tests that must set a row the service API never would (an old timestamp on
    an extracted fact)."""
    db: Any = engine.store.db  # type: ignore[attr-defined]
    if engine.store.capabilities.backend == "postgresql":
        db.write(lambda conn: conn.execute(sql.replace("?", "%s"), params))
    else:
        db.write(lambda conn: conn.execute(sql, params))


ADMIN = "test-admin-token"


@pytest.fixture
def client(engine: MemoryEngine) -> Iterator[Any]:
    """The real app in process over ASGI, authenticated with the admin token."""
    from fastapi.testclient import TestClient

    from memoryd.app import create_app

    app = create_app(engine, admin_token=ADMIN)
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        yield http


# -- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL with pgvector for the whole run: ``MEMORYD_TEST_DATABASE_URL``
    when given, else a throwaway server (``memoryd.testing.postgres``)."""
    import os

    from memoryd.testing.postgres import throwaway_server

    given = os.environ.get("MEMORYD_TEST_DATABASE_URL")
    with throwaway_server(tmp_path_factory.mktemp("pg"), given=given) as url:
        yield url


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty database on the test server, dropped afterwards."""
    from memoryd.testing.postgres import fresh_database

    with fresh_database(pg_server) as url:
        yield url


def sqlite_at_version(path: Path, version: int) -> Any:
    """A SQLite file with migrations 1..``version`` applied and recorded, as an older
    release left it (an open apsw connection: the caller adds rows and closes it)."""
    import apsw

    from memoryd.storage.sqlite import migrations

    conn = apsw.Connection(str(path))
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)"
    )
    for migration in migrations.discover():
        if migration.version <= version:
            conn.execute(migration.sql)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, '2026-11-01T00:00:00+00:00')",
                (migration.version, migration.name),
            )
    return conn


# -- markers --------------------------------------------------------------------------------

TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test is marked with its package (``pytest -m storage``): the suite is shaped
    like the code, so a change to one package names the tests to run first."""
    for item in items:
        parts = item.path.resolve().relative_to(TESTS).parts
        if len(parts) > 1:
            item.add_marker(getattr(pytest.mark, parts[0]))
