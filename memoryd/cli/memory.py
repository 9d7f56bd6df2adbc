"""``memoryd memory …``: add, remember, list, get, search, delete, clear and update
memories in the local data dir; forget (erase a key or one end user) and erasures."""

from __future__ import annotations

import json
import sys

import click

from memoryd.cli._common import (
    TYPES,
    cli_command,
    emit,
    local_engine,
    memory_row,
    parse_date,
    resolve_key,
)
from memoryd.errors import NotFoundError, ValidationError
from memoryd.models import MemoryPatch, MemoryType, NewMemory, to_iso

#: What ``-k`` takes, said once (resolve_key: a key's id or name).
OWNER_HELP = "Owner: a client API key's id or name."


@click.group()
def memory() -> None:
    """Add, list, search and delete memories in the local data dir."""


@memory.command("add")
@click.argument("content")
@click.option("--owner", "-k", required=True, help=OWNER_HELP)
@click.option("--key", default=None, help="Upsert key (derived from the content if omitted).")
@click.option("--type", "type_", type=TYPES, default="factual", show_default=True)
@click.option("--session", default="", help="Session id.")
@click.option("--metadata", default=None, help="JSON object.")
@click.option("--expires-at", default=None, help="ISO-8601 expiry.")
@cli_command
def memory_add(
    ctx: click.Context,
    content: str,
    owner: str,
    key: str | None,
    type_: str,
    session: str,
    metadata: str | None,
    expires_at: str | None,
) -> None:
    """Store CONTENT for an owner (upsert on owner + key)."""
    try:
        meta = json.loads(metadata) if metadata else None
    except ValueError as exc:
        raise ValidationError(f"metadata: invalid JSON: {exc}") from None
    expiry = parse_date(expires_at, "expires-at")
    with local_engine(ctx) as engine:
        new = NewMemory(
            api_key_id=resolve_key(engine, owner, owner=True),
            content=content,
            key=key,
            type=MemoryType(type_),
            session_id=session,
            metadata=meta,
            expires_at=expiry,
        )
        stored, created = engine.create(new)
    verb = "created" if created else "updated"
    emit(
        ctx,
        {"id": stored.id, "created": created, "memory": stored.to_dict()},
        f"{verb} {stored.id} ({stored.key})",
    )


@memory.command("remember")
@click.argument("text")
@click.option("--owner", "-k", required=True, help=OWNER_HELP)
@click.option("--session", default="", help="Session id.")
@cli_command
def memory_remember(ctx: click.Context, text: str, owner: str, session: str) -> None:
    """Extract the facts TEXT states (as from a chat message) and store them."""
    with local_engine(ctx) as engine:
        owner = resolve_key(engine, owner, owner=True)
        results = engine.extract_now(owner, text, session_id=session)
    stored = [r.memory.to_dict() | {"superseded": r.superseded} for r in results if r.memory]

    def show() -> None:
        for item in stored:
            replaced = f" (replaces {len(item['superseded'])})" if item["superseded"] else ""
            click.echo(f"{item['content']}  [{item['metadata'].get('slot')}]{replaced}")
        click.echo(f"-- {len(stored)} facts")

    emit(ctx, {"data": stored}, show)


@memory.command("list")
@click.option(
    "--owner", "-k", default=None, help="Only this owner, a key's id or name (default: all)."
)
@click.option("--type", "type_", type=TYPES, default=None)
@click.option("--session", default=None)
@click.option("--q", "query", default=None, help="Substring of content or key.")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--page", type=int, default=1, show_default=True)
@click.option("--history", is_flag=True, help="Also list superseded memories.")
@cli_command
def memory_list(
    ctx: click.Context,
    owner: str | None,
    type_: str | None,
    session: str | None,
    query: str | None,
    limit: int,
    page: int,
    history: bool,
) -> None:
    """List memories, newest first."""
    with local_engine(ctx) as engine:
        result = engine.list_memories(
            owner=None if owner is None else resolve_key(engine, owner, owner=True),
            type=MemoryType(type_) if type_ else None,
            session_id=session,
            q=query,
            limit=limit,
            page=page,
            history=history,
        )
    payload = {
        "data": [m.to_dict() for m in result.data],
        "total": result.total,
        "page": result.page,
        "limit": result.limit,
        "totalPages": result.total_pages,
        "byType": result.by_type,
    }

    def show() -> None:
        for item in result.data:
            click.echo(memory_row(item))
        click.echo(
            f"-- {len(result.data)} of {result.total} (page {result.page}/"
            f"{max(1, result.total_pages)})"
        )

    emit(ctx, payload, show)


@memory.command("get")
@click.argument("memory_id")
@cli_command
def memory_get(ctx: click.Context, memory_id: str) -> None:
    """Show one memory."""
    with local_engine(ctx) as engine:
        found = engine.get(memory_id)
    if found is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    data = found.to_dict()
    emit(ctx, {"memory": data}, json.dumps(data, indent=2, ensure_ascii=False))


