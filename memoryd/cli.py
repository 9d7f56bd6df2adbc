"""The ``memoryd`` command line: a thin layer over ``MemoryEngine`` on a local data dir.

Every command takes ``--json`` for machine-readable output. Errors print one line
(or one JSON error object) to stderr and exit 1; no tracebacks for bad input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from memoryd import __version__
from memoryd.bootstrap import open_engine
from memoryd.config import default_data_dir
from memoryd.engine import MemoryEngine
from memoryd.errors import MemorydError, NotFoundError, ValidationError
from memoryd.models import Memory, MemoryPatch, MemoryType, NewMemory, parse_iso
from memoryd.server import serve_command
from memoryd.storage.files import private_output

F = TypeVar("F", bound=Callable[..., Any])
TYPES = click.Choice([t.value for t in MemoryType])


@contextmanager
def _engine(ctx: click.Context) -> Iterator[MemoryEngine]:
    # No background reindex on open: a short command must not drain the whole queue.
    # What it leaves pending stays flagged and the server (or `memoryd reindex`) does it.
    engine = open_engine(data_dir=ctx.obj["data_dir"], start_indexing=False)
    try:
        yield engine
    finally:
        engine.drain(timeout=30, include_index=False)
        engine.close()


def _emit(ctx: click.Context, payload: Any, text: str | Callable[[], None]) -> None:
    if ctx.obj.get("json"):
        click.echo(json.dumps(payload, ensure_ascii=False, indent=None, default=str))
    elif callable(text):
        text()
    else:
        click.echo(text)


def handles_errors(fn: F) -> F:
    """Turn engine errors into a clean message and exit status 1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MemorydError as exc:
            ctx = click.get_current_context()
            if ctx.obj.get("json"):
                click.echo(json.dumps(exc.to_dict()), err=True)
            else:
                click.echo(f"error: {exc.message}", err=True)
            ctx.exit(1)

    return wrapper  # type: ignore[return-value]


def _json_option(fn: F) -> F:
    def remember(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        if value:
            ctx.ensure_object(dict)["json"] = True
        return value

    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        expose_value=False,
        callback=remember,
        help="Print machine-readable JSON.",
    )(fn)


