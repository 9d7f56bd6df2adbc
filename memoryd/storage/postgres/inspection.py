"""A read-only look at a PostgreSQL database for ``memoryd doctor``.

One direct connection with a short connect timeout, one READ ONLY transaction rolled
back at the end: nothing is created (not the pgvector extension, not the
``schema_migrations`` table), so a database serve has never opened stays untouched.
Besides what is there, it reads what ``serve`` will need to do there itself: create
tables (CREATE on the schema) and, when pgvector is not installed yet, the extension
(superuser, or a trusted extension and CREATE on the database).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from memoryd.errors import UnavailableError
from memoryd.storage.postgres.database import PgConn, redacted, safe_url
from memoryd.storage.sql import kv


@dataclass(frozen=True, slots=True)
class PgState:
    """What the database holds and allows. ``applied`` is None when it has no
    ``schema_migrations`` table (serve has never migrated it)."""

    server_version: str
    pgvector: str | None  # the installed extension's version
    pgvector_available: str | None  # the version the server could install
    pgvector_trusted: bool
    applied: tuple[int, ...] | None
    superuser: bool
    create_in_schema: bool
    create_in_database: bool
    schema: str | None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def can_create_pgvector(self) -> bool:
        return self.superuser or (self.pgvector_trusted and self.create_in_database)


class ReadFailed(UnavailableError):
    """The server answered, but this role could not read what doctor asked (a
    permission refused, a statement timed out)."""


def shown(url: str) -> str:
    """The URL or conninfo string without its password."""
    return safe_url(url)


def _brief(exc: BaseException, url: str) -> str:
    lines = redacted(str(exc), url).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


def _one(conn: psycopg.Connection[Any], query: str) -> Any:
    row = conn.execute(query.encode()).fetchone()
    return row[0] if row else None


def inspect(url: str, *, timeout_s: float) -> PgState:
    """Connect (``timeout_s``, at least libpq's 2 s) and read. Raises ``UnavailableError``
    naming the URL without its password (``ReadFailed`` once connected)."""
    try:
        conn = psycopg.connect(
            url, connect_timeout=max(2, round(timeout_s)), application_name="memoryd doctor"
        )
    except psycopg.Error as exc:
        raise UnavailableError(
            f"cannot connect to PostgreSQL at {shown(url)}: {_brief(exc, url)}"
        ) from None
    try:
        conn.read_only = True
        return _read(conn)
    except psycopg.Error as exc:
        raise ReadFailed(
            f"PostgreSQL at {shown(url)} answered, but reading it failed: {_brief(exc, url)}"
        ) from None
    finally:
        conn.rollback()
        conn.close()


def _read(conn: psycopg.Connection[Any]) -> PgState:
    conn.execute(b"SET LOCAL statement_timeout = 5000")
    version = str(_one(conn, "SHOW server_version"))
    installed = _one(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    available = conn.execute(
        b"SELECT v.version, v.trusted FROM pg_available_extensions a "
        b"JOIN pg_available_extension_versions v "
        b"ON v.name = a.name AND v.version = a.default_version WHERE a.name = 'vector'"
    ).fetchone()
    schema = _one(conn, "SELECT current_schema()")
    migrated = _one(conn, "SELECT to_regclass('schema_migrations') IS NOT NULL")
    applied = None
    if migrated:
        rows = conn.execute(b"SELECT version FROM schema_migrations ORDER BY version")
        applied = tuple(int(v) for (v,) in rows)
    has_settings = _one(conn, "SELECT to_regclass('settings') IS NOT NULL")
    return PgState(
        server_version=version,
        pgvector=str(installed) if installed else None,
        pgvector_available=str(available[0]) if available else None,
        pgvector_trusted=bool(available and available[1]),
        applied=applied,
        superuser=bool(_one(conn, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")),
        create_in_schema=bool(
            schema and _one(conn, "SELECT has_schema_privilege(current_schema(), 'CREATE')")
        ),
        create_in_database=bool(
            _one(conn, "SELECT has_database_privilege(current_database(), 'CREATE')")
        ),
        schema=str(schema) if schema else None,
        settings=kv.read_all(PgConn(conn)) if has_settings else {},
    )
