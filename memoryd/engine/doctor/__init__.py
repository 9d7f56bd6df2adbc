"""``memoryd doctor``: what an install has and lacks, one line per check, each
problem with its fix (docs/operations.md, "memoryd doctor").

Read-only by contract: doctor opens no engine, creates neither the data dir nor the
database, runs no migration and generates no token, so it is safe beside a running
server and on an install that was never started. Optional extras that are missing
become lines, never an ImportError; every network call is bounded by
``Setup.timeout_s``. The CLI (``memoryd.cli.doctor``) only prints the report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from memoryd.engine.doctor.embedder import embedder_checks
from memoryd.engine.doctor.files import admin_token_check, data_dir_check
from memoryd.engine.doctor.network import parallel
from memoryd.engine.doctor.report import Check, Report, Setup, Status, fail
from memoryd.engine.doctor.runtime import python_check, sqlite_checks
from memoryd.engine.doctor.services import qdrant_check, upstream_checks
from memoryd.engine.doctor.serving import environment_check, serve_check
from memoryd.engine.doctor.store import StoreFindings, package_check, store_checks

if TYPE_CHECKING:
    from memoryd.config.upstreams import Provider
    from memoryd.storage.base import Store

__all__ = ["Check", "Report", "Setup", "Status", "diagnose"]

_FIRST = "fix the data-dir line first (it holds the SQLite file and the token file)"


class _StoredSettings:
    """The settings a store holds, read once, as the one piece of a ``Store`` that
    ``load_providers`` uses (``store.read().setting(...)``); weak-referenceable, as its
    cache needs."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def read(self) -> _StoredSettings:
        return self

    def setting(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)


def _providers(setup: Setup, settings: Mapping[str, Any]) -> dict[str, Provider]:
    from memoryd.config.upstreams import load_providers

    return load_providers(cast("Store", _StoredSettings(settings)), setup.env)


def _stored_names(settings: Mapping[str, Any]) -> set[str]:
    from memoryd.config.upstreams import SETTINGS_KEY

    raw = settings.get(SETTINGS_KEY)
    items = raw if isinstance(raw, list) else []
    return {str(item.get("name")) for item in items if isinstance(item, dict)}


def _crashed(name: str, exc: Exception) -> Check:
    """A state no check foresaw (a permission refused on a path, say) as a line:
    doctor reports, it does not end in a traceback."""
    detail = f"could not check: {type(exc).__name__}: {exc}"
    return fail(name, detail, "fix what the error names, then run memoryd doctor again")


def _lines(name: str, fn: Callable[[], list[Check]]) -> list[Check]:
    try:
        return fn()
    except Exception as exc:
        return [_crashed(name, exc)]


def _run_probe(name: str, probe: Callable[[], Check]) -> Check:
    try:
        return probe()
    except Exception as exc:
        return _crashed(name, exc)


def _probes(name: str, plan: Callable[[], list[Callable[[], Check]]]) -> list[Callable[[], Check]]:
    """The network probes ``plan`` returns, each guarded as ``_lines`` guards a check."""
    try:
        planned = plan()
    except Exception as exc:
        line = _crashed(name, exc)
        return [lambda: line]
    return [partial(_run_probe, name, probe) for probe in planned]


def _read_store(setup: Setup) -> StoreFindings:
    try:
        return store_checks(setup)
    except Exception as exc:
        return StoreFindings([_crashed("database", exc)])


def diagnose(setup: Setup) -> Report:
    """Every check, in the order a reader fixes things: the runtime, the files, the
    store, then what runs on top (embedder, Qdrant, upstreams) and the admin token."""
    active = "postgres" if setup.config.database_url else "sqlite"
    data_dir = _lines("data-dir", lambda: [data_dir_check(setup)])
    checks = [
        *_lines("python", lambda: [python_check()]),
        *_lines("environment", lambda: [environment_check(setup)]),
        *_lines("serve", lambda: [serve_check(setup)]),
        *_lines("sqlite", lambda: sqlite_checks(setup)),
        *data_dir,
        *_lines("package", lambda: [package_check(active)]),
    ]
    unusable = any(c.status == "fail" for c in data_dir) and active == "sqlite"
    # The SQLite file lives in the data dir: lines about it would contradict the failure.
    store = (
        StoreFindings([fail("database", "not checked: the data dir is unusable", _FIRST)])
        if unusable
        else _read_store(setup)
    )
    checks += store.checks
    settings = store.settings or {}
    providers = _providers(setup, settings)
    checks += _lines("embedder", lambda: embedder_checks(setup, store.settings, providers))
    stored = _stored_names(settings)
    probes = [
        *_probes("qdrant", lambda: [qdrant_check(setup, settings)]),
        *_probes("upstream", lambda: upstream_checks(setup, providers, stored)),
    ]
    checks += parallel(probes)
    if unusable and not setup.env.get("MEMORYD_ADMIN_TOKEN"):
        checks.append(fail("admin-token", "not checked: the data dir is unusable", _FIRST))
    else:
        checks += _lines("admin-token", lambda: [admin_token_check(setup, store.settings)])
    return Report(tuple(checks))
