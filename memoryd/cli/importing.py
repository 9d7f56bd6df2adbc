"""``memoryd import``: memories from a JSON Lines file (the export format, the default),
from an OmniRoute database (``import omniroute PATH``), or from a mem0 export
(``import mem0 FILE``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from memoryd.cli._common import cli_command, emit, local_engine, resolve_key
from memoryd.core.public import public
from memoryd.errors import ValidationError


class _ImportGroup(click.Group):
    """``memoryd import FILE`` stays the JSON Lines import: a first argument that names
    no subcommand (a file, ``-``, an option) goes to ``jsonl``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["jsonl", *args]
        return super().parse_args(ctx, args)


@click.group("import", cls=_ImportGroup)
def import_group() -> None:
    """Import memories: a JSON Lines file (default), OmniRoute or mem0."""


@import_group.command("jsonl")
@click.argument("source", type=click.File("rb"), default="-")
@click.option("--owner", "-k", default=None, help="Store every line under this key (id or name).")
@cli_command
def import_jsonl(ctx: click.Context, source: Any, owner: str | None) -> None:
    """Upsert memories from a JSON Lines file (or stdin; a JSON array too) by owner + key."""
    with local_engine(ctx) as engine:
        owner = owner and resolve_key(engine, owner, owner=True)
        result = engine.import_jsonl(source, owner=owner)

    def show() -> None:
        click.echo(
            f"imported {result.imported}, updated {result.updated}, "
            f"skipped {result.skipped}, errors {len(result.errors)}"
        )
        for err in result.errors:
            click.echo(f"  line {err['line']}: {err['message']}", err=True)

    emit(ctx, public(result), show)
    if result.errors:
        ctx.exit(1)


@import_group.command("omniroute")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--map",
    "maps",
    multiple=True,
    metavar="OLD=KEY",
    help="Put OmniRoute key OLD's memories under memoryd key KEY (id or name); repeatable. "
    "Default: a key named omniroute:OLD, made when missing.",
)
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--no-settings", is_flag=True, help="Leave memoryd's settings as they are.")
@cli_command
def import_omniroute(
    ctx: click.Context, path: Path, maps: tuple[str, ...], dry_run: bool, no_settings: bool
) -> None:
    """Memories, keys and memory settings from an OmniRoute database file."""
    from memoryd.engine.importers import from_omniroute, parse_mapping
    from memoryd.storage.sqlite.foreign import read_omniroute

    mapping = parse_mapping(maps)
    dump = read_omniroute(path)
    with local_engine(ctx) as engine:
        report = from_omniroute(engine, dump, mapping, dry_run=dry_run, settings=not no_settings)
    _show(ctx, report.to_dict())


@import_group.command("mem0")
@click.argument("source", type=click.File("rb"))
@click.option("--key", "-k", default=None, help="The key (id or name); default a key named mem0.")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@cli_command
def import_mem0(ctx: click.Context, source: Any, key: str | None, dry_run: bool) -> None:
    """Memories from a mem0 export (get_all's JSON); each user_id becomes an end user."""
    from memoryd.engine.importers import from_mem0

    try:
        data = json.load(source)
    except ValueError as exc:
        raise ValidationError(f"not JSON: {exc}") from None
    with local_engine(ctx) as engine:
        report = from_mem0(engine, data, key, dry_run=dry_run)
    _show(ctx, report.to_dict())


def _show(ctx: click.Context, report: dict[str, Any]) -> None:
    def text() -> None:
        head = "would import" if report["dryRun"] else "imported"
        for move in report["keys"]:
            made = " (new key)" if move["created"] else ""
            click.echo(
                f"{move['source'] or '(no key)'} -> {move['keyName']} {move['keyId']}{made}: "
                f"{move['rows']} rows, {move['expired']} expired (skipped)"
                + (
                    ""
                    if report["dryRun"]
                    else f", {move['imported']} {head}, {move['updated']} updated, "
                    f"{move['skipped']} unchanged, {len(move['errors'])} errors"
                )
            )
            if move["secret"]:
                click.echo(f"    secret (shown once): {move['secret']}")
            for err in move["errors"]:
                click.echo(f"    row {err['line']}: {err['message']}", err=True)
        for name, value in report["settings"].items():
            click.echo(
                f"setting {name} = {json.dumps(value)}" + (" (planned)" if report["dryRun"] else "")
            )
        for note in report["notes"]:
            click.echo(note)
        totals = report["totals"]
        click.echo(
            f"-- {head} {totals['imported']} new, {totals['updated']} updated, "
            f"{totals['skipped']} unchanged, {totals['expired']} expired skipped"
            if not report["dryRun"]
            else f"-- dry run: {totals['rows']} rows, {totals['expired']} expired; nothing changed"
        )

    emit(ctx, report, text)
    if report["errors"]:
        ctx.exit(1)
