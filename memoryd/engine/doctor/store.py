"""The primary store: the migrations the package ships, the database serve would open
(the SQLite file or the PostgreSQL URL) and where its schema stands against them.

Read-only throughout: the SQLite file is opened read-only (and not at all when it does
not exist), PostgreSQL in one READ ONLY transaction; nothing is created or migrated.
A database whose schema is behind the package is an upgrade serve applies at start
(a warning: take a backup first); one it cannot apply, one ahead of the package, or a
package that ships no migration files stops serve from working (a failure).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from memoryd.engine.doctor.network import bounded
from memoryd.engine.doctor.report import REINSTALL, Check, Setup, fail, ok, warn
from memoryd.errors import UnavailableError
from memoryd.storage.sql.migration_files import MIGRATION_FILE

if TYPE_CHECKING:
    from memoryd.storage.postgres.inspection import PgState

BACKENDS = {
    "sqlite": ("SQLite", "memoryd.storage.sqlite.migrations"),
    "postgres": ("PostgreSQL", "memoryd.storage.postgres.migrations"),
}


@dataclass(frozen=True, slots=True)
class Shipped:
    """The migration files one backend's package holds."""

    label: str
    folder: str
    names: dict[int, str]
    problem: str | None

    @property
    def latest(self) -> int:
        return max(self.names, default=0)

    def named(self, versions: list[int]) -> str:
        shown = [f"{v:04d}_{self.names.get(v, '?')}" for v in versions[:4]]
        return ", ".join(shown) + (f" and {len(versions) - 4} more" if len(versions) > 4 else "")


def shipped(backend: str) -> Shipped:
    label, package = BACKENDS[backend]
    relative = package.replace(".", "/")
    try:
        root = resources.files(package)
        folder = str(root)
        names = {
            int(match[1]): match[2]
            for entry in root.iterdir()
            if (match := MIGRATION_FILE.match(entry.name))
        }
    except (ModuleNotFoundError, OSError):
        return Shipped(label, relative, {}, f"{relative}/ is missing from the package")
    if not names:
        return Shipped(label, folder, {}, f"{relative}/*.sql missing (none in {folder})")
    gaps = sorted(set(range(1, max(names) + 1)) - set(names))
    if gaps:
        missing = ", ".join(f"{v:04d}_*.sql" for v in gaps)
        return Shipped(label, folder, names, f"{missing} missing from {folder}")
    return Shipped(label, folder, names, None)


def package_check(active: str) -> Check:
    """Both stores' migrations: the active one's missing stops serve; the other's
    would break ``memoryd migrate`` or a switch of store, so it is a warning."""
    found = {backend: shipped(backend) for backend in BACKENDS}
    broken = [s for s in found.values() if s.problem]
    problems = "; ".join(f"{s.label} migrations: {s.problem}" for s in broken)
    if found[active].problem:
        return fail("package", problems, REINSTALL)
    if broken:
        return warn("package", f"{problems} (that store would not work)", REINSTALL)
    listed = ", ".join(f"{s.label} 0001-{s.latest:04d}" for s in found.values())
    return ok("package", f"migrations shipped: {listed}")


def migrations_check(
    found: Shipped,
    applied: tuple[int, ...],
    *,
    cannot_apply: tuple[str, str] | None = None,
    backup: str = "memoryd backup DIR",
) -> Check:
    """``applied`` (the database's record) against ``found`` (the package's files);
    ``cannot_apply``: why serve could not apply pending ones, and the fix."""
    name = "migrations"
    if found.problem:
        return fail(name, f"cannot check: {found.problem}", REINSTALL)
    newer = sorted(v for v in applied if v > found.latest)
    if newer:
        return fail(
            name,
            f"the database is at migration {newer[-1]:04d}, this memoryd ships up to "
            f"{found.latest:04d}: a newer memoryd wrote it",
            "install the memoryd release that wrote it (memoryd --version tells yours), "
            "or restore the backup taken before that upgrade",
        )
    pending = sorted(set(found.names) - set(applied))
    if not pending:
        return ok(name, f"current: 0001-{found.latest:04d} applied")
    what = (
        f"a new database: serve applies 0001-{found.latest:04d}"
        if not applied
        else f"{len(pending)} pending ({found.named(pending)}): the next serve applies them"
    )
    if cannot_apply:
        return fail(name, f"{what}, but cannot: {cannot_apply[0]}", cannot_apply[1])
    if not applied:
        return ok(name, what)
    return warn(name, what, f"take a backup first ({backup}): migrations only move forward")


@dataclass(slots=True)
class StoreFindings:
    """The store's lines, and its stored settings (None: not read) for the later checks."""

    checks: list[Check] = field(default_factory=list)
    settings: dict[str, Any] | None = None


def store_checks(setup: Setup) -> StoreFindings:
    if setup.config.database_url:
        return _postgres(setup, setup.config.database_url)
    return _sqlite(setup)


