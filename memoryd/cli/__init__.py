"""The ``memoryd`` command line: a thin layer over ``MemoryEngine`` on a local data dir.

Every command takes ``--json`` for machine-readable output. Errors print one line
(or one JSON error object) to stderr and exit 1; no tracebacks for bad input.

Each command group lives in its own module and knows nothing of ``main``; this module
builds ``main`` and registers them, so imports point one way (``_common`` <- groups <-
here).
"""

from __future__ import annotations

import click

from memoryd import __version__
from memoryd.cli import admin, backup, evaluation, keys, mcp, memory, migrate, providers, serve
from memoryd.cli._common import json_option
from memoryd.config import default_data_dir


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    admin.import_cmd,
    admin.gc_cmd,
    admin.status_cmd,
    admin.reindex_cmd,
    admin.models,
    backup.backup_cmd,
    evaluation.eval_group,
    keys.keys,
    migrate.migrate_cmd,
    mcp.mcp_cmd,
    providers.providers,
    serve.serve_command,  # memoryd/cli/serve.py over memoryd/server.py
):
    main.add_command(command)

__all__ = ["main"]
