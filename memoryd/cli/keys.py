"""``memoryd keys …``: client API keys on the local data dir (through ``engine.keys``).

A key's id is the owner id of its memories; a command that names a key takes its id or
its name (``resolve_key``).
"""

from __future__ import annotations

import sys

import click

from memoryd.cli._common import cli_command, emit, local_engine, resolve_key
from memoryd.errors import NotFoundError

#: The per-key memory override on the command line: on, off, or follow the global setting.
_FLAG = {"on": True, "off": False, "default": None}


@click.group()
def keys() -> None:
    """Create, list and revoke client API keys."""


@keys.command("create")
@click.argument("name")
@click.option("--id", "key_id", default=None, help="Explicit key id (default: random key_…).")
@click.option(
    "--memory",
    type=click.Choice(list(_FLAG)),
    default="default",
    show_default=True,
    help="Memory for this key: on, off, or follow the global setting.",
)
@click.option(
    "--secret",
    default=None,
    metavar="S",
    help="The secret the key's client already holds (e.g. its OmniRoute key; 16-256 "
    "printable ASCII chars) instead of a new one; - reads it from stdin, out of the shell "
    "history.",
)
@cli_command
def keys_create(
    ctx: click.Context, name: str, key_id: str | None, memory: str, secret: str | None
) -> None:
    """Create a key named NAME. Its secret is printed once and never stored."""
    if secret == "-":
        secret = sys.stdin.readline().rstrip("\r\n")
    with local_engine(ctx) as engine:
        record, made = engine.keys.create(
            name, memory_enabled=_FLAG[memory], key_id=key_id, secret=secret
        )
    payload = {**record.to_dict(), "key": made}
    if secret is not None:  # the caller has it: not printed again
        text = f"created {record.id} with the given secret (shown as {record.prefix}…)"
    else:
        text = f"created {record.id}\n{made}\n(the secret is shown only once)"
    emit(ctx, payload, text)


@keys.command("list")
@click.option("--live", is_flag=True, help="Hide revoked keys.")
@cli_command
def keys_list(ctx: click.Context, live: bool) -> None:
    """List keys, newest first (never a secret)."""
    with local_engine(ctx) as engine:
        data = [k.to_dict() for k in engine.keys.list(include_revoked=not live)]

    def show() -> None:
        names = {True: "on", False: "off", None: "default"}
        for k in data:
            revoked = f"  revoked {k['revokedAt']}" if k["revokedAt"] else ""
            memory = names[k["memoryEnabled"]]
            click.echo(f"{k['id']}  {k['prefix']}…  {k['name']}  memory={memory}{revoked}")
        click.echo(f"-- {len(data)} keys")

    emit(ctx, {"data": data}, show)


@keys.command("revoke")
@click.argument("key_id", metavar="KEY")
@cli_command
def keys_revoke(ctx: click.Context, key_id: str) -> None:
    """Revoke KEY (its id or name): it stops authenticating at once here, and within
    about 2 s in a server running on the same data. Its memories stay."""
    with local_engine(ctx) as engine:
        key_id = resolve_key(engine, key_id)
        if not engine.keys.revoke(key_id):
            raise NotFoundError(f"no live API key with id {key_id}")
    emit(ctx, {"revoked": True}, f"revoked {key_id}")


@keys.command("enable-memory")
@click.argument("key_id", metavar="KEY")
@click.argument("value", type=click.Choice(list(_FLAG)), default="on")
@cli_command
def keys_enable_memory(ctx: click.Context, key_id: str, value: str) -> None:
    """Set memory for KEY (its id or name): on (default), off, or default (follow the
    global setting)."""
    with local_engine(ctx) as engine:
        key_id = resolve_key(engine, key_id)
        key = engine.keys.set_memory_enabled(key_id, _FLAG[value])
    if key is None:
        raise NotFoundError(f"no API key with id {key_id}")
    emit(ctx, {"key": key.to_dict()}, f"{key_id}: memory {value}")
