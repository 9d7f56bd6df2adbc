"""``memoryd backup DEST``: an online copy of the data dir's database.

Works while ``memoryd serve`` runs on the same data dir (SQLite's backup API reads a
consistent snapshot; the server keeps writing). It does not open the engine, so it
runs no migrations and starts no workers.
Restore: stop the server, copy the backup over ``<data_dir>/memoryd.db`` (removing
any ``memoryd.db-wal`` / ``-shm`` beside it), start the server.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from memoryd.cli._common import cli_command, emit
from memoryd.config import EngineConfig
from memoryd.storage.sqlite.backup import backup_database


@click.command("backup")
@click.argument("dest", type=click.Path(dir_okay=True, path_type=str))
@click.option("--force", is_flag=True, help="Overwrite DEST if it exists.")
@cli_command
def backup_cmd(ctx: click.Context, dest: str, force: bool) -> None:
    """Back up the database to DEST (a file, or a directory for a dated file).

    Safe while the server runs. The copy is checked with PRAGMA integrity_check
    before it is moved into place; an existing DEST is kept unless --force."""
    source = EngineConfig(data_dir=Path(ctx.obj["data_dir"]).expanduser()).db_path
    target = Path(dest).expanduser()
    if dest.endswith(("/", os.sep)):  # "backups/" names a directory, made when missing
        target.mkdir(parents=True, exist_ok=True)  # (it became a file named "backups")
    result = backup_database(source, target, force=force)
    emit(
        ctx,
        result.to_dict(),
        f"backed up {result.memories} memories ({result.bytes} bytes) to {result.path} "
        f"in {result.seconds:.2f}s; integrity ok",
    )
