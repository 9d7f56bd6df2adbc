"""``memoryd doctor`` run as users run it (``python -m memoryd doctor`` in a subprocess),
on installs broken for real: a sqlite-vec that does not import, a database at a
closed port, a package copy without its migration files, schemas behind and ahead of
the package, a data dir that cannot be created, upstreams down and up, and a real
PostgreSQL with pgvector. No mocks; no timing assertions (the subprocess bound is
generous)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memoryd.models import utcnow
from memoryd.testing import FakeAnthropicUpstream, FakeUpstream, serve_asgi
from tests.conftest import make_engine, sqlite_at_version
from tests.embedders import no_source

PACKAGE = Path(__file__).resolve().parents[2] / "memoryd"
TOKEN = "doctor-test-admin-token-0123456789"
EXPECTED = [
    "python",
    "environment",
    "serve",
    "sqlite",
    "fts5",
    "sqlite-vec",
    "data-dir",
    "package",
    "database",
    "migrations",
    "embedder",
    "local-model",
    "qdrant",
]
BOUND_S = 120  # a subprocess normally done in about a second


def shipped(backend: str) -> list[str]:
    """The package's migrations, ``NNNN_name``, in order."""
    return sorted(p.stem for p in (PACKAGE / "storage" / backend / "migrations").glob("*.sql"))


SQLITE_LATEST, POSTGRES_LATEST = shipped("sqlite")[-1][:4], shipped("postgres")[-1][:4]


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def report(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.out)
        return parsed

    @property
    def checks(self) -> dict[str, dict[str, Any]]:
        return {check["name"]: check for check in self.report["checks"]}


def base_env(**extra: str) -> dict[str, str]:
    """This process's environment without memoryd's own variables, plus ``extra``."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "MEMORY_", "QDRANT_"))
    }
    env.pop("PYTHONPATH", None)
    # A free port is picked at start: the serve line does not depend on what else listens.
    return env | {"MEMORYD_PORT": "0"} | extra


def doctor(
    data_dir: Path,
    *args: str,
    env: dict[str, str] | None = None,
    pythonpath: Path | None = None,
    json_out: bool = True,
    data_dir_in_env: bool = False,
) -> Run:
    """``python -m memoryd --data-dir DIR doctor [--json] ARGS`` from a neutral cwd (so
    ``pythonpath`` decides which ``memoryd`` is imported); ``data_dir_in_env``: the data
    dir as ``MEMORYD_DATA_DIR`` instead."""
    full = base_env() if env is None else env
    if pythonpath is not None:
        full = full | {"PYTHONPATH": str(pythonpath)}
    where = ["--data-dir", str(data_dir)]
    if data_dir_in_env:
        full, where = full | {"MEMORYD_DATA_DIR": str(data_dir)}, []
    command = [sys.executable, "-m", "memoryd", *where, "doctor", *args]
    done = subprocess.run(
        [*command, "--json"] if json_out else command,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        cwd=data_dir.parent if data_dir.parent.is_dir() else "/",
        env=full,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def listing(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def upstream() -> Iterator[str]:
    with serve_asgi(FakeUpstream().app) as url:
        yield url


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A data dir a server has run in: the database migrated, one memory, the token file."""
    data = tmp_path / "data"
    engine = make_engine(data, resolver=no_source, start_indexing=False)
    engine.close()
    (data / "admin_token").write_text(TOKEN + "\n", encoding="utf-8")
    return data


# -- a healthy install, and the report's shapes -----------------------------------------


