"""The ``plots`` bench stage: PNGs from the results JSON (matplotlib, Agg backend).

- ``latency-vs-size.png``: retrieval p50 and p99 against corpus size (log-log), one
  line per embedder and strategy (``retrieval.json``).
- ``recall-by-strategy.png``: LoCoMo recall@k per strategy (``locomo.json``).
- ``recall-by-category.png``: LoCoMo recall@10 per question category and strategy.
- ``retrieval-vs-peers.png``: LoCoMo recall@k and search latency per system
  (``peers.json``).
- ``extraction-quality.png``: recall, supersede accuracy and false memories per
  labelled split, with the targets (``extraction.json``).
- ``gateway-overhead.png``: added latency and requests/s per proxy configuration,
  LiteLLM included (``proxy.json``).
- ``stores.png``: hybrid latency and ingest per owner size, SQLite against PostgreSQL
  (``stores.json``; SQLite's later figures from ``retrieval.json`` for comparison).
- ``scale-out.png``: requests/s and chat latency with one and two servers
  (``load_scaleout.json``).
- ``abuse.png``: polite clients' latency, quiet and under abuse (``abuse.json``).

A plot whose results file is missing is skipped. matplotlib is the ``bench`` extra.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORIES

STYLE = {"recent": ":", "semantic": "--", "hybrid": "-"}
EMBEDDER_COLOURS = {"keyword-only": "#2ca02c", "static": "#ff7f0e", "transformers": "#9467bd"}
EMBEDDER_LABELS = {"transformers": "MiniLM", "keyword-only": "none (keyword only)"}
MARKER = {"keyword-only": "o", "static": "s", "transformers": "^"}
PLOT_NAMES = (
    "latency-vs-size",
    "recall-by-strategy",
    "recall-by-category",
    "retrieval-vs-peers",
    "extraction-quality",
    "gateway-overhead",
    "stores",
    "scale-out",
    "abuse",
)
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
                label=f"{strategy} / {EMBEDDER_LABELS.get(embedder, embedder)}",
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


def _save(fig: Any, path: Path) -> Path:
    plt = _pyplot()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _wrap(label: str, width: int = 30) -> str:
    return "\n".join(textwrap.wrap(label, width))


MEMORYD_COLOUR, PEER_COLOUR, BASELINE_COLOUR = "#1f77b4", "#ff7f0e", "#9d9d9d"


def _embedder(name: str) -> str:
    short = name.split(" (")[0]
    return "no embedder" if short == "none" else short


def peers_plot(payload: dict[str, Any], out: Path) -> Path:
    """LoCoMo recall@10 (R@5 and R@25 as ticks) and search p50 (p95 as a dot) per system."""
    plt = _pyplot()
    rows = list(reversed(payload["rows"]))  # the reference on top
    labels = [_wrap(f"{r['system']}, {_embedder(r['embedder'])}", 32) for r in rows]

    def colour(r: dict[str, Any]) -> str:
        if "baseline" in r["system"]:
            return BASELINE_COLOUR
        return MEMORYD_COLOUR if r["system"].startswith("memoryd") else PEER_COLOUR

    colours = [colour(r) for r in rows]
    ys = list(range(len(rows)))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.55 * len(rows) + 1.8), sharey=True)
    bars = left.barh(ys, [r["R@10"] for r in rows], color=colours, height=0.62)
    left.bar_label(bars, fmt="%.3f", fontsize=8, label_type="center", color="white")
    left.scatter([r["R@5"] for r in rows], ys, marker="|", s=200, color="black", label="R@5")
    left.scatter([r["R@25"] for r in rows], ys, marker="|", s=200, color="#d62728", label="R@25")
    left.set_yticks(ys, labels, fontsize=8)
    left.set_xlim(0, 1)
    left.set_title("evidence recall@10 (bars), @5 and @25 (ticks): higher is better", fontsize=9)
    left.legend(fontsize=8, loc="lower right")
    left.grid(True, axis="x", alpha=0.3)
    right.barh(ys, [r["p50_ms"] for r in rows], color=colours, height=0.62)
    right.scatter([r["p95_ms"] for r in rows], ys, marker="o", s=14, color="black", label="p95")
    top = max(r["p95_ms"] for r in rows)
    for y, r in zip(ys, rows, strict=True):
        right.text(r["p95_ms"] + top * 0.02, y, f"{r['p50_ms']:.1f} ms", va="center", fontsize=8)
    right.set_xlim(0, top * 1.2)
    right.set_title("search ms, p50 (bars, labelled) and p95 (dots): lower is better", fontsize=9)
    right.legend(fontsize=8, loc="lower right")
    right.grid(True, axis="x", alpha=0.3)
    proto = payload.get("protocol", {})
    fig.suptitle(
        f"LoCoMo, {len(proto.get('conversations', []))} conversations, "
        f"{proto.get('questions')} questions: memoryd (blue), its baselines (grey), a peer "
        f"(orange) — {_caption(payload)}",
        fontsize=9,
    )
    fig.tight_layout()
    return _save(fig, out / "retrieval-vs-peers.png")


def extraction_plot(payload: dict[str, Any], out: Path) -> Path:
    """Per split: recall and supersede accuracy (higher is better), false memories."""
    plt = _pyplot()
    result = payload.get("extraction", {})
    splits: dict[str, Any] = result.get("splits", {})
    targets = result.get("targets", {})
    names = list(splits)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2, 1]})
    series = {
        "recall": [splits[n]["positives"]["recall"] for n in names],
        "supersede accuracy": [splits[n]["supersede"]["accuracy"] for n in names],
    }
    width = 0.38
    for i, (label, values) in enumerate(series.items()):
        xs = [x + (i - 0.5) * width for x in range(len(names))]
        bars = left.bar(xs, values, width, label=label, color=("#1f77b4", "#2ca02c")[i])
        left.bar_label(bars, fmt="%.2f", fontsize=8, label_type="center", color="white")
    goal = targets.get("recall", 0.9)
    left.axhline(
        goal, color="black", linestyle="--", linewidth=1, label=f"target \u2265 {goal:.2f}"
    )
    left.set_xticks(range(len(names)), [_split_label(n) for n in names], fontsize=8)
    left.set_ylim(0, 1.22)
    left.set_title("recall and supersede accuracy: higher is better", fontsize=9)
    left.legend(fontsize=8, loc="upper right", ncol=3)
    left.grid(True, axis="y", alpha=0.3)
    bars = right.bar(
        range(len(names)),
        [splits[n]["negatives"]["false_memory_rate"] for n in names],
        0.6,
        color="#d62728",
    )
    right.bar_label(bars, fmt="%.3f", fontsize=8, padding=1)
    limit = targets.get("false_memory_rate", 0.05)
    right.axhline(limit, color="black", linestyle="--", linewidth=1)
    right.text(-0.4, limit + 0.002, f"target \u2264 {limit:.2f}", fontsize=8)
    right.set_xticks(range(len(names)), [_split_label(n) for n in names], fontsize=8)
    right.set_ylim(0, max(limit * 1.6, 0.01))
    right.set_title("false memories: lower is better", fontsize=9)
    right.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"Rules extraction on the labelled set — {_caption(payload)}", fontsize=9)
    fig.tight_layout()
    return _save(fig, out / "extraction-quality.png")


def _split_label(name: str) -> str:
    return {"test": "test\n(held out)", "dev": "dev\n(tuned on)", "dev2": "dev2\n(tuned on)"}.get(
        name, name
    )


def gateway_plot(payload: dict[str, Any], out: Path) -> Path:
    """Added latency p50 (p99 as a dot) and requests/s at 16 clients per configuration."""
    plt = _pyplot()
    rows = [r for r in payload["rows"] if r.get("id") != "direct"]
    rows.reverse()
    labels = [_wrap(r["config"], 36) for r in rows]
    colours = ["#d62728" if r.get("id") == "litellm" else MEMORYD_COLOUR for r in rows]
    ys = range(len(rows))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.62 * len(rows) + 1.6), sharey=True)
    left.barh(ys, [r["added_p50_ms"] for r in rows], color=colours, height=0.62)
    left.scatter([r["added_p99_ms"] for r in rows], ys, s=14, color="black", label="added p99")
    top = max(r["added_p99_ms"] for r in rows)
    for y, r in zip(ys, rows, strict=True):
        x = r["added_p99_ms"] + top * 0.02
        left.text(x, y, f"{r['added_p50_ms']:.2f} ms", va="center", fontsize=8)
    left.set_yticks(list(ys), labels, fontsize=8)
    left.set_xlim(0, top * 1.25)
    left.set_xlabel("added ms over the upstream alone, p50 (bars, labelled), p99 (dots)")
    left.set_title("added latency: lower is better", fontsize=9)
    left.legend(fontsize=8, loc="upper right")
    left.grid(True, axis="x", alpha=0.3)
    bars = right.barh(ys, [r["rps"] for r in rows], color=colours, height=0.62)
    right.bar_label(bars, fmt="%.0f", fontsize=8, padding=2)
    right.set_xlim(0, max(r["rps"] for r in rows) * 1.15)
    s = payload.get("settings", {})
    right.set_xlabel(f"requests/s with {s.get('clients', 16)} keep-alive clients")
    right.set_title("throughput: higher is better", fontsize=9)
    right.grid(True, axis="x", alpha=0.3)
    version = payload.get("litellm", {}).get("version") or "?"
    fig.suptitle(
        f"What passing through costs: memoryd (blue) and LiteLLM {version} (red) in front of "
        f"the same fake upstream — {_caption(payload)}",
        fontsize=9,
    )
    fig.tight_layout()
    return _save(fig, out / "gateway-overhead.png")


def _plain_log_ticks(axis: Any) -> None:
    """Tick labels of a log axis as plain numbers (10, 100, 1,000), no minor labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