@memory.command("search")
@click.argument("query")
@click.option("--owner", "-k", required=True, help=OWNER_HELP)
@click.option("--strategy", type=click.Choice(["recent", "exact", "semantic", "hybrid"]))
@click.option(
    "--max-tokens",
    type=click.IntRange(1, 16000),
    default=None,
    help="Token budget of what is returned (default: the memory settings').",
)
@click.option("--limit", type=int, default=None)
@click.option("--session", default=None)
@cli_command
def memory_search(
    ctx: click.Context,
    query: str,
    owner: str,
    strategy: str | None,
    max_tokens: int | None,
    limit: int | None,
    session: str | None,
) -> None:
    """Preview what would be injected for QUERY (does not count as an access)."""
    with local_engine(ctx) as engine:
        preview = engine.preview(
            resolve_key(engine, owner, owner=True),
            query,
            strategy=strategy,
            max_tokens=max_tokens,
            limit=limit,
            session_id=session,
            scope="session" if session else None,
        )

    def show() -> None:
        for hit in preview.hits:
            line = f"{hit.score:8.4f}  {hit.tier:10s} {hit.tokens:4d}t  {hit.memory.content}"
            click.echo(line)
        res = preview.resolution
        click.echo(
            f"-- {len(preview.hits)} hits, {preview.total_tokens}/{preview.budget_max_tokens}"
            f" tokens, strategy {res.strategy_used}"
            + (f" ({res.fallback_reason})" if res.fallback_reason else "")
        )

    emit(ctx, preview.to_dict(), show)


@memory.command("delete")
@click.argument("memory_id")
@cli_command
def memory_delete(ctx: click.Context, memory_id: str) -> None:
    """Delete one memory."""
    with local_engine(ctx) as engine:
        deleted = engine.delete(memory_id)
    if not deleted:
        raise NotFoundError(f"no memory with id {memory_id}")
    emit(ctx, {"deleted": True}, f"deleted {memory_id}")


