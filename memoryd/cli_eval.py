"""``memoryd eval …``: retrieval quality on public benchmark data (SPEC §19).

A thin layer over ``memoryd.eval.locomo``. It registers its group on ``main``, and
``memoryd.cli`` imports it at its end, like ``memoryd.cli_keys``. Every run uses a
temporary data dir and never the user's (``--data-dir`` is ignored). Progress goes
to stderr and the result to stdout.
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from memoryd.cli import _emit, _json_option, handles_errors, main
from memoryd.embedding import static_model_info
from memoryd.errors import ValidationError
from memoryd.eval import locomo

EMBEDDERS = ("transformers", "static", "none")


def _ks(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise click.BadParameter("a comma-separated list of integers, e.g. 5,10,25") from None
    if not ks or ks[0] < 1 or ks[-1] > locomo.MAX_K:
        raise click.BadParameter(f"each k must be from 1 to {locomo.MAX_K}")
    return tuple(ks)


def default_static_dir() -> Path:
    """``$XDG_CACHE_HOME/memoryd/static`` (default ``~/.cache/memoryd/static``)."""
    cache = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(cache) if cache else Path.home() / ".cache") / "memoryd" / "static"


def _embedder(name: str | None, static_model: str | None) -> locomo.EvalEmbedder:
    # the only variable passed through: where the user keeps the local MiniLM
    model_dir = os.environ.get("MEMORY_TRANSFORMERS_MODEL_DIR", "")
    env = {"MEMORY_TRANSFORMERS_MODEL_DIR": model_dir} if model_dir.strip() else {}
    if name == "none":
        return locomo.no_embedder()
    if name in (None, "transformers"):
        found = locomo.transformers_embedder(env)
        if found is not None:
            return found
        if name == "transformers":
            raise ValidationError("embedder: the local MiniLM is not installed")
        click.echo("the local MiniLM is not installed: keyword only", err=True)
        return locomo.no_embedder()
    target = Path(static_model) if static_model else default_static_dir()
    try:
        if static_model_info(target.expanduser()) is not None:
            return locomo.static_embedder(target, build=False, env=env)
        _say(f"distilling the static model once into {target}")
        with click.progressbar(length=100, label="distilling", file=sys.stderr) as bar:
            shown = [0]

            def progress(done: int, total: int) -> None:
                pct = int(100 * done / max(1, total))
                if pct > shown[0]:
                    bar.update(pct - shown[0])
                    shown[0] = pct

            return locomo.static_embedder(target, env=env, progress=progress)
    except locomo.EvalDataError as exc:
        raise ValidationError(f"embedder: {exc}") from None


def _table(result: dict[str, Any]) -> None:
    ks = result["k"]
    q = result["questions"]
    click.echo(
        f"LoCoMo: {result['conversations']} conversations, {result['turns']} turns, "
        f"{q['evaluated']} questions (categories 1-4), embedder {result['embedder']}, "
        f"{result['elapsed_s']} s"
    )
    head = "".join(f"{'R@' + str(k):>8}" for k in ks) + "".join(f"{'tok@' + str(k):>9}" for k in ks)
    click.echo(f"{'strategy':<10}{'cat':<14}{head}{'n':>7}")
    for name, s in result["strategies"].items():
        rows = [("all", s)] + [
            (f"{c} {label}", s["per_category"][str(c)]) for c, label in locomo.CATEGORIES.items()
        ]
        for label, row in rows:
            cells = "".join(f"{row['recall'][str(k)]:>8.3f}" for k in ks)
            cells += "".join(f"{row['tokens'][str(k)]:>9.0f}" for k in ks)
            click.echo(f"{name if label == 'all' else '':<10}{label:<14}{cells}{row['n']:>7}")
    missing = result["missing_evidence"]
    if missing["ids"]:
        click.echo(f"evidence ids naming no turn (counted as misses): {missing['ids']}")


def _say(message: str) -> None:
    click.echo(message, err=True)


@main.group("eval")
def eval_group() -> None:
    """Measure retrieval quality on public benchmark data (temporary data dir)."""


@eval_group.command("locomo")
@click.option(
    "--data",
    "data",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="Directory of LoCoMo conversation JSON files.",
)
@click.option(
    "--strategy",
    type=click.Choice(["recent", "semantic", "hybrid", "all"]),
    default="all",
    show_default=True,
)
@click.option(
    "--k", "ks", default="5,10,25", show_default=True, callback=_ks, help="Cut-offs for recall@k."
)
@click.option(
    "--embedder",
    type=click.Choice(EMBEDDERS),
    default=None,
    help="Embedding source (default: transformers when installed, else none).",
)
@click.option(
    "--static-model",
    type=click.Path(file_okay=False),
    default=None,
    help="Static model dir, distilled there if missing (default ~/.cache/memoryd/static).",
)
@click.option(
    "--vec-top-k",
    type=click.IntRange(1, 100),
    default=locomo.VEC_TOP_K,
    show_default=True,
    help="Candidates per retrieval leg (MEMORY_VEC_TOP_K, engine default 20).",
)
@click.option(
    "--turn-context",
    type=click.Choice(list(locomo.CONTENT_FNS)),
    default="date+previous",
    show_default=True,
    help="What each stored turn carries besides its own text.",
)
@click.option("--limit-conversations", type=click.IntRange(min=1), default=None)
@_json_option
@click.pass_context
@handles_errors
def eval_locomo(
    ctx: click.Context,
    data: str,
    strategy: str,
    ks: tuple[int, ...],
    embedder: str | None,
    static_model: str | None,
    vec_top_k: int,
    turn_context: str,
    limit_conversations: int | None,
) -> None:
    """Turn-level evidence recall@k and tokens@k on LoCoMo, per strategy and category."""
    try:
        conversations = locomo.load_conversations(Path(data), limit_conversations)
    except locomo.EvalDataError as exc:
        raise ValidationError(f"data: {exc}") from None
    chosen = locomo.STRATEGIES if strategy == "all" else (strategy,)
    source = _embedder(embedder, static_model)
    total = locomo.count_questions(conversations) * len(chosen)

    with ExitStack() as stack:
        bars: list[Any] = []

        def advance(n: int) -> None:  # the bar starts with the first answer, after ingest
            if not bars:
                bar = click.progressbar(length=total, label="asking", file=sys.stderr)
                bars.append(stack.enter_context(bar))
            bars[0].update(n)

        result = locomo.run_eval(
            conversations,
            source,
            strategies=chosen,
            ks=ks,
            config_overrides={"vec_top_k": vec_top_k},
            content=locomo.CONTENT_FNS[turn_context],
            progress=advance,
            log=_say,
        )
    _emit(ctx, result, lambda: _table(result))
