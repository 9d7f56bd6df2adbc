"""Data-dir operations: ``export``, ``import``, ``gc``, ``status``, ``reindex`` and
``models build-static``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from memoryd.cli._common import (
    cli_command,
    emit,
    handles_errors,
    local_engine,
    percent_bar,
    resolve_key,
)
from memoryd.core.public import public
from memoryd.errors import ValidationError
from memoryd.storage.sqlite.files import private_output


@click.command("export")
@click.option("--owner", "-k", required=True, help="Owner: a client API key's id or name.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.pass_context
@handles_errors
def export_cmd(ctx: click.Context, owner: str, output: Path | None) -> None:
    """Write every memory of an owner as JSON Lines (stdout, or a file made 0600)."""
    path = None if output is None or str(output) == "-" else output
    count = 0
    with local_engine(ctx) as engine:
        owner = resolve_key(engine, owner, owner=True)  # before the file is made
        with private_output(path) as out:
            for item in engine.export(owner):
                out.write(json.dumps(item, ensure_ascii=False) + "\n")
                count += 1
    if path:
        click.echo(f"exported {count} memories", err=True)


@click.command("import")
@click.argument("source", type=click.File("rb"), default="-")
@click.option("--owner", "-k", default=None, help="Store every line under this key (id or name).")
@cli_command
def import_cmd(ctx: click.Context, source: Any, owner: str | None) -> None:
    """Upsert memories from a JSON Lines file (or stdin) by owner + key."""
    with local_engine(ctx) as engine:
        owner = owner and resolve_key(engine, owner, owner=True)
        result = engine.import_jsonl(source, owner=owner)

    def show() -> None:
        click.echo(
            f"imported {result.imported}, updated {result.updated}, "
            f"skipped {result.skipped}, errors {len(result.errors)}"
        )
        for err in result.errors:
            click.echo(f"  line {err['line']}: {err['message']}", err=True)

    emit(ctx, public(result), show)
    if result.errors:
        ctx.exit(1)


@click.command("gc")
@cli_command
def gc_cmd(ctx: click.Context) -> None:
    """Delete expired memories (and run the typed-decay sweep when enabled)."""
    with local_engine(ctx) as engine:
        expired = engine.gc()
        decay = engine.sweep_decay()
    payload = {"expiredDeleted": expired, "decay": public(decay)}
    emit(ctx, payload, f"deleted {expired} expired, {len(decay.deleted_ids)} decayed")


@click.command("status")
@cli_command
def status_cmd(ctx: click.Context) -> None:
    """Engine status: keyword tier, embedding, vector store, reindex queue."""
    with local_engine(ctx) as engine:
        status = engine.status()
        status["memories"] = engine.list_memories(limit=1).total
    emit(ctx, status, lambda: click.echo(status_lines(status)))


def status_lines(status: dict[str, Any]) -> str:
    """One line per tier, each with why it is in the state it is (``--json`` has the
    whole report)."""

    def state(part: dict[str, Any]) -> str:
        return "ok  " if part.get("available") else "DOWN"

    storage, keyword = status.get("storage", {}), status.get("keyword", {})
    embedding, vectors = status.get("embedding", {}), status.get("vectorStore", {})
    qdrant, reindex = status.get("qdrant", {}), status.get("reindex", {})
    extraction = status.get("extraction", {})
    rows = [
        ("memories", str(status.get("memories", "?"))),
        ("storage", f"{state(storage)}  {storage.get('backend')}: {storage.get('reason')}"),
        ("keyword", f"{state(keyword)}  {keyword.get('reason')}"),
        ("embedding", f"{state(embedding)}  {embedding.get('reason')}"),
        (
            "vectors",
            f"{state(vectors)}  {vectors.get('reason')} ({vectors.get('rowCount')} "
            f"rows, {vectors.get('needsReindex')} to embed)",
        ),
        (
            "qdrant",
            "off   not configured"
            if not qdrant.get("enabled")
            else f"{'ok  ' if qdrant.get('healthy') else 'DOWN'}  {qdrant.get('reason')}",
        ),
        (
            "reindex",
            f"{'running' if reindex.get('running') else 'idle'}, "
            f"{reindex.get('pending', 0)} pending, {reindex.get('errors', 0)} errors",
        ),
        (
            "extraction",
            f"{extraction.get('stored', 0)} stored, {extraction.get('failed', 0)} "
            f"failed, {extraction.get('pending', 0)} pending",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {text}" for name, text in rows]
    return "\n".join([*lines, "(--json for the whole report)"])


@click.command("reindex")
@click.option("--force", is_flag=True, help="Re-embed every memory, not only pending ones.")
@click.option("--wait", is_flag=True, help="Stay until the queue is drained, with a progress bar.")
@cli_command
def reindex_cmd(ctx: click.Context, force: bool, wait: bool) -> None:
    """Embed memories whose vectors are missing or stale."""
    with local_engine(ctx) as engine:
        started = engine.reindex(force=force)
        if not wait or not started.get("started"):
            emit(ctx, started, f"reindex started: {started['pending']} pending")
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
    emit(ctx, progress, f"reindexed {progress.get('processed', 0)}, {progress['pending']} pending")


@click.group()
def models() -> None:
    """Local embedding models."""


@models.command("build-static")
@click.argument("output", type=click.Path(file_okay=False), required=False)
@click.option("--dims", type=int, default=256, show_default=True, help="PCA dimensions.")
@cli_command
def build_static_cmd(ctx: click.Context, output: str | None, dims: int) -> None:
    """Distill a static (model2vec-style) embedder from the local MiniLM.

    Writes to OUTPUT (default <data dir>/models/static), where `staticEnabled` finds it.
    """
    from pathlib import Path

    from memoryd.embedding import EmbeddingError, build_static

    target = Path(output) if output else Path(ctx.obj["data_dir"]) / "models" / "static"
    with percent_bar("distilling") as progress:
        try:
            path = build_static(target, pca_dims=dims, progress=progress)
        except EmbeddingError as exc:
            raise ValidationError(f"cannot build the static model: {exc.message}") from None
    emit(ctx, {"path": str(path)}, f"static model written to {path}")
