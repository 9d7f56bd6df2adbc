"""``memoryd mcp``: the memory tools over MCP stdio, for clients that launch memoryd.

The caller is fixed for the life of the process: ``--api-key`` (a client key's
secret, also read from ``MEMORYD_API_KEY``) scopes every tool to that key and is
re-checked on each call, so a revoke takes effect; ``--admin`` acts as the admin
(every call must name ``apiKeyId``), which only someone who can read the data dir
can do anyway. stdout carries the protocol; logs go to stderr.
"""

from __future__ import annotations

import logging
import sys

import click

from memoryd.cli._common import handles_errors
from memoryd.errors import AuthError, ValidationError


@click.command("mcp")
@click.option(
    "--api-key",
    envvar="MEMORYD_API_KEY",
    default=None,
    help="Client key secret (mk_…) to act as; default $MEMORYD_API_KEY.",
)
@click.option("--admin", is_flag=True, help="Act as the admin: each call names its apiKeyId.")
@click.pass_context
@handles_errors
def mcp_cmd(ctx: click.Context, api_key: str | None, admin: bool) -> None:
    """Serve the MCP memory tools over stdio (until stdin closes)."""
    if admin == bool(api_key):
        raise ValidationError("memoryd mcp needs exactly one of --api-key KEY or --admin")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    from memoryd.bootstrap import open_engine
    from memoryd.mcp.server import ADMIN, PrincipalSource, build_server, key_principal

    engine = open_engine(data_dir=ctx.obj["data_dir"])
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
