"""What every ``memoryd`` command shares: the engine on the local data dir, a key named
by its id or its name (``resolve_key``), one output helper for ``--json`` and text, and
one error handler (one line, exit 1, no traceback)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from memoryd.errors import ConflictError, MemorydError, NotFoundError, ValidationError
from memoryd.models import GLOBAL_OWNER, Memory, MemoryType, parse_iso

if TYPE_CHECKING:  # the engine is imported when a command opens it, not for --help
    from memoryd.engine import MemoryEngine
    from memoryd.engine.keys import ApiKey

F = TypeVar("F", bound=Callable[..., Any])
TYPES = click.Choice([t.value for t in MemoryType])
#: How many keys an unknown-key error names (the rest: ``memoryd keys list``).
SHOWN_KEYS = 5


@contextmanager
def local_engine(ctx: click.Context) -> Iterator[MemoryEngine]:
    # No background reindex on open: a short command must not drain the whole queue.
    # What it leaves pending stays flagged and the server (or `memoryd reindex`) does it.
    from memoryd.bootstrap import open_engine

    engine = open_engine(data_dir=ctx.obj["data_dir"], start_indexing=False)
    try:
        yield engine
    finally:
        engine.drain(timeout=30, include_index=False)
        engine.close()


def resolve_key(engine: MemoryEngine, value: str, *, owner: bool = False) -> str:
    """The id of the key ``value`` names, by its id or its name.

    ``keys create NAME`` gives a key a name the user remembers and an id its memories
    are stored under; taking only the id made ``-k NAME`` a silent miss (``-- 0 of 0``).
    A name two keys share is refused, listing their ids. With ``owner`` (an option
    that names the owner of memories), a value that is no key still stands for itself
    where that is not a typo: the shared pool ``global``, an owner that already holds
    memories or erasure receipts (imported, or written through the admin API), and any
    owner in a data dir with no keys at all (local use, owners as plain labels)."""
    if not value.strip():
        return value  # the engine says what is wrong with a blank owner
    keys = engine.keys.list(include_revoked=True)
    if any(k.id == value for k in keys):
        return value
    named = [k for k in keys if k.name == value]
    if len(named) == 1:
        return named[0].id
    if named:
        ids = ", ".join(k.id + (" (revoked)" if k.revoked else "") for k in named)
        raise ConflictError(f"{len(named)} keys are named {value!r}: {ids}; pass one's id")
    if owner and (
        not keys or value == GLOBAL_OWNER or value in engine.owners() or engine.erasures(value, 1)
    ):
        return value
    raise NotFoundError(f"no API key with id or name {value!r}; {_known(keys)}")


def _known(keys: list[ApiKey]) -> str:
    """A few keys by name and id, live ones first: what the user meant is usually there."""
    if not keys:
        return "there are no keys yet: memoryd keys create NAME"
    ordered = sorted(keys, key=lambda k: k.revoked)
    shown = ", ".join(
        f"{k.name!r} {k.id}" + (" (revoked)" if k.revoked else "") for k in ordered[:SHOWN_KEYS]
    )
    more = len(keys) - SHOWN_KEYS
    return f"known keys: {shown}" + (f" and {more} more (memoryd keys list)" if more > 0 else "")


def emit(ctx: click.Context, payload: Any, text: str | Callable[[], None]) -> None:
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


def json_option(fn: F) -> F:
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


def parse_date(value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return parse_iso(value)
    except ValueError:
        raise ValidationError(f"{name}: not an ISO-8601 date: {value!r}") from None


def memory_row(memory: Memory) -> str:
    session = f" session={memory.session_id}" if memory.session_id else ""
    session += "  (superseded)" if memory.superseded_at else ""
    return (
        f"{memory.id}  [{memory.type.value}] {memory.key}  owner={memory.api_key_id}{session}\n"
        f"    {memory.content}"
    )


def cli_command(fn: F) -> F:
    """The stack every command wears: ``--json``, the click context, clean errors."""
    return json_option(cast(F, click.pass_context(handles_errors(fn))))


@contextmanager
def percent_bar(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, fed ``(done, total)`` by a long job (distillation)."""
    with click.progressbar(length=100, label=label, file=sys.stderr) as bar:
        shown = [0]

        def progress(done: int, total: int) -> None:
            pct = int(100 * done / max(1, total))
            if pct > shown[0]:
                bar.update(pct - shown[0])
                shown[0] = pct

        yield progress
