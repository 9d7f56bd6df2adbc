"""Numbered SQL migrations, applied in order at start-up and recorded in a table.

A file ``NNNN_name.sql`` is one migration; each runs in its own ``BEGIN IMMEDIATE``
transaction together with its ``schema_migrations`` row, so a crash leaves it either
applied and recorded or not at all. A first line ``-- requires: fts5`` defers the
migration (unrecorded, retried next start) on a SQLite build without FTS5. The
applied set is re-read inside each transaction, so two processes starting at once do
not apply a migration twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from memoryd.storage.sql.migration_files import MIGRATION_FILE


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def requires(self) -> set[str]:
        first = self.sql.lstrip().splitlines()[0] if self.sql.strip() else ""
        if first.startswith("-- requires:"):
            return {part.strip() for part in first.split(":", 1)[1].split(",") if part.strip()}
        return set()


def discover() -> list[Migration]:
    found = []
    for entry in resources.files(__package__).iterdir():
        match = MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration numbers: {versions}")
    return found


def apply_migrations(conn: Any, *, fts5: bool) -> list[str]:
    """Apply every pending migration; return the names of the deferred ones."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    deferred: list[str] = []
    for migration in discover():
        if "fts5" in migration.requires and not fts5:
            deferred.append(f"{migration.version:04d}_{migration.name}")
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
            ).fetchall()
            if not done:
                conn.execute(migration.sql)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, datetime.now(UTC).isoformat()),
                )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return deferred


def applied_versions(conn: Any) -> list[int]:
    return [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