@memory.command("clear")
@click.option("--owner", "-k", required=True, help=OWNER_HELP)
@click.option("--type", "type_", type=TYPES, default=None)
@click.option("--older-than", default=None, help="ISO-8601 date: only memories created before it.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@cli_command
def memory_clear(
    ctx: click.Context, owner: str, type_: str | None, older_than: str | None, yes: bool
) -> None:
    """Delete every memory of an owner matching the filters."""
    cutoff = parse_date(older_than, "older-than")
    if not yes and (ctx.obj.get("json") or not sys.stdin.isatty()):  # scripts: --yes
        raise click.UsageError("refusing to delete without --yes: nothing to confirm on")
    with local_engine(ctx) as engine:
        owner = resolve_key(engine, owner, owner=True)  # the prompt names the real owner
        if not yes:
            click.confirm(f"Delete matching memories of {owner}?", abort=True)
        count = engine.clear(owner, type=MemoryType(type_) if type_ else None, older_than=cutoff)
    emit(ctx, {"deletedCount": count}, f"deleted {count} memories")


@memory.command("forget")
@click.option("--owner", "-k", required=True, help="The key (id or name) whose memories go.")
@click.option("--user", "user_id", default=None, help="The end user of the key to erase.")
@click.option("--all", "whole", is_flag=True, help="Every end user of the key instead.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@cli_command
def memory_forget(
    ctx: click.Context, owner: str, user_id: str | None, whole: bool, yes: bool
) -> None:
    """Erase an end user of a key (or, with --all, all of the key's memories) everywhere
    memoryd keeps them, history included; prints the receipt, which holds no erased
    content."""
    if (user_id is None) == (not whole):
        raise click.UsageError("name the end user (--user U) or erase the whole key (--all)")
    if not yes and (ctx.obj.get("json") or not sys.stdin.isatty()):  # scripts: --yes
        raise click.UsageError("refusing to erase without --yes: nothing to confirm on")
    with local_engine(ctx) as engine:
        owner = resolve_key(engine, owner, owner=True)  # the prompt names the real owner
        if not yes:
            who = f"end user {user_id!r} of {owner}" if user_id is not None else f"all of {owner}"
            click.confirm(f"Erase every memory of {who}? This cannot be undone.", abort=True)
        receipt = engine.forget(owner, user_id=user_id)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(receipt.counts.items()))
    emit(ctx, {"erasure": receipt.to_dict()}, f"erased ({counts}): receipt {receipt.id}")


@memory.command("erasures")
@click.option("--owner", "-k", default=None, help="Only this key's (id or name) receipts.")
@click.option("--limit", type=click.IntRange(1, 1000), default=100)
@cli_command
def memory_erasures(ctx: click.Context, owner: str | None, limit: int) -> None:
    """The erasure receipts, newest first."""
    with local_engine(ctx) as engine:
        found = engine.erasures(owner and resolve_key(engine, owner, owner=True), limit)
    lines = [
        f"{e.id}  {to_iso(e.erased_at)}  {e.api_key_id}  "
        f"{'all end users' if e.user_id is None else 'end user ' + repr(e.user_id)}  "
        + ", ".join(f"{k} {v}" for k, v in sorted(e.counts.items()))
        for e in found
    ]
    emit(ctx, {"erasures": [e.to_dict() for e in found]}, "\n".join(lines) or "no erasures")


def printable(text: str) -> str:
    """``text`` with control characters escaped: a held message is hostile by nature,
    and a terminal obeys the escape sequences printed to it."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


@memory.command("held")
@click.option("--owner", "-k", default=None, help="Only this key's (id or name).")
@click.option("--user", "user_id", default=None, help="Only this end user's.")
@click.option(
    "--release", "release_id", type=click.IntRange(1, 2**63 - 1), help="Extract this one."
)
@click.option("--discard", "discard_id", type=click.IntRange(1, 2**63 - 1), help="Delete this one.")
@cli_command
def memory_held(
    ctx: click.Context,
    owner: str | None,
    user_id: str | None,
    release_id: int | None,
    discard_id: int | None,
) -> None:
    """Messages the guard held for review (setting quarantineGuarded): list them, or
    release one (extracted as if the guard had let it pass) or discard it."""
    if release_id is not None and discard_id is not None:
        raise click.UsageError("--release or --discard, not both")
    with local_engine(ctx) as engine:
        if release_id is not None:
            stored = [r.memory for r in engine.release_held(release_id) if r.memory]
            payload = {"stored": [m.to_dict() for m in stored]}
            emit(ctx, payload, f"released {release_id}: stored {len(stored)} memories")
            return
        if discard_id is not None:
            gone = engine.discard_held(discard_id)
            emit(ctx, {"discarded": gone.to_dict()}, f"discarded {discard_id}")
            return
        found = engine.held(owner and resolve_key(engine, owner, owner=True), user_id)
    lines = [
        f"{h.id}  {to_iso(h.said_at)}  {h.api_key_id}"
        + (f" user={h.user_id}" if h.user_id else "")
        + f"  [{h.reason}]\n    {printable(h.text[:300])}"
        for h in found
    ]
    emit(ctx, {"held": [h.to_dict() for h in found]}, "\n".join(lines) or "nothing held")


@memory.command("update")
@click.argument("memory_id")
@click.option("--content", default=None)
@click.option("--key", default=None)
@click.option("--type", "type_", type=TYPES, default=None)
@cli_command
def memory_update(
    ctx: click.Context, memory_id: str, content: str | None, key: str | None, type_: str | None
) -> None:
    """Change a memory's content, key or type."""
    if content is None and key is None and type_ is None:
        raise click.UsageError("nothing to change: give --content, --key or --type")
    patch = MemoryPatch(content=content, key=key, type=MemoryType(type_) if type_ else None)
    with local_engine(ctx) as engine:
        updated = engine.update(memory_id, patch)
    if updated is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    emit(ctx, {"memory": updated.to_dict()}, f"updated {memory_id}")


@memory.command("pin")
@click.argument("memory_id")
@click.option(
    "--out",
    "mode",
    flag_value="out",
    help="Keep it out of the profile instead (even a standing instruction).",
)
@click.option("--auto", "mode", flag_value="auto", help="Let its attribute decide again.")
@cli_command
def memory_pin(ctx: click.Context, memory_id: str, mode: str | None) -> None:
    """Pin MEMORY_ID into its owner's profile, which every request carries."""
    pinned = {"out": False, "auto": None}.get(mode or "", True)
    with local_engine(ctx) as engine:
        memory = engine.pin(memory_id, pinned)
    if memory is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    state = {True: "pinned", False: "kept out of the profile", None: "attribute decides"}
    emit(ctx, {"memory": memory.to_dict()}, lambda: click.echo(f"{state[pinned]}: {memory.id}"))


@memory.command("unpin")
@click.argument("memory_id")
@cli_command
def memory_unpin(ctx: click.Context, memory_id: str) -> None:
    """Keep MEMORY_ID out of its owner's profile (``pin --out``)."""
    with local_engine(ctx) as engine:
        memory = engine.pin(memory_id, False)
    if memory is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    emit(ctx, {"memory": memory.to_dict()}, lambda: click.echo(f"unpinned: {memory.id}"))


@memory.command("profile")
@click.option("--owner", "-k", required=True, help=OWNER_HELP)
@click.option("--user", "user_id", default="", help="End user of the key.")
@click.option("--query", default="", help="A request's words (adds its advice topic).")
@cli_command
def memory_profile(ctx: click.Context, owner: str, user_id: str, query: str) -> None:
    """The profile every request of OWNER (or its end user) carries."""
    with local_engine(ctx) as engine:
        found = engine.profile(resolve_key(engine, owner, owner=True), query, user_id=user_id)

    def show() -> None:
        for hit in found.hits:
            meta = hit.memory.metadata
            why = "pinned" if meta.get("pinned") is True else meta.get("attribute") or "-"
            click.echo(f"{hit.memory.id}  {why:16s} {hit.tokens:4d}t  {hit.memory.content}")
        for hit in found.dropped:
            click.echo(f"{hit.memory.id}  {'dropped':16s} {hit.tokens:4d}t  {hit.memory.content}")
        click.echo(
            f"-- {len(found.hits)} in the profile, {found.tokens}/{found.budget_max_tokens} "
            f"tokens, {len(found.dropped)} over the budget"
        )

    emit(ctx, found.to_dict(), show)
