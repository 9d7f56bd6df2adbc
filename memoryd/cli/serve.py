"""``memoryd serve``: one server process (``memoryd.server``), or several behind one
port with ``--workers`` (``memoryd.supervisor``)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import click

from memoryd.config import default_data_dir
from memoryd.server import (
    ServeError,
    Worker,
    default_host,
    default_log_level,
    default_port,
    default_workers,
    serve,
)


@click.command("serve")
@click.option(
    "--host", default=None, help="Interface to bind (default $MEMORYD_HOST or 127.0.0.1)."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port (default $MEMORYD_PORT or 20128; 0 picks a free one).",
)
@click.option(
    "--data-dir",
    "serve_data_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Data directory (overrides the global --data-dir).",
)
@click.option(
    "--database-url",
    default=None,
    help="postgresql://... : the shared PostgreSQL store (default $MEMORYD_DATABASE_URL; "
    "unset: the SQLite file in the data dir).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=None,
    help="Server processes on this port (default $MEMORYD_WORKERS or 1); more than one "
    "needs the PostgreSQL store.",
)
@click.option("--worker-of", "worker_of", default=None, hidden=True)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default=None,
    help="Log level (default $MEMORYD_LOG_LEVEL or info).",
)
@click.option(
    "--log-format",
    type=click.Choice(["auto", "json", "text"], case_sensitive=False),
    default=None,
    help="Log lines as JSON or text (default $MEMORYD_LOG_FORMAT or auto: JSON unless a TTY).",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Try memoryd without a provider key: a built-in stand-in provider answers each "
    "chat with the memories memoryd sent it.",
)
@click.option(
    "--dev",
    is_flag=True,
    help="A development server: accept an admin token under 16 characters (default $MEMORYD_DEV).",
)
@click.pass_context
def serve_command(
    ctx: click.Context,
    host: str | None,
    port: int | None,
    serve_data_dir: str | None,
    database_url: str | None,
    workers: int | None,
    worker_of: str | None,
    log_level: str | None,
    log_format: str | None,
    demo: bool,
    dev: bool,
) -> None:
    """Run the server: REST API, /healthz and /metrics (Ctrl+C or SIGTERM stops it)."""
    env: Mapping[str, str] = os.environ
    if database_url:
        env = {**env, "MEMORYD_DATABASE_URL": database_url}
    if dev:
        env = {**env, "MEMORYD_DEV": "1"}
    try:
        fmt = (log_format or "").lower() or env.get("MEMORYD_LOG_FORMAT", "").strip().lower()
        level = (log_level or default_log_level(env)).lower()
        where = (
            host or default_host(env),
            default_port(env) if port is None else port,
            serve_data_dir or (ctx.obj or {}).get("data_dir") or default_data_dir(env),
        )
        count = default_workers(env) if workers is None else workers
        if demo and count > 1:
            raise ServeError("--demo runs one process: drop --workers (or MEMORYD_WORKERS)")
        if count > 1 and worker_of is None:
            from memoryd.supervisor import run_workers

            run_workers(count, *where, log_level=level, log_format=fmt, env=env)
            return
        serve(
            *where,
            log_level=level,
            json_logs={"json": True, "text": False}.get(fmt),
            env=env,
            worker=None if worker_of is None else Worker.parse(worker_of),
            demo=demo,
        )
    except ServeError as exc:
        click.echo(f"error: {exc.message}", err=True)
        ctx.exit(1)