def test_a_healthy_sqlite_install_passes_every_check(installed: Path, upstream: str) -> None:
    before = listing(installed)
    run = doctor(installed, env=base_env(MEMORYD_UPSTREAM_BASE_URL=f"{upstream}/v1"))
    assert run.code == 0, run.out + run.err
    assert [c["name"] for c in run.report["checks"]] == [
        *EXPECTED,
        "upstream:default",
        "admin-token",
    ]
    assert {name: c["status"] for name, c in run.checks.items() if c["status"] != "ok"} == {}
    assert run.report["ok"] is True
    assert f"current: 0001-{SQLITE_LATEST} applied" in run.checks["migrations"]["detail"]
    assert f"{upstream}/v1/models reachable (HTTP 200" in run.checks["upstream:default"]["detail"]
    assert TOKEN not in run.out  # never shown
    assert listing(installed) == before  # read-only: not even -wal/-shm files
    strict = doctor(installed, "--strict", env=base_env(MEMORYD_UPSTREAM_BASE_URL=f"{upstream}/v1"))
    assert strict.code == 0, strict.out


def test_a_new_install_creates_nothing_and_strict_fails_on_its_warnings(tmp_path: Path) -> None:
    data = tmp_path / "never-started"
    run = doctor(data)
    assert run.code == 0, run.out + run.err
    assert not data.exists()  # not created, and no database in it
    assert set(run.report) == {"ok", "checks"}
    for check in run.report["checks"]:
        assert set(check) == {"name", "status", "detail", "fix"}
        assert check["status"] in ("ok", "warn", "fail")
        assert (check["fix"] is None) == (check["status"] == "ok")
    checks = run.checks
    assert checks["data-dir"]["status"] == "ok"
    assert "does not exist yet; serve creates it" in checks["data-dir"]["detail"]
    assert checks["database"]["status"] == checks["migrations"]["status"] == "ok"
    assert "a new database: serve applies 0001-" in checks["migrations"]["detail"]
    token = checks["admin-token"]
    assert token["status"] == "warn"
    assert "the first `memoryd serve` generates one and prints it" in token["detail"]
    assert checks["upstream"]["status"] == "warn"
    assert "MEMORYD_UPSTREAM_BASE_URL" in checks["upstream"]["fix"]

    strict = doctor(data, "--strict")
    assert strict.code == 1
    assert strict.report["ok"] is False
    assert not data.exists()


def test_text_output_is_one_aligned_line_per_check_with_fixes_and_a_summary(
    tmp_path: Path,
) -> None:
    env = base_env(MEMORYD_UPSTREAM_BASE_URL=f"http://127.0.0.1:{closed_port()}/v1")
    run = doctor(tmp_path / "data", env=env, json_out=False)
    assert run.code == 0, run.out + run.err
    lines = run.out.splitlines()
    checks = [line for line in lines[:-1] if not line.startswith(" ")]
    fixes = [line for line in lines[:-1] if line.startswith(" ")]
    assert [line.split()[0] for line in checks] == [*EXPECTED, "upstream:default", "admin-token"]
    columns = {len(re.match(r"\S+\s+", line)[0]) for line in checks}  # type: ignore[index]
    assert len(columns) == 1  # the status column is aligned
    detail_column = columns.pop() + 6
    assert len(fixes) == 2
    assert all(line.index("fix: ") == detail_column for line in fixes)
    for index, line in enumerate(lines[:-1]):
        if line.startswith(" "):
            assert lines[index - 1].split()[1] in ("warn", "fail")
    assert lines[-1] == "2 warned: serve would work, degraded"


# -- sqlite-vec ---------------------------------------------------------------------------


def test_a_sqlite_vec_that_does_not_import_is_a_warning_with_its_fix(
    installed: Path, tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "sqlite_vec.py").write_text(
        'raise ImportError("sqlite_vec is broken in this test")\n', encoding="utf-8"
    )
    run = doctor(installed, pythonpath=shadow)
    assert run.code == 0, run.out + run.err
    vec = run.checks["sqlite-vec"]
    assert vec["status"] == "warn"
    assert "sqlite_vec is broken in this test" in vec["detail"]
    assert "keyword search only" in vec["detail"]
    assert vec["fix"] == "pip install sqlite-vec (a dependency of memoryd)"


