"""``memoryd mcp``: the memory tools over MCP stdio, for clients that launch memoryd.

The caller is fixed for the life of the process: ``--api-key`` (a client key's
secret, also read from ``MEMORYD_API_KEY``) scopes every tool to that key and is
re-checked on each call, so a revoke takes effect; ``--admin`` acts as the admin
(every call must name ``apiKeyId``), which only someone who can read the data dir
can do anyway. stdout carries the protocol; logs go to stderr.

A client starts the server with a minimal environment: no virtualenv on its PATH and
no ``MEMORYD_DATA_DIR``. So ``--print-config`` writes the client's config with every
path absolute, and the server refuses a data dir without a database rather than make
an empty one (where every key would be "invalid or revoked").
"""

from __future__ import annotations

import json
import logging
import os
import sys
import sysconfig
from pathlib import Path
from typing import Any

import click

from memoryd.cli._common import handles_errors
from memoryd.config import EngineConfig
from memoryd.errors import AuthError, NotFoundError, ValidationError

#: The clients ``--print-config`` knows, each with its own file format.
CLIENTS = ("claude", "cursor", "vscode")
#: Where each client reads the printed config from (said in the stderr hint).
CONFIG_FILES = {
    "claude": "claude_desktop_config.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
}
PLACEHOLDER_KEY = "mk_your_client_key"


@click.command("mcp")
@click.option(
    "--api-key",
    envvar="MEMORYD_API_KEY",
    default=None,
    help="Client key secret (mk_…) to act as; default $MEMORYD_API_KEY.",
)
@click.option("--admin", is_flag=True, help="Act as the admin: each call names its apiKeyId.")
@click.option(
    "--print-config",
    "client",
    type=click.Choice(CLIENTS),
    is_flag=False,
    flag_value="claude",
    default=None,
    help="Print this client's config for this data dir and key (default claude), and exit.",
)
@click.pass_context
@handles_errors
def mcp_cmd(ctx: click.Context, api_key: str | None, admin: bool, client: str | None) -> None:
    """Serve the MCP memory tools over stdio (until stdin closes), or print the config
    that makes a client start this (--print-config)."""
    if admin and api_key:
        raise ValidationError("memoryd mcp needs exactly one of --api-key KEY or --admin")
    config = EngineConfig.from_env(os.environ, data_dir=ctx.obj["data_dir"])
    if client is not None:
        print_config(client, config, api_key=api_key, admin=admin)
        return
    if not admin and not api_key:
        raise ValidationError("memoryd mcp needs exactly one of --api-key KEY or --admin")
    require_database(config)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from memoryd.bootstrap import open_engine
    from memoryd.mcp.server import ADMIN, PrincipalSource, build_server, key_principal

    engine = open_engine(data_dir=config.data_dir)
    try:
        principal: PrincipalSource = lambda: ADMIN  # noqa: E731
        if api_key:
            if engine.keys.authenticate(api_key) is None:
                raise AuthError("invalid or revoked API key")
            principal = key_principal(engine, api_key)
        build_server(engine, principal=principal).run("stdio")
    finally:
        engine.drain(timeout=30)
        engine.close()


def require_database(config: EngineConfig) -> None:
    """Refuse a data dir without a database, before anything is created in it: a client
    that dropped ``MEMORYD_DATA_DIR`` would otherwise get a new, empty ~/.memoryd that
    answers every call "invalid or revoked API key". (``serve`` and the other commands
    still create it.)"""
    if config.database_url or config.db_path.is_file():
        return
    raise NotFoundError(
        f"no memoryd database at {absolute(config.db_path)} (memoryd mcp does not create "
        f"one): create a key there first (memoryd --data-dir {absolute(config.data_dir)} "
        "keys create NAME), or point --data-dir / MEMORYD_DATA_DIR at the dir with your keys"
    )


def absolute(path: Path) -> Path:
    """``path`` from the root, symlinks kept: a client starts us from anywhere."""
    return Path(os.path.abspath(path.expanduser()))


def server_command() -> list[str]:
    """How a client starts this install's memoryd: the console script next to this
    interpreter, by absolute path (a client's PATH has no virtualenv), else this
    interpreter with ``-m`` (a ``--user`` script elsewhere may be another install's)."""
    for name in ("memoryd", "memoryd.exe"):
        script = Path(sysconfig.get_path("scripts")) / name
        if script.is_file() and os.access(script, os.X_OK):
            return [str(absolute(script))]
    return [str(absolute(Path(sys.executable))), "-m", "memoryd"]


def client_config(
    client: str, config: EngineConfig, *, api_key: str | None, admin: bool
) -> dict[str, Any]:
    """The ``memoryd`` server entry in ``client``'s own format. The data dir goes both
    as ``--data-dir`` and in the environment, and so does the PostgreSQL URL when one
    is set: the client passes nothing of the environment it was started from."""
    command, *args = server_command()
    data_dir = str(absolute(config.data_dir))
    env = {"MEMORYD_DATA_DIR": data_dir}
    if config.database_url:  # its password opens every tenant's rows: never in a file
        env["MEMORYD_DATABASE_URL"] = without_password(config.database_url)
        if env["MEMORYD_DATABASE_URL"] != config.database_url:
            click.echo(
                "note: the database password is left out of the config (a client config "
                "file is often shared): put it in place of PASSWORD yourself",
                err=True,
            )
    if not admin:  # the secret in the environment, not in the process list
        env["MEMORYD_API_KEY"] = api_key or PLACEHOLDER_KEY
    server = {
        "command": command,
        "args": [*args, "--data-dir", data_dir, "mcp", *(["--admin"] if admin else [])],
        "env": env,
    }
    if client == "vscode":
        return {"servers": {"memoryd": {"type": "stdio", **server}}}
    return {"mcpServers": {"memoryd": server}}


def print_config(client: str, config: EngineConfig, *, api_key: str | None, admin: bool) -> None:
    """Print the config once what it names works: a key given is checked against the
    data dir (a bad one would only show in the client, as a failure on every call)."""
    if api_key or admin:
        require_database(config)
    if api_key:
        from memoryd.bootstrap import open_engine

        engine = open_engine(data_dir=config.data_dir, start_indexing=False)
        try:
            if engine.keys.authenticate(api_key) is None:
                raise AuthError(f"invalid or revoked API key for {absolute(config.data_dir)}")
        finally:
            engine.close()
    click.echo(json.dumps(client_config(client, config, api_key=api_key, admin=admin), indent=2))
    if not api_key and not admin:
        data_dir = absolute(config.data_dir)
        click.echo(
            f"no API key given: replace {PLACEHOLDER_KEY} with a secret from "
            f"`memoryd --data-dir {data_dir} keys create NAME` (or pass --api-key / "
            f"MEMORYD_API_KEY); then paste this into {CONFIG_FILES[client]}",
            err=True,
        )


def without_password(url: str) -> str:
    """``url`` with its password replaced by ``PASSWORD`` (a URL without one as is)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:PASSWORD@{host}"))
