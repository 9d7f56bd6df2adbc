"""The ``memoryd`` command line: a thin layer over ``MemoryEngine`` on a local data dir.

Every command takes ``--json`` for machine-readable output. Errors print one line
(or one JSON error object) to stderr and exit 1; no tracebacks for bad input.

Each command group lives in its own module and knows nothing of ``main``; this module
builds ``main`` and registers them, so imports point one way (``_common`` <- groups <-
here).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from memoryd import __version__
from memoryd.cli import (
    admin,
    backup,
    doctor,
    importing,
    keys,
    mcp,
    memory,
    migrate,
    providers,
    serve,
)
from memoryd.cli._common import json_option
from memoryd.config import default_data_dir

#: Commands whose modules load the evaluation harnesses (~0.2 s of imports): imported
#: when run, so ``--help`` and every other command stay fast. name -> (module, attribute,
#: the one-line help shown in ``memoryd --help``).
LAZY: dict[str, tuple[str, str, str]] = {
    "eval": (
        "memoryd.cli.evaluation",
        "eval_group",
        "Evaluate retrieval and extraction (LoCoMo, LongMemEval, the labelled set).",
    ),
}


class LazyGroup(click.Group):
    """A group that imports the ``LAZY`` commands only when one is invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY and name not in self.commands:
            module, attribute, _ = LAZY[name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in LAZY and name not in self.commands:
                rows.append((name, LAZY[name][2]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memoryd")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Data directory (default $MEMORYD_DATA_DIR or ~/.memoryd).",
)
@json_option
@click.pass_context
def main(ctx: click.Context, data_dir: str | None) -> None:
    """memoryd: long-term memory for LLM traffic."""
    ctx.ensure_object(dict)
    ctx.obj["data_dir"] = data_dir or str(default_data_dir())


for command in (
    memory.memory,
    admin.export_cmd,
    importing.import_group,
    admin.gc_cmd,
    admin.status_cmd,
    admin.reindex_cmd,
    admin.models,
    backup.backup_cmd,
    doctor.doctor_cmd,
    keys.keys,
    migrate.migrate_cmd,
    mcp.mcp_cmd,
    providers.providers,
    serve.serve_command,  # memoryd/cli/serve.py over memoryd/server.py
):
    main.add_command(command)

__all__ = ["main"]