def test_sqlite_vec_turned_off_by_the_environment_says_which_variable(installed: Path) -> None:
    run = doctor(installed, env=base_env(MEMORY_DISABLE_VEC="1"))
    assert run.code == 0
    vec = run.checks["sqlite-vec"]
    assert vec["status"] == "warn"
    assert "MEMORY_DISABLE_VEC" in vec["detail"]
    assert vec["fix"] == "unset MEMORY_DISABLE_VEC"


# -- the data dir -------------------------------------------------------------------------


def test_a_data_dir_under_a_regular_file_fails(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x", encoding="utf-8")
    run = doctor(blocker / "data")
    assert run.code == 1
    check = run.checks["data-dir"]
    assert check["status"] == "fail"
    assert f"{blocker} is not a directory" in check["detail"]
    assert "--data-dir" in check["fix"]
    assert blocker.read_text(encoding="utf-8") == "x"


def test_a_data_dir_that_is_a_file_fails(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.write_text("", encoding="utf-8")
    run = doctor(data, data_dir_in_env=True)  # --data-dir refuses a file itself
    assert run.code == 1
    assert run.checks["data-dir"]["status"] == "fail"
    assert f"{data} is not a directory" in run.checks["data-dir"]["detail"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_data_dir_where_even_root_cannot_write_fails() -> None:
    """/proc takes no new files or directories, whoever asks: the probe really writes."""
    run = doctor(Path("/proc/memoryd-doctor-test/data"))
    assert run.code == 1
    check = run.checks["data-dir"]
    assert check["status"] == "fail"
    assert "cannot be created: /proc is not writable" in check["detail"]
    existing = doctor(Path("/proc/self"))
    assert existing.code == 1
    assert "/proc/self is not writable" in existing.checks["data-dir"]["detail"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a 0500 directory anyway")
def test_a_read_only_data_dir_and_parent_fail(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o500)
    try:
        run = doctor(data)
        assert run.code == 1
        assert run.checks["data-dir"]["status"] == "fail"
        assert "is not writable" in run.checks["data-dir"]["detail"]
        nested = doctor(data / "inner")
        assert nested.checks["data-dir"]["status"] == "fail"
        assert f"{data} is not writable" in nested.checks["data-dir"]["detail"]
        assert not (data / "inner").exists()
    finally:
        data.chmod(0o700)


# -- the SQLite schema --------------------------------------------------------------------


def test_an_older_sqlite_schema_is_pending_and_a_newer_one_fails(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    *_, before_last, last = shipped("sqlite")
    sqlite_at_version(data / "memoryd.db", int(before_last[:4]) - 1).close()
    older = doctor(data)
    assert older.code == 0, older.out + older.err
    check = older.checks["migrations"]
    assert check["status"] == "warn"
    assert f"2 pending ({before_last}, {last}): the next serve applies them" in check["detail"]
    assert "memoryd backup" in check["fix"]

    newer_dir = tmp_path / "newer"
    engine = make_engine(newer_dir, resolver=no_source, start_indexing=False)
    engine.close()
    import apsw

    conn = apsw.Connection(str(newer_dir / "memoryd.db"))
    conn.execute("INSERT INTO schema_migrations VALUES (99, 'from_the_future', 'x')")
    conn.close()
    newer = doctor(newer_dir)
    assert newer.code == 1
    check = newer.checks["migrations"]
    assert check["status"] == "fail"
    assert "at migration 0099" in check["detail"]
    assert "a newer memoryd wrote it" in check["detail"]
    assert "install the memoryd release that wrote it" in check["fix"]


def test_a_database_file_that_is_not_sqlite_fails(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "memoryd.db").write_bytes(b"definitely not a database")
    run = doctor(data)
    assert run.code == 1
    check = run.checks["database"]
    assert check["status"] == "fail"
    assert "not an SQLite file" in check["detail"]
    assert "backup" in check["fix"]


def test_doctor_reads_a_database_a_server_has_open(tmp_path: Path) -> None:
    """Beside a live engine (its WAL file present): read through it, change nothing."""
    data = tmp_path / "data"
    engine = make_engine(data, resolver=no_source, start_indexing=False)
    try:
        engine.store.write(lambda tx: tx.write_settings({"x": 1}, utcnow()))
        assert (data / "memoryd.db-wal").exists()
        run = doctor(data)
        assert run.checks["database"]["status"] == "ok"
        assert run.checks["migrations"]["status"] == "ok"
    finally:
        engine.close()


# -- a package that lost its migration files ------------------------------------------


def package_copy(tmp_path: Path, *, drop: tuple[str, ...]) -> Path:
    """The ``memoryd`` package copied under ``tmp_path/site`` without the ``drop``
    backends' ``migrations/*.sql``: a wheel built without its data files."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "memoryd", ignore=shutil.ignore_patterns("__pycache__"))
    for backend in drop:
        for sql in (site / "memoryd" / "storage" / backend / "migrations").glob("*.sql"):
            sql.unlink()
    return site


def test_a_package_without_postgres_migrations_fails_on_postgres_and_warns_on_sqlite(
    tmp_path: Path,
) -> None:
    site = package_copy(tmp_path, drop=("postgres",))
    missing = "memoryd/storage/postgres/migrations/*.sql missing"
    on_sqlite = doctor(tmp_path / "data", pythonpath=site)
    assert on_sqlite.code == 0, on_sqlite.out + on_sqlite.err
    check = on_sqlite.checks["package"]
    assert check["status"] == "warn"
    assert missing in check["detail"]
    assert str(site) in check["detail"]  # the copy was the memoryd that ran
    assert "pip install --force-reinstall" in check["fix"]

    url = f"postgresql://memoryd@127.0.0.1:{closed_port()}/memoryd"
    on_postgres = doctor(tmp_path / "data", "--database-url", url, pythonpath=site)
    assert on_postgres.code == 1
    check = on_postgres.checks["package"]
    assert check["status"] == "fail"
    assert missing in check["detail"]
    assert "pip install --force-reinstall" in check["fix"]


def test_a_package_without_sqlite_migrations_fails(tmp_path: Path) -> None:
    site = package_copy(tmp_path, drop=("sqlite",))
    run = doctor(tmp_path / "data", pythonpath=site)
    assert run.code == 1
    for name in ("package", "migrations"):
        assert run.checks[name]["status"] == "fail"
        assert "memoryd/storage/sqlite/migrations/*.sql missing" in run.checks[name]["detail"]
        assert "reinstall memoryd" in run.checks[name]["fix"]


# -- upstreams and Qdrant -----------------------------------------------------------------


def test_an_unreachable_upstream_warns_naming_its_url(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    run = doctor(tmp_path / "data", env=base_env(MEMORYD_UPSTREAM_BASE_URL=url))
    assert run.code == 0
    check = run.checks["upstream:default"]
    assert check["status"] == "warn"
    assert f"{url}/models unreachable" in check["detail"]
    assert "MEMORYD_UPSTREAM_BASE_URL" in check["fix"]


def test_stored_and_anthropic_providers_are_each_probed(installed: Path, upstream: str) -> None:
    cli = [sys.executable, "-m", "memoryd", "--data-dir", str(installed)]
    added = subprocess.run(
        [*cli, "providers", "add", "mine", f"{upstream}/v1"],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        env=base_env(),
        cwd=installed.parent,
        check=False,
    )
    assert added.returncode == 0, added.stderr
    with serve_asgi(FakeAnthropicUpstream().app) as anthropic:
        run = doctor(installed, env=base_env(MEMORYD_ANTHROPIC_BASE_URL=anthropic))
    assert run.code == 0, run.out
    assert run.checks["upstream:mine"]["status"] == "ok"
    assert f"{upstream}/v1/models reachable" in run.checks["upstream:mine"]["detail"]
    assert run.checks["upstream:anthropic"]["status"] == "ok"
    assert f"{anthropic}/v1/models reachable" in run.checks["upstream:anthropic"]["detail"]


def test_an_enabled_qdrant_that_does_not_answer_warns(installed: Path, upstream: str) -> None:
    port = closed_port()
    engine = make_engine(installed, resolver=no_source, start_indexing=False)
    try:
        settings = {"enabled": True, "host": "127.0.0.1", "port": port}
        engine.store.write(lambda tx: tx.write_settings(settings, utcnow(), "qdrant."))
    finally:
        engine.close()
    run = doctor(installed)
    assert run.code == 0
    check = run.checks["qdrant"]
    assert check["status"] == "warn"
    assert f"http://127.0.0.1:{port} unreachable" in check["detail"]
    assert "QDRANT_HOST" in check["fix"]
    # any HTTP answer counts as reachable
    engine = make_engine(installed, resolver=no_source, start_indexing=False)
    try:
        engine.store.write(lambda tx: tx.write_settings({"host": upstream}, utcnow(), "qdrant."))
    finally:
        engine.close()
    assert doctor(installed).checks["qdrant"]["status"] == "ok"


# -- the admin token ----------------------------------------------------------------------


def test_admin_token_levels(tmp_path: Path) -> None:
    data = tmp_path / "data"
    short = doctor(data, env=base_env(MEMORYD_ADMIN_TOKEN="short-token"))
    assert short.code == 1  # serve refuses it
    assert short.checks["admin-token"]["status"] == "fail"
    assert "short (11 characters)" in short.checks["admin-token"]["detail"]
    assert "outside --dev" in short.checks["admin-token"]["detail"]
    assert "short-token" not in short.out
    dev = doctor(data, env=base_env(MEMORYD_ADMIN_TOKEN="short-token", MEMORYD_DEV="1"))
    assert dev.code == 0
    assert dev.checks["admin-token"]["status"] == "warn"
    empty = doctor(data, env=base_env(MEMORYD_ADMIN_TOKEN=""))
    assert empty.code == 1
    assert empty.checks["admin-token"]["status"] == "fail"
    assert "set but empty" in empty.checks["admin-token"]["detail"]
    good = doctor(data, env=base_env(MEMORYD_ADMIN_TOKEN=TOKEN))
    assert good.checks["admin-token"]["status"] == "ok"
    assert "MEMORYD_ADMIN_TOKEN" in good.checks["admin-token"]["detail"]


# -- PostgreSQL -----------------------------------------------------------------------------


def test_an_unreachable_database_fails_with_its_fix(tmp_path: Path) -> None:
    url = f"postgresql://memoryd:secret-pw@127.0.0.1:{closed_port()}/memoryd"
    run = doctor(tmp_path / "data", "--database-url", url)
    assert run.code == 1
    check = run.checks["database"]
    assert check["status"] == "fail"
    assert "cannot connect to PostgreSQL at postgresql://memoryd:***@127.0.0.1" in check["detail"]
    assert "secret-pw" not in run.out
    assert "MEMORYD_DATABASE_URL" in check["fix"]
    assert "pgvector" not in run.checks  # nothing to ask an unreachable server
    assert not (tmp_path / "data").exists()


def test_a_healthy_postgres_store_passes(tmp_path: Path, pg_url: str) -> None:
    engine = make_engine(
        tmp_path / "first",
        {"MEMORYD_DATABASE_URL": pg_url},
        resolver=no_source,
        start_indexing=False,
    )
    engine.close()
    run = doctor(tmp_path / "data", env=base_env(MEMORYD_DATABASE_URL=pg_url))
    assert run.code == 0, run.out + run.err
    checks = run.checks
    assert [c["name"] for c in run.report["checks"]][:11] == [
        *EXPECTED[:9],
        "pgvector",
        "migrations",
    ]
    assert checks["database"]["status"] == "ok"
    assert checks["database"]["detail"].startswith("PostgreSQL ")
    assert checks["pgvector"]["status"] == "ok"
    assert "installed" in checks["pgvector"]["detail"]
    assert checks["migrations"] == {
        "name": "migrations",
        "status": "ok",
        "detail": f"current: 0001-{POSTGRES_LATEST} applied",
        "fix": None,
    }
    assert "stored in the database" in checks["admin-token"]["detail"]


def test_postgres_pending_and_unappliable_migrations(tmp_path: Path, pg_url: str) -> None:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    fresh = doctor(tmp_path / "data", "--database-url", pg_url)
    assert fresh.code == 0, fresh.out
    assert (
        f"a new database: serve applies 0001-{POSTGRES_LATEST}"
        in fresh.checks["migrations"]["detail"]
    )
    assert fresh.checks["pgvector"]["detail"].endswith("serve creates the extension")
    with psycopg.connect(pg_url, autocommit=True) as conn:  # untouched by doctor
        assert conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,)
        assert not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchall()

    role = f"doctor_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    try:
        as_role = make_conninfo(**(conninfo_to_dict(pg_url) | {"user": role}))
        refused = doctor(tmp_path / "data", "--database-url", as_role)
        if refused.checks["database"]["status"] == "fail":
            pytest.skip(f"the test server refuses a new role's login: {refused.out}")
        assert refused.code == 1
        assert refused.checks["pgvector"]["status"] == "fail"
        assert "CREATE EXTENSION vector" in refused.checks["pgvector"]["fix"]
        check = refused.checks["migrations"]
        assert check["status"] == "fail"
        assert "may not create tables in schema public" in check["detail"]
        assert "GRANT CREATE ON SCHEMA public" in check["fix"]
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")

    engine = make_engine(
        tmp_path / "first",
        {"MEMORYD_DATABASE_URL": pg_url},
        resolver=no_source,
        start_indexing=False,
    )
    engine.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        *_, before_last, last = shipped("postgres")
        conn.execute("DELETE FROM schema_migrations WHERE version >= %s", (int(before_last[:4]),))
    pending = doctor(tmp_path / "data", "--database-url", pg_url)
    assert pending.code == 0
    check = pending.checks["migrations"]
    assert check["status"] == "warn"
    assert f"2 pending ({before_last}, {last})" in check["detail"]


# -- what serve itself would refuse, and messages a new user meets -------------------------


def test_a_misspelt_variable_is_named_with_the_one_meant(tmp_path: Path) -> None:
    run = doctor(
        tmp_path / "data",
        env=base_env(MEMORYD_DATABSE_URL="postgresql://x@h/db", MEMORYD_TEST_ANYTHING="1"),
    )
    check = run.checks["environment"]
    assert check["status"] == "warn"
    assert "MEMORYD_DATABSE_URL (did you mean MEMORYD_DATABASE_URL?)" in check["detail"]
    assert "MEMORYD_TEST_ANYTHING" not in check["detail"]  # the test suite's own
    assert run.checks["database"]["detail"].endswith("none yet; serve creates it")  # SQLite
    assert doctor(tmp_path / "data").checks["environment"]["status"] == "ok"


def test_serve_settings_it_would_refuse_fail(tmp_path: Path) -> None:
    bad_port = doctor(tmp_path / "data", env=base_env(MEMORYD_PORT="abc"))
    assert bad_port.code == 1
    assert "MEMORYD_PORT: not a port number: 'abc'" in bad_port.checks["serve"]["detail"]
    workers = doctor(tmp_path / "data", env=base_env(MEMORYD_WORKERS="3"))
    assert workers.code == 1
    check = workers.checks["serve"]
    assert "3 workers on the SQLite store" in check["detail"]
    assert "MEMORYD_DATABASE_URL" in check["fix"]


def test_a_port_in_use_warns(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = doctor(tmp_path / "data", env=base_env(MEMORYD_PORT=str(port)))
    check = run.checks["serve"]
    assert check["status"] == "warn"
    assert f"127.0.0.1:{port} is in use" in check["detail"]
    assert run.code == 0
    free = doctor(tmp_path / "data", env=base_env(MEMORYD_PORT=str(closed_port())))
    assert free.checks["serve"]["status"] == "ok"


def test_a_database_url_that_is_not_postgresql_says_so_without_its_password(
    tmp_path: Path,
) -> None:
    for url, kind in (
        ("mysql://u:topsecret@db.example/memoryd", "a mysql:// URL"),
        ("sqlite:///tmp/memoryd.db", "a sqlite:// URL"),
        ("/var/lib/memoryd/memoryd.db", "not a URL"),
    ):
        run = doctor(tmp_path / "data", "--database-url", url)
        assert run.code == 1, url
        check = run.checks["database"]
        assert check["detail"] == f"MEMORYD_DATABASE_URL is {kind}: the shared store is PostgreSQL"
        assert "unset MEMORYD_DATABASE_URL" in check["fix"]
        assert "topsecret" not in run.out + run.err


def test_the_drivers_message_does_not_leak_the_password(tmp_path: Path) -> None:
    """libpq quotes a URL it cannot parse whole; the line keeps the quote, not the password."""
    url = f"postgresql://memoryd:top secret@127.0.0.1:{closed_port()}/memoryd?sslmode=bogus"
    run = doctor(tmp_path / "data", "--database-url", url)
    assert run.code == 1
    assert run.checks["database"]["status"] == "fail"
    assert "top secret" not in run.out + run.err
    assert "secret" not in run.out + run.err


def test_an_unusable_data_dir_is_reported_once_not_contradicted(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    run = doctor(blocker / "data")
    assert run.checks["data-dir"]["status"] == "fail"
    assert run.checks["database"]["detail"] == "not checked: the data dir is unusable"
    assert run.checks["admin-token"]["detail"] == "not checked: the data dir is unusable"
    assert "migrations" not in run.checks


def test_doctors_own_data_dir_option_reports_a_file(tmp_path: Path) -> None:
    """The global --data-dir refuses a file before doctor runs; doctor's own reports it."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    command = [sys.executable, "-m", "memoryd", "doctor", "--data-dir", str(blocker), "--json"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=BOUND_S, env=base_env(), check=False
    )
    assert done.returncode == 1, done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["data-dir"]["detail"] == f"{blocker} is not a directory"


def test_an_upstream_base_url_without_its_api_prefix_warns(tmp_path: Path, upstream: str) -> None:
    """The fake serves /v1/models: a base URL without /v1 gets 404 there, as chats would."""
    run = doctor(tmp_path / "data", env=base_env(MEMORYD_UPSTREAM_BASE_URL=upstream))
    check = run.checks["upstream:default"]
    assert check["status"] == "warn"
    assert "answers 404" in check["detail"]
    assert "/v1" in check["fix"]
    right = doctor(tmp_path / "data", env=base_env(MEMORYD_UPSTREAM_BASE_URL=f"{upstream}/v1"))
    assert right.checks["upstream:default"]["status"] == "ok"


def test_a_model_dir_variable_that_points_nowhere_names_the_variable(tmp_path: Path) -> None:
    missing = tmp_path / "no-model-here"
    run = doctor(tmp_path / "data", env=base_env(MEMORY_TRANSFORMERS_MODEL_DIR=str(missing)))
    assert run.checks["embedder"]["status"] == "warn"
    assert "MEMORY_TRANSFORMERS_MODEL_DIR" in run.checks["embedder"]["fix"]
    local = run.checks["local-model"]
    assert f"MEMORY_TRANSFORMERS_MODEL_DIR={missing} does not exist" in local["detail"]
    missing.mkdir()
    empty = doctor(tmp_path / "data", env=base_env(MEMORY_TRANSFORMERS_MODEL_DIR=str(missing)))
    assert "lacks model.onnx or tokenizer.json" in empty.checks["local-model"]["detail"]