STORE_COLOURS = {"sqlite": "#1f77b4", "postgresql": "#8c564b"}
STORE_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def stores_plot(payload: dict[str, Any], out: Path, later: dict[str, Any] | None) -> Path:
    """Hybrid p50 per owner size (log-log) and ingest with embedding, per store."""
    plt = _pyplot()
    rows = payload["rows"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
    sizes = sorted({r["memories_per_owner"] for r in rows})
    for store in ("sqlite", "postgresql"):
        pts = sorted(
            (r for r in rows if r["store"] == store), key=lambda r: r["memories_per_owner"]
        )
        if not pts:
            continue
        xs = [r["memories_per_owner"] for r in pts]
        for key, style, what in (("hybrid_p50_ms", "-", "p50"), ("hybrid_p95_ms", ":", "p95")):
            left.plot(
                xs,
                [r[key] for r in pts],
                linestyle=style,
                marker="o",
                color=STORE_COLOURS[store],
                label=f"{STORE_NAMES[store]} {what}",
            )
    if later:
        pts = sorted(
            (
                r
                for r in later["rows"]
                if r["embedder"] == "transformers" and r["strategy"] == "hybrid"
            ),
            key=lambda r: r["memories"],
        )
        commit = (later.get("machine", {}).get("commit") or "?")[:7]
        left.plot(
            [r["memories"] for r in pts],
            [r["p50_ms"] for r in pts],
            linestyle="--",
            marker="^",
            color="#2ca02c",
            label=f"SQLite p50 on {commit}, after issue 21 (retrieval.json)",
        )
    left.set_xscale("log")
    left.set_yscale("log")
    _plain_log_ticks(left.yaxis)
    _plain_log_ticks(left.xaxis)
    left.set_xlabel("memories for the owner")
    left.set_ylabel("hybrid search ms (MiniLM, query embedding included)")
    left.set_title("search latency: lower is better", fontsize=9)
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    width = 0.2
    kinds = (("ingest_per_s", "writes"), ("ingest_with_embedding_per_s", "with embedding"))
    i = 0
    for key, what in kinds:
        for store in ("sqlite", "postgresql"):
            by_size = {r["memories_per_owner"]: r[key] for r in rows if r["store"] == store}
            xs = [x + (i - 1.5) * width for x in range(len(sizes))]
            bars = right.bar(
                xs,
                [by_size.get(s, 0) for s in sizes],
                width,
                color=STORE_COLOURS[store],
                alpha=1.0 if what == "writes" else 0.55,
                label=f"{STORE_NAMES[store]}, {what}",
            )
            right.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
            i += 1
    right.set_yscale("log")
    right.set_ylim(50, max(r["ingest_per_s"] for r in rows) * 8)
    _plain_log_ticks(right.yaxis)
    right.set_xticks(range(len(sizes)), [f"{s:,}" for s in sizes])
    right.set_xlabel("memories for the owner")
    right.set_ylabel("memories stored per second")
    right.set_title("ingest: higher is better", fontsize=9)
    right.grid(True, axis="y", alpha=0.3)
    right.legend(fontsize=8, loc="upper center", ncol=2)
    fig.suptitle(f"SQLite against PostgreSQL, one owner — {_caption(payload)}", fontsize=9)
    fig.tight_layout()
    return _save(fig, out / "stores.png")


def scaleout_plot(payload: dict[str, Any], out: Path) -> Path:
    """Requests/s and chat p50/p99 per store and number of server processes."""
    plt = _pyplot()
    rows = payload["rows"]

    def label(r: dict[str, Any]) -> str:
        n = r["servers"]
        servers = f"{n} server{'s' if n > 1 else ''}"
        workers = f", {r['workers']} workers" if r["workers"] > 1 else ""
        return f"{STORE_NAMES.get(r['store'], r['store'])}\n{servers}{workers}"

    labels = [label(r) for r in rows]
    colours = [STORE_COLOURS.get(r["store"], "#7f7f7f") for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    bars = left.bar(range(len(rows)), [r["requests_per_s"] for r in rows], 0.6, color=colours)
    left.bar_label(bars, fmt="%.1f", fontsize=8, padding=1)
    left.set_xticks(range(len(rows)), labels, fontsize=8)
    left.set_ylabel("requests/s (mixed load)")
    left.set_title("throughput: higher is better", fontsize=9)
    left.grid(True, axis="y", alpha=0.3)
    width = 0.38
    for i, (key, what) in enumerate((("chat_p50_ms", "chat p50"), ("chat_p99_ms", "chat p99"))):
        xs = [x + (i - 0.5) * width for x in range(len(rows))]
        bars = right.bar(
            xs,
            [r[key] for r in rows],
            width,
            color=colours,
            alpha=1.0 if i == 0 else 0.5,
            label=what,
        )
        right.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
    right.set_yscale("log")
    right.set_ylim(100, max(r["chat_p99_ms"] for r in rows) * 1.6)
    _plain_log_ticks(right.yaxis)
    right.set_xticks(range(len(rows)), labels, fontsize=8)
    right.set_ylabel("ms (log scale)")
    right.set_title("chat latency p50 (solid) and p99 (light): lower is better", fontsize=9)
    right.grid(True, axis="y", alpha=0.3)
    lost = sum(r.get("lost_writes", 0) + r.get("lost_extractions", 0) for r in rows)
    errors = sum(r.get("errors", 0) for r in rows)
    fig.suptitle(
        f"{payload.get('clients')} clients for {payload.get('seconds'):.0f} s each; "
        f"{errors} errors, {lost} lost writes or extractions — {_caption(payload)}",
        fontsize=9,
    )
    fig.tight_layout()
    return _save(fig, out / "scale-out.png")


def abuse_plot(payload: dict[str, Any], out: Path) -> Path:
    """The polite clients' latency percentiles, quiet and under abuse."""
    plt = _pyplot()
    rows = payload["rows"]
    keys = [("p50_ms", "p50"), ("p95_ms", "p95"), ("p99_ms", "p99"), ("max_ms", "max")]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    width = 0.38
    for i, r in enumerate(rows):
        xs = [x + (i - 0.5) * width for x in range(len(keys))]
        bars = ax.bar(
            xs,
            [r[k] for k, _ in keys],
            width,
            label=f"{r['phase']} ({r.get('polite_errors', 0)} errors)",
            color=("#2ca02c", "#d62728")[i % 2],
        )
        ax.bar_label(bars, fmt="%.0f", fontsize=8, padding=1)
    ax.set_xticks(range(len(keys)), [w for _, w in keys])
    ax.set_ylabel("polite chat latency ms")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Polite tenants, quiet and under abuse — {_caption(payload)}", fontsize=8)
    fig.tight_layout()
    return _save(fig, out / "abuse.png")


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
    peers = load(results, "peers")
    if peers and peers.get("rows"):
        written.append(peers_plot(peers, out))
    extraction = load(results, "extraction")
    if extraction and extraction.get("extraction", {}).get("splits"):
        written.append(extraction_plot(extraction, out))
    proxy = load(results, "proxy")
    if proxy and proxy.get("rows"):
        written.append(gateway_plot(proxy, out))
    stores = load(results, "stores")
    if stores and stores.get("rows"):
        later = retrieval if retrieval and retrieval.get("rows") else None
        written.append(stores_plot(stores, out, later))
    scaleout = load(results, "load_scaleout")
    if scaleout and scaleout.get("rows"):
        written.append(scaleout_plot(scaleout, out))
    abuse = load(results, "abuse")
    if abuse and len(abuse.get("rows", [])) == 2:
        written.append(abuse_plot(abuse, out))
    return written


def existing_plots(out: Path) -> list[Path]:
    return [out / f"{n}.png" for n in PLOT_NAMES if (out / f"{n}.png").exists()]
