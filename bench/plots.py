"""The ``plots`` bench stage: PNGs from the results JSON (matplotlib, Agg backend).

- ``latency-vs-size.png``: retrieval p50 and p99 against corpus size (log-log), one
  line per embedder and strategy (``retrieval.json``).
- ``recall-by-strategy.png``: LoCoMo recall@k per strategy (``locomo.json``).
- ``recall-by-category.png``: LoCoMo recall@10 per question category and strategy.

A plot whose results file is missing is skipped. matplotlib is the ``bench`` extra.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORIES

STYLE = {"recent": ":", "semantic": "--", "hybrid": "-"}
EMBEDDER_COLOURS = {"keyword-only": "#2ca02c", "static": "#ff7f0e", "transformers": "#9467bd"}
MARKER = {"keyword-only": "o", "static": "s", "transformers": "^"}
PLOT_NAMES = ("latency-vs-size", "recall-by-strategy", "recall-by-category")
COLOURS = {"recent": "#7f7f7f", "semantic": "#1f77b4", "hybrid": "#d62728"}


def load(results: Path, name: str) -> dict[str, Any] | None:
    path = results / f"{name}.json"
    if not path.exists():
        return None
    payload: dict[str, Any] = json.loads(path.read_text())
    return payload


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _caption(payload: dict[str, Any]) -> str:
    m = payload.get("machine", {})
    commit = (m.get("commit") or "?")[:10]
    load = m.get("load_average_start")
    load_s = f", load {load[0]:.1f}" if load else ""
    return f"{m.get('cpu_model') or '?'}, {m.get('cores')} cores{load_s}, commit {commit}"


def latency_plot(payload: dict[str, Any], out: Path) -> Path:
    plt = _pyplot()
    rows = payload["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    series: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault((row["embedder"], row["strategy"]), []).append(row)
    for ax, pct in zip(axes, ("p50", "p99"), strict=True):
        for (embedder, strategy), points in sorted(series.items()):
            points.sort(key=lambda r: r["memories"])
            ax.plot(
                [p["memories"] for p in points],
                [p[f"{pct}_ms"] for p in points],
                linestyle=STYLE.get(strategy, "-"),
                marker=MARKER.get(embedder, "x"),
                color=EMBEDDER_COLOURS.get(embedder),
                label=f"{strategy} / {embedder}",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories for the owner")
        ax.set_title(f"retrieval {pct}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ms per query (query embedding included)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="center right", title="strategy / embedder")
    fig.suptitle(f"Retrieval latency vs corpus size — {_caption(payload)}", fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.8, 1))
    path = out / "latency-vs-size.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _bars(ax: Any, groups: list[str], series: dict[str, list[float]]) -> None:
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, values, width, label=name, color=COLOURS.get(name))
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, 1.05)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")


def recall_plots(payload: dict[str, Any], out: Path) -> list[Path]:
    plt = _pyplot()
    result = payload.get("locomo", {})
    strategies: dict[str, Any] = result.get("strategies", {})
    ks = [str(k) for k in result.get("k", [5, 10, 25])]
    caption = f"LoCoMo, embedder {result.get('embedder')} — {_caption(payload)}"
    paths = []

    fig, ax = plt.subplots(figsize=(7, 4.2))
    _bars(
        ax, [f"R@{k}" for k in ks], {s: [r["recall"][k] for k in ks] for s, r in strategies.items()}
    )
    ax.set_ylabel("turn-level evidence recall")
    ax.set_title(caption, fontsize=8)
    fig.tight_layout()
    paths.append(out / "recall-by-strategy.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    k = "10" if "10" in ks else ks[-1]
    cats = sorted({c for r in strategies.values() for c in r.get("per_category", {})})
    fig, ax = plt.subplots(figsize=(8, 4.2))
    _bars(
        ax,
        [f"{c} {CATEGORIES.get(c, '')}" for c in cats],
        {
            s: [r["per_category"].get(c, {}).get("recall", {}).get(k, 0.0) for c in cats]
            for s, r in strategies.items()
        },
    )
    ax.set_ylabel(f"recall@{k}")
    ax.set_title(f"per question category — {caption}", fontsize=8)
    fig.tight_layout()
    paths.append(out / "recall-by-category.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def make_plots(results: Path, out: Path) -> list[Path]:
    """Every plot whose results file exists in ``results``; returns the PNGs written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    retrieval = load(results, "retrieval")
    if retrieval and retrieval.get("rows"):
        written.append(latency_plot(retrieval, out))
    locomo = load(results, "locomo")
    if locomo and locomo.get("locomo", {}).get("strategies"):
        written += recall_plots(locomo, out)
    return written


def existing_plots(out: Path) -> list[Path]:
    return [out / f"{n}.png" for n in PLOT_NAMES if (out / f"{n}.png").exists()]
