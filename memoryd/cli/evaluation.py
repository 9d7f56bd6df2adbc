"""``memoryd eval …``: retrieval quality on public benchmark data
(docs/design/retrieval.md#evaluation) and the extraction benchmark on the labelled
set.

A thin layer over ``memoryd.eval``. Every run uses a temporary data dir and never the
user's (``--data-dir`` is ignored). Progress goes to stderr and the result to stdout.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

import click

from memoryd.cli._common import cli_command, emit, handles_errors, percent_bar
from memoryd.embedding import static_model_info
from memoryd.errors import ValidationError
from memoryd.eval import extraction, labelled, locomo, longmemeval, observations
from memoryd.eval.metrics import SESSION_KS, SESSION_TURNS

EMBEDDERS = ("transformers", "static", "none")
F = TypeVar("F", bound=Callable[..., Any])


def _ks(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        ks = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise click.BadParameter("a comma-separated list of integers, e.g. 5,10,25") from None
    if not ks or ks[0] < 1 or ks[-1] > locomo.MAX_K:
        raise click.BadParameter(f"each k must be from 1 to {locomo.MAX_K}")
    return tuple(ks)


def retrieval_options(*, default_strategy: str) -> Callable[[F], F]:
    """The options every retrieval benchmark takes: strategy, cut-offs, embedder."""

    def apply(fn: F) -> F:
        fn = click.option(
            "--static-model",
            type=click.Path(file_okay=False),
            default=None,
            help="Static model dir, distilled there if missing (default ~/.cache/memoryd/static).",
        )(fn)
        fn = click.option(
            "--embedder",
            type=click.Choice(EMBEDDERS),
            default=None,
            help="Embedding source (default: transformers when installed, else none).",
        )(fn)
        fn = click.option(
            "--k",
            "ks",
            default="5,10,25",
            show_default=True,
            callback=_ks,
            help="Cut-offs for recall@k.",
        )(fn)
        return click.option(
            "--strategy",
            type=click.Choice(["recent", "semantic", "hybrid", "all"]),
            default=default_strategy,
            show_default=True,
        )(fn)

    return apply


def default_static_dir() -> Path:
    """``$XDG_CACHE_HOME/memoryd/static`` (default ``~/.cache/memoryd/static``)."""
    cache = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(cache) if cache else Path.home() / ".cache") / "memoryd" / "static"


def _embedder(name: str | None, static_model: str | None) -> locomo.EvalEmbedder:
    # the variables passed through: where the user keeps the local MiniLM, and which
    # path embeds the questions (to compare the fast query encoder with the model)
    names = ("MEMORY_TRANSFORMERS_MODEL_DIR", "MEMORY_QUERY_ENCODER")
    env = {n: os.environ[n] for n in names if os.environ.get(n, "").strip()}
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
        with percent_bar("distilling") as progress:
            return locomo.static_embedder(target, env=env, progress=progress)
    except locomo.EvalDataError as exc:
        raise ValidationError(f"embedder: {exc}") from None


def _table(result: dict[str, Any]) -> None:
    ks = result["k"]
    q = result["questions"]
    click.echo(
        f"LoCoMo: {result['conversations']} conversations, {result['turns']} turns, "
        f"{q['evaluated']} questions (categories 1-4), embedder {result['embedder']}, "
        f"store {result.get('store', 'sqlite')}, "
        f"{result['elapsed_s']} s"
    )
    session_ks = SESSION_KS
    head = "".join(f"{'R@' + str(k):>8}" for k in ks) + "".join(f"{'tok@' + str(k):>9}" for k in ks)
    head += "".join(f"{'S@' + str(k):>7}" for k in session_ks)
    click.echo(f"{'strategy':<10}{'cat':<14}{head}{'n':>7}")
    for name, s in result["strategies"].items():
        rows = [("all", s)] + [
            (f"{c} {label}", s["per_category"][str(c)]) for c, label in locomo.CATEGORIES.items()
        ]
        for label, row in rows:
            cells = "".join(f"{row['recall'][str(k)]:>8.3f}" for k in ks)
            cells += "".join(f"{row['tokens'][str(k)]:>9.0f}" for k in ks)
            cells += "".join(f"{row['session_recall'][str(k)]:>7.3f}" for k in session_ks)
            click.echo(f"{name if label == 'all' else '':<10}{label:<14}{cells}{row['n']:>7}")
    click.echo(
        f"S@k: the top {SESSION_TURNS} turns mapped to their sessions (repeats dropped); "
        "a hit when an evidence session is among the first k"
    )
    missing = result["missing_evidence"]
    if missing["ids"]:
        click.echo(f"evidence ids naming no turn (counted as misses): {missing['ids']}")


def _say(message: str) -> None:
    click.echo(message, err=True)


@click.group("eval")
def eval_group() -> None:
    """Measure retrieval and extraction quality (temporary data dir)."""


@eval_group.command("locomo")
@click.option(
    "--data",
    "data",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="Directory of LoCoMo conversation JSON files.",
)
@retrieval_options(default_strategy="all")
@click.option(
    "--vec-top-k",
    type=click.IntRange(1, 100),
    default=locomo.VEC_TOP_K,
    show_default=True,
    help="Candidates per retrieval leg (MEMORY_VEC_TOP_K, engine default 40).",
)
@click.option(
    "--turn-context",
    type=click.Choice(list(locomo.CONTENT_FNS)),
    default="date+previous",
    show_default=True,
    help="What each stored turn carries besides its own text.",
)
@click.option("--limit-conversations", type=click.IntRange(min=1), default=None)
@click.option(
    "--database-url",
    default=None,
    help="Run on this (empty) PostgreSQL database instead of a temporary SQLite file.",
)
@click.option(
    "--relevance-floor",
    type=click.FloatRange(0, 1),
    default=None,
    help="Per-hit relevance floor (setting relevanceFloor; 0 = off; default: the engine's).",
)
@cli_command
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
    database_url: str | None,
    relevance_floor: float | None,
) -> None:
    """Turn-level evidence recall@k, tokens@k and session-level recall on LoCoMo, per
    strategy and category."""
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
            config_overrides={"vec_top_k": vec_top_k, "database_url": database_url},
            content=locomo.CONTENT_FNS[turn_context],
            progress=advance,
            log=_say,
            settings=None if relevance_floor is None else {"relevanceFloor": relevance_floor},
        )
    emit(ctx, result, lambda: _table(result))


# -- memoryd eval extraction ---------------------------------------------------------------


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _per(title: str, groups: dict[str, dict[str, Any]], field: str) -> str:
    cells = ", ".join(f"{k} {_share(g[field])} ({g['n']})" for k, g in groups.items())
    return f"{title}: {cells or '-'}"


def _pooled(result: dict[str, Any]) -> dict[str, Any]:
    """The summary over every split run ("all" when there are several)."""
    splits: dict[str, dict[str, Any]] = result["splits"]
    return splits.get("all") or next(iter(splits.values()))


def _misses(result: dict[str, Any], show: int) -> None:
    for part, items in _pooled(result)["misses"].items():
        if not items or not show:
            continue
        click.echo(f"misses, {part} (first {min(show, len(items))} of {len(items)}):")
        for m in items[:show]:
            stored = "; ".join(m["stored"]) or "(nothing)"
            if part == "supersede":
                said = f"{m['first']!r} then {m['second']!r}: {m['why']}"
            else:
                said = repr(m["text"])
            wanted = f" missing {', '.join(m['missing'])};" if part == "positives" else ""
            click.echo(f"  {m['split']}/{m['id']} [{m['kind']}] {said};{wanted} stored: {stored}")


def _extraction_table(result: dict[str, Any], show: int) -> None:
    t = result["targets"]
    click.echo(
        f"Extraction benchmark ({result['extraction_mode']}): {result['data']}, "
        f"{result['engine']['messages']} messages through the engine, {result['elapsed_s']} s"
    )
    click.echo(
        f"{'split':<7}{'positives':>10}{'recall':>8}{'values':>8}"
        f"{'negatives':>11}{'false':>7}{'pairs':>7}{'supersede':>11}"
    )
    for name, s in result["splits"].items():
        pos, neg, sup = s["positives"], s["negatives"], s["supersede"]
        click.echo(
            f"{name:<7}{pos['n']:>10}{_share(pos['recall']):>8}{_share(pos['value_recall']):>8}"
            f"{neg['n']:>11}{_share(neg['false_memory_rate']):>7}{sup['n']:>7}"
            f"{_share(sup['accuracy']):>11}"
        )
    click.echo(
        f"targets: recall >= {t['recall']:.2f}, false memories <= {t['false_memory_rate']:.2f}, "
        f"supersede >= {t['supersede_accuracy']:.2f}"
    )
    last = _pooled(result)
    click.echo(_per("recall per kind", last["positives"]["per_kind"], "recall"))
    click.echo(_per("false memories per kind", last["negatives"]["per_kind"], "false_memory_rate"))
    click.echo(_per("supersede per mode", last["supersede"]["per_mode"], "accuracy"))
    pace, worst = result["throughput"], result["long_messages"]
    if pace["messages_per_s"] is not None:
        click.echo(
            f"throughput: {pace['messages_per_s']:,.0f} messages/s (extract_facts, one thread, "
            f"{pace['messages']} messages of {pace['mean_chars']:.0f} chars on average, "
            f"{pace['elapsed_s']} s; target >= {t['messages_per_s']:,.0f})"
        )
    click.echo(
        f"64 KiB messages: worst {_worst(worst)} of {len(worst['inputs'])} inputs "
        f"(target <= {t['worst_64k_ms']:.0f} ms)"
    )
    obs = result.get("locomo_observations")
    if obs:
        click.echo(
            f"LoCoMo observations: {obs['conversations']} conversations, {obs['turns']} turns; "
            f"facts from {_share(obs['recall'])} of the {obs['observed_turns']} turns with an "
            f"observation, from {_share(obs['false_positive_rate'])} of the "
            f"{obs['unobserved_turns']} without"
        )
    _misses(result, show)


def _worst(worst: dict[str, Any]) -> str:
    if worst.get("timed_out"):
        names = ", ".join(worst["timed_out"])
        return f"over {worst['limit_s']:g} s, stopped ({names})"
    return f"{worst['worst_ms']:.1f} ms ({worst['worst_input']})"


def _json_target(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value == "-":
        ctx.ensure_object(dict)["json"] = True
    return value


@eval_group.command("extraction")
@click.option(
    "--data",
    type=click.Path(file_okay=False),
    default=None,
    help="The labelled set: a folder with dev/ and test/ (positives, negatives, supersede "
    ".jsonl). Default: bench/data/extraction under the current directory, else under the "
    "source checkout memoryd runs from; an installed package ships no bench/, so pass it.",
)
@click.option(
    "--split", type=click.Choice([*labelled.SPLITS, "all"]), default="all", show_default=True
)
@click.option(
    "--locomo",
    "locomo_dir",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Also extract from every turn of the LoCoMo conversations in this directory and "
    "compare with their observation annotations.",
)
@click.option(
    "--speed-seconds",
    type=click.FloatRange(0, 600),
    default=2.0,
    show_default=True,
    help="How long to time extract_facts for messages/s.",
)
@click.option(
    "--show-misses",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Misses listed per part under the table (the JSON holds them all).",
)
@click.option(
    "--json",
    "json_out",
    is_flag=False,
    flag_value="-",
    default=None,
    metavar="[PATH]",
    callback=_json_target,
    help="Write the JSON result to PATH; alone (or -), print it instead of the table.",
)
@click.pass_context
@handles_errors
def eval_extraction(
    ctx: click.Context,
    data: str | None,
    split: str,
    locomo_dir: str | None,
    speed_seconds: float,
    show_misses: int,
    json_out: str | None,
) -> None:
    """Recall, false memories, supersede accuracy and speed of rules extraction on the
    labelled set, through the real engine (a temporary data dir)."""
    root = Path(data) if data else extraction_default()
    try:
        splits = labelled.load_labelled(root, split)
        observed = observations.load(Path(locomo_dir)) if locomo_dir else None
    except (labelled.ExtractionDataError, observations.ObservationDataError) as exc:
        raise ValidationError(f"data: {exc}") from None
    result = {
        "data": str(root),
        **extraction.run_eval(splits, speed_seconds=speed_seconds, observed=observed, log=_say),
    }
    if json_out and json_out != "-":
        Path(json_out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        _say(f"wrote {json_out}")
    emit(ctx, result, lambda: _extraction_table(result, show_misses))


def extraction_default() -> Path:
    found = labelled.default_data_dir()
    if found is None:
        raise ValidationError(
            "data: no bench/data/extraction under the current directory or the source "
            "checkout (an installed package does not ship it): pass --data DIR"
        )
    return found


# -- memoryd eval longmemeval --------------------------------------------------------------


def _lme_data(data: str | None, cache: str | None) -> Path:
    """``--data`` as is, else the oracle file in the cache (fetched once, sha256 checked)."""
    if data:
        return Path(data)
    where = Path(cache) if cache else longmemeval.default_cache_dir()
    return longmemeval.fetch_oracle(where, log=_say)


@eval_group.command("longmemeval")
@click.option("--data", default=None, help="A LongMemEval JSON file to use as is.")
@click.option(
    "--cache",
    default=None,
    help="Where the oracle file is fetched once (default ~/.cache/memoryd/longmemeval).",
)
@retrieval_options(default_strategy="hybrid")
@click.option(
    "--limit-questions",
    type=click.IntRange(min=0),
    default=longmemeval.DEFAULT_LIMIT,
    show_default=True,
    help="Questions asked, spread evenly through the file (0 = all).",
)
@click.option(
    "--distractors",
    type=click.IntRange(0, 200),
    default=longmemeval.DEFAULT_DISTRACTORS,
    show_default=True,
    help="Other questions' sessions added to each haystack.",
)
@cli_command
def eval_longmemeval(
    ctx: click.Context,
    data: str | None,
    cache: str | None,
    strategy: str,
    ks: tuple[int, ...],
    embedder: str | None,
    static_model: str | None,
    limit_questions: int,
    distractors: int,
) -> None:
    """Turn-level recall@k and session-level recall (any/all) on LongMemEval (oracle
    sessions plus distractors), per strategy and question type."""
    try:
        path = _lme_data(data, cache)
        items = longmemeval.load_items(path)
    except longmemeval.LongMemEvalDataError as exc:
        raise ValidationError(f"data: {exc}") from None
    work = longmemeval.plan(items, limit_questions, distractors)
    chosen = locomo.STRATEGIES if strategy == "all" else (strategy,)
    source = _embedder(embedder, static_model)
    with ExitStack() as stack:
        bars: list[Any] = []

        def advance(n: int) -> None:  # the bar starts with the first answer, after ingest
            if not bars:
                total = len(work.asked) * len(chosen)
                bar = click.progressbar(length=total, label="asking", file=sys.stderr)
                bars.append(stack.enter_context(bar))
            bars[0].update(n)

        result = longmemeval.run_eval(
            work, source, strategies=chosen, ks=ks, progress=advance, log=_say
        )
    sha = longmemeval.sha256_of(path)
    result["data"] = {"path": str(path), "sha256": sha, "pinned": sha == longmemeval.ORACLE_SHA256}
    emit(ctx, result, lambda: click.echo("\n".join(longmemeval.table_lines(result))))