def _date(value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return parse_iso(value)
    except ValueError:
        raise ValidationError(f"{name}: not an ISO-8601 date: {value!r}") from None


def _row(memory: Memory) -> str:
    session = f" session={memory.session_id}" if memory.session_id else ""
    session += "  (superseded)" if memory.superseded_at else ""
    return (
        f"{memory.id}  [{memory.type.value}] {memory.key}  owner={memory.api_key_id}{session}\n"
        f"    {memory.content}"
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memoryd")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Data directory (default $MEMORYD_DATA_DIR or ~/.memoryd).",
)
@_json_option
@click.pass_context
def main(ctx: click.Context, data_dir: str | None) -> None:
    """memoryd: long-term memory for LLM traffic."""
    ctx.ensure_object(dict)
    ctx.obj["data_dir"] = data_dir or str(default_data_dir())


@main.group()
def memory() -> None:
    """Add, list, search and delete memories in the local data dir."""


@memory.command("add")
@click.argument("content")
@click.option("--owner", "-k", required=True, help="Owner (client API key id).")
@click.option("--key", default=None, help="Upsert key (derived from the content if omitted).")
@click.option("--type", "type_", type=TYPES, default="factual", show_default=True)
@click.option("--session", default="", help="Session id.")
@click.option("--metadata", default=None, help="JSON object.")
@click.option("--expires-at", default=None, help="ISO-8601 expiry.")
@_json_option
@click.pass_context
@handles_errors
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
    new = NewMemory(
        api_key_id=owner,
        content=content,
        key=key,
        type=MemoryType(type_),
        session_id=session,
        metadata=meta,
        expires_at=_date(expires_at, "expires-at"),
    )
    with _engine(ctx) as engine:
        stored, created = engine.create(new)
    verb = "created" if created else "updated"
    _emit(
        ctx,
        {"id": stored.id, "created": created, "memory": stored.to_dict()},
        f"{verb} {stored.id} ({stored.key})",
    )


@memory.command("remember")
@click.argument("text")
@click.option("--owner", "-k", required=True, help="Owner (client API key id).")
@click.option("--session", default="", help="Session id.")
@_json_option
@click.pass_context
@handles_errors
def memory_remember(ctx: click.Context, text: str, owner: str, session: str) -> None:
    """Extract the facts TEXT states (as from a chat message) and store them."""
    with _engine(ctx) as engine:
        results = engine.extract_now(owner, text, session_id=session)
    stored = [r.memory.to_dict() | {"superseded": r.superseded} for r in results if r.memory]

    def show() -> None:
        for item in stored:
            replaced = f" (replaces {len(item['superseded'])})" if item["superseded"] else ""
            click.echo(f"{item['content']}  [{item['metadata'].get('slot')}]{replaced}")
        click.echo(f"-- {len(stored)} facts")

    _emit(ctx, {"data": stored}, show)


@memory.command("list")
@click.option("--owner", "-k", default=None, help="Only this owner (default: every owner).")
@click.option("--type", "type_", type=TYPES, default=None)
@click.option("--session", default=None)
@click.option("--q", "query", default=None, help="Substring of content or key.")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--page", type=int, default=1, show_default=True)
@click.option("--history", is_flag=True, help="Also list superseded memories.")
@_json_option
@click.pass_context
@handles_errors
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
    with _engine(ctx) as engine:
        result = engine.list_memories(
            owner=owner,
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
            click.echo(_row(item))
        click.echo(
            f"-- {len(result.data)} of {result.total} (page {result.page}/"
            f"{max(1, result.total_pages)})"
        )

    _emit(ctx, payload, show)


@memory.command("get")
@click.argument("memory_id")
@_json_option
@click.pass_context
@handles_errors
def memory_get(ctx: click.Context, memory_id: str) -> None:
    """Show one memory."""
    with _engine(ctx) as engine:
        found = engine.get(memory_id)
    if found is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    data = found.to_dict()
    _emit(ctx, {"memory": data}, json.dumps(data, indent=2, ensure_ascii=False))


@memory.command("search")
@click.argument("query")
@click.option("--owner", "-k", required=True)
@click.option("--strategy", type=click.Choice(["recent", "exact", "semantic", "hybrid"]))
@click.option("--max-tokens", type=int, default=None)
@click.option("--limit", type=int, default=None)
@click.option("--session", default=None)
@_json_option
@click.pass_context
@handles_errors
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
    with _engine(ctx) as engine:
        preview = engine.preview(
            owner,
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

    _emit(ctx, preview.to_dict(), show)


@memory.command("delete")
@click.argument("memory_id")
@_json_option
@click.pass_context
@handles_errors
def memory_delete(ctx: click.Context, memory_id: str) -> None:
    """Delete one memory."""
    with _engine(ctx) as engine:
        deleted = engine.delete(memory_id)
    if not deleted:
        raise NotFoundError(f"no memory with id {memory_id}")
    _emit(ctx, {"deleted": True}, f"deleted {memory_id}")


@memory.command("clear")
@click.option("--owner", "-k", required=True)
@click.option("--type", "type_", type=TYPES, default=None)
@click.option("--older-than", default=None, help="ISO-8601 date: only memories created before it.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_json_option
@click.pass_context
@handles_errors
def memory_clear(
    ctx: click.Context, owner: str, type_: str | None, older_than: str | None, yes: bool
) -> None:
    """Delete every memory of an owner matching the filters."""
    cutoff = _date(older_than, "older-than")
    if not yes and not ctx.obj.get("json") and sys.stdin.isatty():
        click.confirm(f"Delete matching memories of {owner}?", abort=True)
    with _engine(ctx) as engine:
        count = engine.clear(owner, type=MemoryType(type_) if type_ else None, older_than=cutoff)
    _emit(ctx, {"deletedCount": count}, f"deleted {count} memories")


@memory.command("update")
@click.argument("memory_id")
@click.option("--content", default=None)
@click.option("--key", default=None)
@click.option("--type", "type_", type=TYPES, default=None)
@_json_option
@click.pass_context
@handles_errors
def memory_update(
    ctx: click.Context, memory_id: str, content: str | None, key: str | None, type_: str | None
) -> None:
    """Change a memory's content, key or type."""
    patch = MemoryPatch(content=content, key=key, type=MemoryType(type_) if type_ else None)
    with _engine(ctx) as engine:
        updated = engine.update(memory_id, patch)
    if updated is None:
        raise NotFoundError(f"no memory with id {memory_id}")
    _emit(ctx, {"memory": updated.to_dict()}, f"updated {memory_id}")


@main.command("export")
@click.option("--owner", "-k", required=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.pass_context
@handles_errors
def export_cmd(ctx: click.Context, owner: str, output: Path | None) -> None:
    """Write every memory of an owner as JSON Lines (stdout, or a file made 0600)."""
    path = None if output is None or str(output) == "-" else output
    count = 0
    with _engine(ctx) as engine, private_output(path) as out:
        for item in engine.export(owner):
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
            count += 1
    if path:
        click.echo(f"exported {count} memories", err=True)


@main.command("import")
@click.argument("source", type=click.File("rb"), default="-")
@click.option("--owner", "-k", default=None, help="Store every line under this owner.")
@_json_option
@click.pass_context
@handles_errors
def import_cmd(ctx: click.Context, source: Any, owner: str | None) -> None:
    """Upsert memories from a JSON Lines file (or stdin) by owner + key."""
    with _engine(ctx) as engine:
        result = engine.import_jsonl(source, owner=owner)

    def show() -> None:
        click.echo(
            f"imported {result.imported}, updated {result.updated}, "
            f"skipped {result.skipped}, errors {len(result.errors)}"
        )
        for err in result.errors:
            click.echo(f"  line {err['line']}: {err['message']}", err=True)

    _emit(ctx, result.to_dict(), show)
    if result.errors:
        ctx.exit(1)


@main.command("gc")
@_json_option
@click.pass_context
@handles_errors
def gc_cmd(ctx: click.Context) -> None:
    """Delete expired memories (and run the typed-decay sweep when enabled)."""
    with _engine(ctx) as engine:
        expired = engine.gc()
        decay = engine.sweep_decay()
    payload = {"expiredDeleted": expired, "decay": decay}
    _emit(ctx, payload, f"deleted {expired} expired, {len(decay['deletedIds'])} decayed")


@main.command("status")
@_json_option
@click.pass_context
@handles_errors
def status_cmd(ctx: click.Context) -> None:
    """Engine status: keyword tier, embedding, vector store, reindex queue."""
    with _engine(ctx) as engine:
        status = engine.status()
        status["memories"] = engine.list_memories(limit=1).total
    _emit(ctx, status, lambda: click.echo(json.dumps(status, indent=2, ensure_ascii=False)))


@main.command("reindex")
@click.option("--force", is_flag=True, help="Re-embed every memory, not only pending ones.")
@click.option("--wait", is_flag=True, help="Stay until the queue is drained, with a progress bar.")
@_json_option
@click.pass_context
@handles_errors
def reindex_cmd(ctx: click.Context, force: bool, wait: bool) -> None:
    """Embed memories whose vectors are missing or stale."""
    with _engine(ctx) as engine:
        started = engine.reindex(force=force)
        if not wait or not started.get("started"):
            _emit(ctx, started, f"reindex started: {started['pending']} pending")
            return
        total = max(1, int(started["pending"]))
        show_bar = not ctx.obj.get("json")
        with click.progressbar(length=total, label="reindexing", file=sys.stderr) as bar:
            done = 0
            while engine.indexer is not None and not engine.indexer.join(timeout=0.25):
                now_done = total - int(engine.indexer.progress()["pending"])
                if show_bar and now_done > done:
                    bar.update(now_done - done)
                    done = now_done
            bar.update(total - done)
        progress = engine.indexer.progress() if engine.indexer else started
    _emit(ctx, progress, f"reindexed {progress.get('processed', 0)}, {progress['pending']} pending")


@main.group()
def models() -> None:
    """Local embedding models."""


@models.command("build-static")
@click.argument("output", type=click.Path(file_okay=False), required=False)
@click.option("--dims", type=int, default=256, show_default=True, help="PCA dimensions.")
@_json_option
@click.pass_context
@handles_errors
def build_static_cmd(ctx: click.Context, output: str | None, dims: int) -> None:
    """Distill a static (model2vec-style) embedder from the local MiniLM.

    Writes to OUTPUT (default <data dir>/models/static), where `staticEnabled` finds it.
    """
    from pathlib import Path

    from memoryd.embedding import EmbeddingError, build_static

    target = Path(output) if output else Path(ctx.obj["data_dir"]) / "models" / "static"
    with click.progressbar(length=100, label="distilling", file=sys.stderr) as bar:
        shown = [0]

        def progress(done: int, total: int) -> None:
            pct = int(100 * done / max(1, total))
            if pct > shown[0]:
                bar.update(pct - shown[0])
                shown[0] = pct

        try:
            path = build_static(target, pca_dims=dims, progress=progress)
        except EmbeddingError as exc:
            raise ValidationError(f"cannot build the static model: {exc.message}") from None
    _emit(ctx, {"path": str(path)}, f"static model written to {path}")


main.add_command(serve_command)  # memoryd/server.py: `memoryd serve`


# `memoryd keys …` lives in its own module, which registers itself on `main`.
import memoryd.cli_backup  # noqa: E402
import memoryd.cli_eval  # noqa: E402
import memoryd.cli_keys  # noqa: E402
import memoryd.cli_mcp  # noqa: E402
import memoryd.cli_providers  # noqa: E402, F401