def _sqlite(setup: Setup) -> StoreFindings:
    path = setup.config.db_path
    found = shipped("sqlite")
    out = StoreFindings()
    if not (path.exists() or path.is_symlink()):
        out.checks.append(ok("database", f"{path}: none yet; serve creates it"))
        out.checks.append(migrations_check(found, ()))
        out.settings = {}
        return out
    move = f"restore {path} from a backup, or move it away to start with a new database"
    if not path.is_file():
        out.checks.append(fail("database", f"{path} is not a regular file", move))
        return out
    try:
        from memoryd.storage.sqlite.inspection import read_file

        state = read_file(path)
    except ImportError as exc:
        out.checks.append(fail("database", f"not read: no SQLite driver ({exc})", REINSTALL))
        return out
    except UnavailableError as exc:  # empty, or not SQLite
        out.checks.append(fail("database", exc.message, move))
        return out
    except Exception as exc:  # apsw.Error: damaged, locked, unreadable
        out.checks.append(fail("database", f"cannot read {path}: {exc}", move))
        return out
    size = path.stat().st_size
    out.checks.append(ok("database", f"{path} ({size / 2**20:.1f} MB)"))
    # Asked, not tried (the file must not change): os.access errs only for root, who
    # can write it anyway; the data-dir line tries a write in the same directory.
    read_only = (f"{path} is read-only", f"chmod u+w {path} for the user serve runs as")
    writable = os.access(path, os.W_OK)
    out.checks.append(
        migrations_check(found, state.applied, cannot_apply=None if writable else read_only)
    )
    out.settings = state.settings
    return out


def _postgres_kind(url: str) -> str | None:
    """Why ``url`` is not a PostgreSQL connection string (None: it is one): a SQLite
    path or another database's URL fails in libpq with a message about '=' signs."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else None
    if scheme in ("postgresql", "postgres"):
        return None
    if scheme is None and re.match(r"^\s*\w+\s*=", url):
        return None  # a libpq key=value string: host=... dbname=...
    what = f"a {scheme}:// URL" if scheme else "not a URL"
    return f"MEMORYD_DATABASE_URL is {what}: the shared store is PostgreSQL"


def _postgres(setup: Setup, url: str) -> StoreFindings:
    out = StoreFindings()
    wrong = _postgres_kind(url)
    if wrong:
        fix = (
            "use postgresql://USER:PASSWORD@HOST:5432/DBNAME; for the SQLite store unset "
            f"MEMORYD_DATABASE_URL (its file is {setup.config.db_path})"
        )
        out.checks.append(fail("database", wrong, fix))
        return out
    try:  # the driver (psycopg) and, for serve, its pool (database.py imports it)
        from memoryd.storage.postgres import inspection
    except ImportError as exc:
        out.checks.append(
            fail(
                "database",
                f"the PostgreSQL store needs the postgres extra ({exc.name or exc} is missing)",
                "pip install 'memoryd[postgres]'",
            )
        )
        return out
    try:
        state = bounded(
            lambda: inspection.inspect(url, timeout_s=setup.timeout_s), setup.timeout_s * 3
        )
    except inspection.ReadFailed as exc:
        fix = "grant this role access to memoryd's tables, or use the role serve runs as"
        out.checks.append(fail("database", exc.message, fix))
        return out
    except (UnavailableError, TimeoutError) as exc:
        reason = exc.message if isinstance(exc, UnavailableError) else str(exc)
        fix = (
            "start the database server, or fix MEMORYD_DATABASE_URL / --database-url "
            "(host, port, user, password, database name)"
        )
        out.checks.append(fail("database", f"{reason}: serve cannot start", fix))
        return out
    out.checks.append(
        ok("database", f"PostgreSQL {state.server_version} at {inspection.shown(url)}")
    )
    out.checks.append(_pgvector(state))
    cannot = None
    if not state.create_in_schema:
        schema = state.schema or "(none on the search_path)"
        cannot = (
            f"this role may not create tables in schema {schema}",
            f"GRANT CREATE ON SCHEMA {schema} TO this role, or run serve once as the owner",
        )
    found = shipped("postgres")
    out.checks.append(
        migrations_check(found, state.applied or (), cannot_apply=cannot, backup="pg_dump")
    )
    out.settings = state.settings
    return out


def _pgvector(state: PgState) -> Check:
    if state.pgvector:
        return ok("pgvector", f"pgvector {state.pgvector} installed")
    if not state.pgvector_available:
        return fail(
            "pgvector",
            "the server has no pgvector extension: serve cannot create its vector tables",
            "install pgvector on the database server (every managed PostgreSQL offers it)",
        )
    if not state.can_create_pgvector:
        return fail(
            "pgvector",
            f"pgvector {state.pgvector_available} is available but not installed in this "
            "database, and this role may not create it",
            "ask an administrator to run CREATE EXTENSION vector in this database",
        )
    return ok(
        "pgvector", f"pgvector {state.pgvector_available} available: serve creates the extension"
    )
