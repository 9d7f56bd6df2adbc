"""The ``extraction`` bench stage: rules extraction on the labelled set.

A thin wrapper over ``memoryd.eval.extraction`` (what ``memoryd eval extraction`` runs):
every split of ``bench/data/extraction`` through a throwaway keyword-only engine,
``extract_facts`` timed alone on one thread, the slowest 64 KiB message, and the
recall proxy against LoCoMo's observation annotations when ``../shared/data/locomo``
is there (read at run time, never copied). In process: no embeddings, a few seconds.
The result is kept whole under ``"extraction"`` in ``bench/results/extraction.json``;
its ``rows`` are one per split (and ``all``); ``rules_only`` is the same set with the
attribute classifier off (what it adds, measured).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.eval import extraction, labelled, observations

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "bench" / "data" / "extraction"
DEFAULT_LOCOMO = REPO.parent / "shared" / "data" / "locomo"


def run(
    data: Path = DEFAULT_DATA,
    locomo: Path | None = DEFAULT_LOCOMO,
    *,
    split: str = "all",
    speed_seconds: float = 2.0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The eval's JSON result; LoCoMo is skipped (and said so) when its folder is absent."""
    splits = labelled.load_labelled(data, split)
    observed = None
    if locomo is not None and Path(locomo).is_dir():
        observed = observations.load(Path(locomo))
    elif progress is not None:
        progress(f"extraction: no LoCoMo data at {locomo}, observation recall skipped")
    result = extraction.run_eval(
        splits, speed_seconds=speed_seconds, observed=observed, log=progress
    )
    alone = extraction.run_eval(splits, speed_seconds=0.1, classifier=False)
    result["rules_only"] = {
        name: {
            "recall": sp["positives"]["recall"],
            "false_memory_rate": sp["negatives"]["false_memory_rate"],
            "supersede": sp["supersede"]["accuracy"],
        }
        for name, sp in alone["splits"].items()
    }
    shown = Path(data).absolute()  # not resolved: a symlinked data folder keeps its name
    return {"data": str(shown.relative_to(REPO) if shown.is_relative_to(REPO) else shown)} | result


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per split: the three quality figures and their counts."""
    out = []
    for name, s in result["splits"].items():
        pos, neg, sup = s["positives"], s["negatives"], s["supersede"]
        row: dict[str, Any] = {
            "split": name,
            "positives": pos["n"],
            "recall": pos["recall"],
            "value_recall": pos["value_recall"],
            "negatives": neg["n"],
            "false_memory_rate": neg["false_memory_rate"],
            "pairs": sup["n"],
            "supersede_accuracy": sup["accuracy"],
        }
        row |= {f"supersede_{mode}": g["accuracy"] for mode, g in sup["per_mode"].items()}
        out.append(row)
    return out


def summary(result: dict[str, Any]) -> str:
    """Speed and the LoCoMo figures, printed under the rows table."""
    pace, worst = result["throughput"], result["long_messages"]
    lines = [
        f"throughput: {pace['messages_per_s']} messages/s on one thread "
        f"({pace['messages']} labelled messages, {pace['elapsed_s']} s); "
        + (
            f"64 KiB messages over {worst['limit_s']} s, stopped: {', '.join(worst['timed_out'])}"
            if worst.get("timed_out")
            else f"worst 64 KiB message: {worst['worst_ms']} ms ({worst['worst_input']})"
        )
    ]
    obs = result.get("locomo_observations")
    if obs:
        lines.append(
            f"LoCoMo observations: facts from {obs['recall']} of {obs['observed_turns']} "
            f"turns with an observation, from {obs['false_positive_rate']} of "
            f"{obs['unobserved_turns']} without"
        )
    return "\n".join(lines)
