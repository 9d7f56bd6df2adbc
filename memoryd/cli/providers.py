"""``memoryd providers …``: named upstream providers on the local data dir
(docs/design/gateway.md#providers)."""

from __future__ import annotations

import re
from typing import cast

import click

from memoryd.cli._common import cli_command, emit, local_engine
from memoryd.config.upstreams import (
    NAME_PATTERN,
    PROVIDER_KINDS,
    SYSTEM_ROLES,
    Provider,
    ProviderKind,
    base_url_problem,
    save_providers,
    stored_providers,
)
from memoryd.core.injection import SystemRole
from memoryd.errors import NotFoundError, ValidationError


@click.group()
def providers() -> None:
    """Upstream LLM providers the gateway forwards to ("name/model" routing)."""


@providers.command("add")
@click.argument("name")
@click.argument("base_url")
@click.option("--api-key", default=None, help="API key sent upstream with each request.")
@click.option("--system-role", type=click.Choice(SYSTEM_ROLES), default="auto", show_default=True)
@click.option(
    "--kind",
    type=click.Choice(PROVIDER_KINDS),
    default="openai",
    show_default=True,
    help="API the provider speaks: OpenAI-compatible or Anthropic Messages.",
)
@cli_command
def providers_add(
    ctx: click.Context,
    name: str,
    base_url: str,
    api_key: str | None,
    system_role: str,
    kind: str,
) -> None:
    """Add or replace provider NAME at BASE_URL (e.g. http://127.0.0.1:8000/v1)."""
    problem = base_url_problem(base_url)
    if problem is not None:  # as the REST API checks it
        raise ValidationError(f"base_url: {problem}")
    if not re.fullmatch(NAME_PATTERN, name):  # as the REST API checks it
        raise ValidationError("name: 1-64 letters, digits, '_', '.' or '-'")
    with local_engine(ctx) as engine:
        kept = [p for p in stored_providers(engine.store) if p.name != name]
        role = cast(SystemRole, system_role)
        new = Provider(name, base_url.rstrip("/"), api_key or None, role, cast(ProviderKind, kind))
        save_providers(engine.store, [*kept, new])
    emit(ctx, new.to_dict(), f"provider {name} ({new.kind}) -> {new.base_url}")


@providers.command("list")
@cli_command
def providers_list(ctx: click.Context) -> None:
    """Configured providers, keys masked (includes the env default)."""
    with local_engine(ctx) as engine:
        rows = [p.to_dict() for p in engine.providers().values()]

    def show() -> None:
        for row in rows:
            key = row["apiKey"] or "-"
            click.echo(
                f"{row['name']:12s} {row['kind']:9s} {row['baseUrl']}  key={key}"
                f"  role={row['systemRole']}"
            )
        if not rows:
            click.echo(
                "no providers: `memoryd providers add NAME URL`, MEMORYD_UPSTREAM_BASE_URL"
                " or MEMORYD_ANTHROPIC_BASE_URL"
            )

    emit(ctx, rows, show)


@providers.command("remove")
@click.argument("name")
@cli_command
def providers_remove(ctx: click.Context, name: str) -> None:
    """Remove stored provider NAME."""
    with local_engine(ctx) as engine:
        stored = stored_providers(engine.store)
        if not any(p.name == name for p in stored):
            raise NotFoundError(f"no stored provider named {name}")
        save_providers(engine.store, [p for p in stored if p.name != name])
    emit(ctx, {"removed": name}, f"removed provider {name}")
