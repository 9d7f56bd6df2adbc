"""``memoryd migrate --to postgresql://...``: copy a SQLite data dir to PostgreSQL.

Memories go as the export/import path carries them (history, end users, ids,
supersession), client keys as their hashes (revoked ones stay revoked), settings and
providers as stored, and the data dir's admin token (the replicas accept it). Vectors
are not copied: every memory arrives queued for embedding, and the first server on the
new store fills them. Running it again copies nothing
twice (memories upsert by owner, end user and key; keys and settings by id and name).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memoryd.cli._common import cli_command, emit
from memoryd.models import utcnow
from memoryd.server import carry_file_token

if TYPE_CHECKING:  # imported by the command itself: ``memoryd --help`` stays fast
    from memoryd.engine import MemoryEngine
    from memoryd.storage.base import Writer


def copy_store(source: MemoryEngine, target: MemoryEngine, progress: Any = None) -> dict[str, Any]:
    """Copy everything ``source`` holds into ``target``; counts on both sides after."""
    settings = source.store.read().settings()
    target.store.write(lambda tx: tx.write_settings(settings, utcnow()))
    keys = source.store.read().export_keys()

    def insert_keys(tx: Writer) -> int:
        copied = 0
        for key in keys:
            if tx.insert_key(key):
                copied += 1
            elif key.revoked_at is not None:
                # a key revoked here since the last copy is revoked there too: a re-run
                # copied memory edits but left the key working on the new store
                tx.revoke_key(key.key_id, key.revoked_at)
        return copied

    new_keys = target.store.write(insert_keys)
    imported = updated = skipped = 0
    errors: list[dict[str, Any]] = []
    for owner in source.owners():
        lines = (json.dumps(m, ensure_ascii=False) for m in source.export(owner))
        result = target.import_jsonl(lines, owner=None)
        imported, updated = imported + result.imported, updated + result.updated
        skipped += result.skipped
        errors += [{"owner": owner, **e} for e in result.errors]
        if progress is not None:
            progress(1)
    counts = {
        "memories": (source.store.read().count(), target.store.read().count()),
        "keys": (len(keys), len(target.store.read().export_keys())),
        "settings": (len(settings), len(target.store.read().settings())),
    }
    return {
        "imported": imported,
        "updated": updated,
        "skipped": skipped,
        "errors": errors,
        "keysCopied": new_keys,
        "pendingVectors": target.store.read().reindex_pending(),
        "verified": {
            name: {"source": a, "target": b, "ok": b >= a} for name, (a, b) in counts.items()
        },
    }


@click.command("migrate")
@click.option(
    "--to", "url", required=True, help="postgresql://... (an empty database or an earlier copy)"
)
@cli_command
def migrate_cmd(ctx: click.Context, url: str) -> None:
    """Copy this data dir's SQLite store to a PostgreSQL database (idempotent)."""
    if not url.startswith(("postgresql://", "postgres://")) and "=" not in url:
        raise click.BadParameter(
            "must be a postgresql:// URL (or a libpq key=value string)", param_hint="--to"
        )
    from memoryd.bootstrap import open_engine

    source = open_engine(
        data_dir=ctx.obj["data_dir"],
        env_overrides={"MEMORYD_DATABASE_URL": ""},  # the data dir's own SQLite file
        start_indexing=False,
    )
    try:
        target = open_engine(
            data_dir=ctx.obj["data_dir"],
            env_overrides={"MEMORYD_DATABASE_URL": url},
            start_indexing=False,
        )
        try:
            owners = len(source.owners())
            with click.progressbar(length=owners, label="owners", file=sys.stderr) as bar:
                result = copy_store(source, target, bar.update)
            result["adminToken"] = carry_file_token(Path(ctx.obj["data_dir"]), target.store)
        finally:
            target.close()
    finally:
        source.close()

    def show() -> None:
        click.echo(
            f"memories: {result['imported']} copied, {result['updated']} updated, "
            f"{result['skipped']} already there; keys: {result['keysCopied']} copied; "
            f"{result['pendingVectors']} memories queued for embedding"
        )
        click.echo(f"admin token: {result['adminToken']}")
        for name, check in result["verified"].items():
            mark = "ok" if check["ok"] else "MISMATCH"
            click.echo(
                f"  {name}: {check['source']} in SQLite, {check['target']} in PostgreSQL: {mark}"
            )
        for err in result["errors"]:
            click.echo(f"  {err['owner']} line {err['line']}: {err['message']}", err=True)

    emit(ctx, result, show)
    if result["errors"] or not all(c["ok"] for c in result["verified"].values()):
        ctx.exit(1)
