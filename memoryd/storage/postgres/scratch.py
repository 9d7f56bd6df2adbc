"""Databases made and dropped whole, on a server memoryd may administer: what the test
and smoke suites and the store benchmarks use for a fresh database each
(``memoryd.testing.postgres``), kept here because only this package speaks to the
driver."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo


def create_database(server_url: str, name: str) -> str:
    """Create the empty database ``name`` on the server; its connection string."""
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    params = conninfo_to_dict(server_url)
    params["dbname"] = name
    return make_conninfo("", **params)


def drop_database(server_url: str, name: str) -> None:
    """Drop ``name``, ending any session still in it."""
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())
