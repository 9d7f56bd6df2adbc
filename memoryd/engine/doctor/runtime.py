"""The interpreter and the SQLite build: Python, the apsw driver, FTS5, sqlite-vec.

apsw is needed with either store (the composition root imports the SQLite store), so
a missing driver fails whatever the configuration; FTS5 and sqlite-vec only matter to
the SQLite store, and without them serve runs degraded, not broken.
"""

from __future__ import annotations

import sys

from memoryd.engine.doctor.report import REINSTALL, Check, Setup, fail, ok, warn

MIN_PYTHON = (3, 11)


def python_check() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    detail = f"Python {version} ({sys.executable})"
    if sys.version_info < MIN_PYTHON:
        return fail("python", detail, "memoryd needs Python 3.11 or newer")
    return ok("python", detail)


def sqlite_checks(setup: Setup) -> list[Check]:
    """``sqlite``, ``fts5`` and ``sqlite-vec``, probed the way the store opens them."""
    try:
        from memoryd.storage.sqlite.inspection import runtime
    except ImportError as exc:
        return [
            fail(
                "sqlite",
                f"the SQLite driver does not import ({exc}): serve cannot start",
                f"pip install apsw, or {REINSTALL}",
            )
        ]
    found = runtime()
    checks = [ok("sqlite", f"SQLite {found.sqlite_version} (apsw {found.driver_version})")]
    if setup.config.database_url:
        unused = "not used: the PostgreSQL store has its own full-text search"
        return [*checks, ok("fts5", unused), ok("sqlite-vec", "not used: the store has pgvector")]
    if found.fts5:
        checks.append(ok("fts5", "FTS5 available"))
    else:
        checks.append(
            warn(
                "fts5",
                f"{found.fts5_reason}: keyword search falls back to scanning recent memories",
                "use the apsw wheel from PyPI (it bundles SQLite with FTS5): "
                "pip install --force-reinstall apsw",
            )
        )
    checks.append(_vec_check(setup, found.vec, found.vec_reason))
    return checks


def _vec_check(setup: Setup, loadable: bool, reason: str) -> Check:
    if not setup.config.load_vec:
        state = f"loadable: {reason}" if loadable else reason
        return warn(
            "sqlite-vec",
            f"disabled by MEMORY_DISABLE_VEC ({state}): no vector search, keyword search only",
            "unset MEMORY_DISABLE_VEC",
        )
    if not loadable:
        return warn(
            "sqlite-vec",
            f"{reason}: no vector search, keyword search only",
            "pip install sqlite-vec (a dependency of memoryd)",
        )
    return ok("sqlite-vec", f"{reason} loads")
