"""Data-dir operations: ``export``, ``import``, ``gc``, ``status``, ``reindex`` and
``models build-static``."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Mapping
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
@click.option(
    "--server",
    "server_url",
    default=None,
    help="The server to ask for its counters (default: the one running on this data dir).",
)
@cli_command
def status_cmd(ctx: click.Context, server_url: str | None) -> None:
    """Engine status: keyword tier, embedding, vector store, reindex queue; extraction
    as the running server counted it (this command's own process extracted nothing)."""
    with local_engine(ctx) as engine:
        status = engine.status()
        status["memories"] = engine.list_memories(limit=1).total
        queued = len(engine.store.read().queued_extractions())
    url = server_url or running_server(Path(ctx.obj["data_dir"]))
    served = ask_server(url, ctx.obj["data_dir"], os.environ) if url else None
    status["server"] = {"url": url, "answered": served is not None}
    if served is not None:
        status["extraction"] = served.get("extraction", {})
        status["server"]["pid"] = served.get("process", {}).get("pid")
    else:
        status["extraction"] = {"queued": queued}
    emit(ctx, status, lambda: click.echo(status_lines(status)))


def running_server(data_dir: Path) -> str | None:
    """Where the server running on ``data_dir`` listens, from its pid file: only while
    it holds the file's lock, so the admin token goes to that server and never to
    whatever else answers on a port (another local user's listener, say)."""
    from memoryd.server import PID_FILE

    try:
        fd = os.open(data_dir / PID_FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: a server runs here
            lines = os.pread(fd, 4096, 0).decode("utf-8", "replace").splitlines()
            return lines[1].strip() if len(lines) > 1 and lines[1].strip() else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def ask_server(url: str, data_dir: Path, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The running server's engine status, or None when none answers (or the admin
    token here is not its own, or the answer is not one)."""
    import httpx

    from memoryd.server import TOKEN_FILE

    token = env.get("MEMORYD_ADMIN_TOKEN", "").strip()
    if not token:
        try:
            token = (Path(data_dir) / TOKEN_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            return None
    try:
        response = httpx.get(
            f"{url.rstrip('/')}/api/memory/engine-status",
            headers={"authorization": f"Bearer {token}"},
            timeout=3,
        )
        body = response.json() if response.status_code == 200 else None
    except Exception:  # unreachable, not a URL, not JSON: no server to ask
        return None
    return body if isinstance(body, dict) else None


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
        ("extraction", _extraction_line(extraction, status.get("server", {}))),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {text}" for name, text in rows]
    return "\n".join([*lines, "(--json for the whole report)"])


def _extraction_line(extraction: dict[str, Any], server: dict[str, Any]) -> str:
    """The server's counters since it started, or, with no server answering, what the
    store holds: a CLI process extracts nothing, so its own counters would read 0."""
    if not server.get("answered", True):
        where = (
            f"no server answering at {server['url']}"
            if server.get("url")
            else "no server running on this data dir (--server URL asks one elsewhere)"
        )
        return (
            f"{where}; the counters are the server's; "
            f"{extraction.get('queued', 0)} jobs queued in the store"
        )
    where = f" (the server at {server['url']}, since it started)" if server else ""
    return (
        f"{extraction.get('stored', 0)} stored, {extraction.get('failed', 0)} failed, "
        f"{extraction.get('pending', 0)} pending{where}"
    )


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
