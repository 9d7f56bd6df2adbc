"""The ``tables`` bench stage: the Markdown tables of docs/benchmarks.md, from the JSON.

Everything between ``<!-- bench:start -->`` and ``<!-- bench:end -->`` in the docs
file is generated here from ``bench/results/*.json`` and rewritten on every run; the
rest of the file is hand-written and left alone. Without the markers, the region is
appended at the end of the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.plots import load

START = "<!-- bench:start -->"
END = "<!-- bench:end -->"
REGION = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
KNOWN = (
    "embedding",
    "retrieval",
    "ingest",
    "locomo",
    "ablation",
    "peers",
    "extraction",
    "gateway",
    "gateway_formats",
    "proxy",
    "vectors",
    "resident",
    "load",
    "abuse",
)


EMBEDDER_ORDER = {"keyword-only": 0, "static": 1, "transformers": 2}
STRATEGY_ORDER = {"recent": 0, "semantic": 1, "hybrid": 2}


def _order(row: dict[str, Any]) -> int:
    return EMBEDDER_ORDER.get(row.get("embedder", ""), 9)


def fmt(value: Any) -> str:
    if value is None or value == "":
        return "\u2013"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"
    return str(value)


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A Markdown table of ``rows`` with ``(key, heading)`` columns."""
    lines = ["| " + " | ".join(h for _, h in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(k)) for k, _ in columns) + " |" for r in rows]
    return "\n".join(lines)


def runs(payloads: dict[str, dict[str, Any]]) -> str:
    rows = []
    for name, p in payloads.items():
        m = p.get("machine", {})
        load = m.get("load_average_start")
        end = p.get("load_average_end")
        rows.append(
            {
                "name": f"`{name}.json`",
                "commit": f"`{(m.get('commit') or '?')[:10]}`"
                + (" (tree dirty)" if m.get("dirty_in_bench_or_memoryd") else ""),
                "date": m.get("date"),
                "load": " / ".join(f"{x:.2f}" for x in load) if load else None,
                "end": " / ".join(f"{x:.2f}" for x in end) if end else None,
                "cpu": m.get("cpu_model"),
            }
        )
    first = next(iter(payloads.values()), {}).get("machine", {})
    cpus = {r["cpu"] for r in rows}
    head = (
        f"Machine: {first.get('cpu_model') or '?'}, {first.get('cores')} cores, "
        f"{fmt((first.get('ram_mb') or 0) / 1024)} GB RAM, Python {first.get('python')}, "
        f"{first.get('platform')}."
    )
    cols = [
        ("name", "results"),
        ("commit", "commit"),
        ("date", "date"),
        ("load", "load average at start (1/5/15 min)"),
        ("end", "when written"),
    ]
    if len(cpus) > 1:  # results from different machines: say which ran which
        head = head.replace(f"Machine: {first.get('cpu_model') or '?'}, ", "Machines: ", 1)
        head += " The results files come from different CPUs (column *CPU*): compare "
        head += "timings within one file only."
        cols.append(("cpu", "CPU"))
    return head + "\n\n" + table(rows, cols)


def retrieval_section(p: dict[str, Any], ingest: dict[str, Any] | None) -> str:
    rows = sorted(
        p["rows"], key=lambda r: (r["memories"], _order(r), STRATEGY_ORDER.get(r["strategy"], 9))
    )
    out = [
        "### Retrieval latency (`retrieval.json`, query embedding included)",
        "",
        "One owner holding the whole corpus (synthetic first-person facts, "
        f"{rows[0].get('queries', 200) if rows else 200} queries per point); each corpus "
        "size and embedder runs in its own process. `recent` is the no-query path.",
        "",
        table(
            rows,
            [
                ("memories", "memories"),
                ("embedder", "embedder"),
                ("strategy", "strategy"),
                ("p50_ms", "p50 ms"),
                ("p95_ms", "p95 ms"),
                ("p99_ms", "p99 ms"),
            ],
        ),
    ]
    if ingest:
        out += [
            "",
            "### Ingest throughput and memory (`ingest.json`)",
            "",
            "Batched `create_many` (1,000 a transaction); *with embedding* includes "
            "waiting for the background indexer to embed and store every vector. RSS is "
            "the child process's resident set after the corpus is stored and indexed "
            "minus before (engine open, model loaded), scaled to 100k memories; the "
            "embedding model's own memory is in the baseline, not the delta. *Resident "
            "MB*: the owner's vectors held in memory once searched (owners of 200+ "
            "memories, `vectors/resident.py`); *keyword postings MB*: its keyword "
            "postings (`storage/sqlite/keywords.py`), built in the background above "
            "10,000 memories (*postings build s*, waited for before the timed queries); "
            "and the RSS after the searches.",
            "",
            table(
                sorted(ingest["rows"], key=lambda r: (r["memories"], _order(r))),
                [
                    ("memories", "memories"),
                    ("embedder", "embedder"),
                    ("ingest_per_s", "writes/s"),
                    ("ingest_with_embedding_per_s", "with embedding /s"),
                    ("rss_before_mb", "RSS before MB"),
                    ("rss_after_mb", "RSS after MB"),
                    ("rss_mb_per_100k", "RSS MB per 100k"),
                    ("peak_delta_mb_per_100k", "peak MB per 100k"),
                    ("disk_mb", "on disk MB"),
                    ("resident_mb", "resident MB"),
                    ("keyword_resident_mb", "keyword postings MB"),
                    ("keyword_build_s", "postings build s"),
                    ("rss_after_searches_mb", "RSS after searches MB"),
                ],
            ),
        ]
    return "\n".join(out)


def locomo_section(p: dict[str, Any]) -> str:
    result = p.get("locomo", {})
    ks = [str(k) for k in result.get("k", [5, 10, 25])]
    q = result.get("questions", {})
    rows = p["rows"]
    overall = [r for r in rows if r["category"] == "all"]
    k = "10" if "10" in ks else ks[-1]
    cats = [r for r in rows if r["category"] != "all"]
    names = sorted({r["category"] for r in cats})
    pivot: dict[str, dict[str, Any]] = {}
    for r in cats:
        pivot.setdefault(r["strategy"], {"strategy": r["strategy"]})[r["category"]] = r[f"R@{k}"]
    return "\n".join(
        [
            "### LoCoMo recall (`locomo.json`, `memoryd eval locomo --strategy all --json`)",
            "",
            f"{result.get('conversations')} conversations, {result.get('turns')} turns, "
            f"{q.get('evaluated') if isinstance(q, dict) else '?'} questions, embedder "
            f"{result.get('embedder')}, {result.get('elapsed_s')} s.",
            "",
            table(
                overall,
                [("strategy", "strategy")]
                + [(f"R@{k}", f"R@{k}") for k in ks]
                + [(f"tok@{k}", f"tokens@{k}") for k in ks]
                + [("latency_p50_ms", "p50 ms"), ("n", "questions")],
            ),
            "",
            f"Recall@{k} per question category:",
            "",
            table(list(pivot.values()), [("strategy", "strategy")] + [(c, c) for c in names]),
        ]
    )


def ablation_section(p: dict[str, Any]) -> str:
    """Cumulative rows, leave-one-out rows and the single legs, one table each."""
    info = p.get("ablation", {})
    rows = p["rows"]
    cats = [c for c in ("c1", "c2", "c3", "c4") if any(f"R@10 {c}" in r for r in rows)]
    columns = (
        [("row", "what changed"), ("R@5", "R@5"), ("R@10", "R@10"), ("R@25", "R@25")]
        + ([("S@10", "S@10")] if any("S@10" in r for r in rows) else [])
        + [(f"R@10 {c}", f"R@10 cat {c[1:]}") for c in cats]
        + [("tok@10", "tokens@10"), ("p50_ms", "p50 ms")]
    )
    parts = [
        "### LoCoMo ablation (`ablation.json`, `python -m bench --only ablation`)",
        "",
        f"Default strategy (hybrid), {info.get('embedder')}, {info.get('conversations')} "
        f"conversations, {info.get('questions')} questions, {info.get('vec_top_k')} candidates "
        "per leg; rows that store the turns the same way share one fresh engine and one "
        "ingest, each row setting only the retriever's configuration. S@10: session-level "
        "recall. Categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.",
    ]
    titles = {
        "cumulative": "One change at a time, from hybrid RRF over bare turns:",
        "leave-one-out": "The default with one change taken away:",
        "leg": "One leg alone (turn context on):",
    }
    for kind, title in titles.items():
        chosen = [r for r in rows if r.get("kind") == kind]
        if chosen:
            parts += ["", title, "", table(chosen, columns)]
    return "\n".join(parts)


def _ratio(value: Any) -> str:
    return "\u2013" if value is None else f"{value:.2f}"


def peers_section(p: dict[str, Any]) -> str:
    """memoryd, its baselines and the peer(s) side by side, ratios against memoryd."""
    proto = p.get("protocol", {})
    env = p.get("peer_env", {})
    systems = p.get("systems", {})
    rows = []
    for r in p["rows"]:
        row = dict(r)
        for key in ("R@5", "R@10", "R@25"):
            row[key] = f"{r[key]:.3f}"
        for key in ("R@5_ratio", "R@10_ratio", "p50_ratio", "p95_ratio"):
            row[key] = _ratio(r.get(key))
        row["p50_ms"] = f"{r['p50_ms']:.1f}"
        row["p95_ms"] = f"{r['p95_ms']:.1f}"
        rows.append(row)
    peer: dict[str, Any] = next((s["peer"] for s in systems.values() if "peer" in s), {})
    versions = ", ".join(f"{k} {v}" for k, v in peer.get("versions", {}).items() if v)
    lines = [
        "### Peers side by side on LoCoMo (`peers.json`, `python -m bench --only peers`)",
        "",
        f"{len(proto.get('conversations', []))} conversations, {proto.get('turns')} turns, "
        f"{proto.get('questions')} questions (categories 1-4), turns stored as "
        f"`{proto.get('turn_context')}` for every system, one query per question at "
        f"k = {max(proto.get('k', [25]))}; {p.get('elapsed_s')} s. Ratios are against "
        f"{proto.get('reference')} (recall: higher is better; latency: lower is better). "
        "Search latency is one search call, query embedding included; memoryd runs in "
        "the bench process, the peer in its own venv "
        f"(`{env.get('venv')}`, on {env.get('base_python')}: {versions}).",
        "",
        table(
            rows,
            [
                ("system", "system"),
                ("embedder", "embedder"),
                ("R@5", "R@5"),
                ("R@10", "R@10"),
                ("R@25", "R@25"),
                ("tok@10", "tokens@10"),
                ("p50_ms", "search p50 ms"),
                ("p95_ms", "search p95 ms"),
                ("ingest_s", "ingest s"),
                ("R@5_ratio", "R@5 \u00f7 memoryd"),
                ("R@10_ratio", "R@10 \u00f7 memoryd"),
                ("p50_ratio", "p50 \u00f7 memoryd"),
                ("p95_ratio", "p95 \u00f7 memoryd"),
            ],
        ),
    ]
    notes = list(p.get("notes", []))
    if notes:
        lines += ["", *(f"- {n}" for n in notes)]
    return "\n".join(lines)


def _target(value: Any, ok: bool | None) -> str:
    return f"{fmt(value)}{_met(ok)}"


def _met(ok: bool | None) -> str:
    return {True: " (met)", False: " (not met)", None: ""}[ok]


def _slowest(worst: dict[str, Any]) -> str:
    if worst.get("timed_out"):
        return f"**over {worst.get('limit_s')} s**, stopped ({', '.join(worst['timed_out'])})"
    return f"**{fmt(worst.get('worst_ms'))} ms** ({worst.get('worst_input')})"


def extraction_section(p: dict[str, Any]) -> str:
    """Quality per split with the targets, recall per kind, speed, LoCoMo observations."""
    result = p.get("extraction", {})
    splits: dict[str, Any] = result.get("splits", {})
    targets = result.get("targets", {})
    rows = []
    for name, s in splits.items():
        pos, neg, sup, ok = s["positives"], s["negatives"], s["supersede"], s.get("meets", {})
        rows.append(
            {
                "split": name,
                "positives": pos["n"],
                "recall": _target(pos["recall"], ok.get("recall")),
                "value_recall": pos["value_recall"],
                "negatives": neg["n"],
                "false": _target(neg["false_memory_rate"], ok.get("false_memory_rate")),
                "pairs": sup["n"],
                "supersede": _target(sup["accuracy"], ok.get("supersede_accuracy")),
                **{m: g["accuracy"] for m, g in sup["per_mode"].items()},
            }
        )
    modes = list(dict.fromkeys(m for s in splits.values() for m in s["supersede"]["per_mode"]))
    kinds = list(dict.fromkeys(k for s in splits.values() for k in s["positives"]["per_kind"]))
    per_kind = [
        {"kind": k}
        | {n: s["positives"]["per_kind"].get(k, {}).get("recall") for n, s in splits.items()}
        for k in kinds
    ]
    pace, worst = result.get("throughput", {}), result.get("long_messages", {})
    speed_ok = result.get("speed_meets", {})
    parts = [
        "### Extraction (`extraction.json`, `python -m bench --only extraction`)",
        "",
        f"`memoryd eval extraction` on `{result.get('data')}`: every message through the real "
        "engine (rules extraction and reconciliation) for an owner of its own; "
        f"{result.get('elapsed_s')} s. Targets: recall \u2265 {targets.get('recall', 0):.2f}, "
        f"false memories \u2264 {targets.get('false_memory_rate', 0):.2f}, supersede \u2265 "
        f"{targets.get('supersede_accuracy', 0):.2f}. *Recall*: every expected value in a "
        "stored memory; *values*: per expected value; *false memories*: negatives that "
        "stored anything.",
        "",
        table(
            rows,
            [
                ("split", "split"),
                ("positives", "positives"),
                ("recall", "recall"),
                ("value_recall", "values"),
                ("negatives", "negatives"),
                ("false", "false memories"),
                ("pairs", "pairs"),
                ("supersede", "supersede"),
            ]
            + [(m, m) for m in modes],
        ),
        "",
        "Recall per kind:",
        "",
        table(per_kind, [("kind", "kind")] + [(n, n) for n in splits]),
        "",
        f"Speed: **{fmt(pace.get('messages_per_s'))} messages/s**"
        f"{_met(speed_ok.get('messages_per_s'))} (`extract_facts` alone, one thread, the "
        f"{pace.get('messages')} labelled messages of {fmt(pace.get('mean_chars'))} characters "
        f"on average, {pace.get('passes')} passes; target \u2265 "
        f"{targets.get('messages_per_s', 0):,.0f}); slowest 64 KiB message: "
        f"{_slowest(worst)}{_met(speed_ok.get('worst_64k_ms'))} (median of up to 3 calls, in "
        f"a child process, over {len(worst.get('inputs', []))} inputs; target \u2264 "
        f"{targets.get('worst_64k_ms', 0):.0f} ms).",
    ]
    obs = result.get("locomo_observations")
    if obs:
        parts += [
            "",
            "Against LoCoMo's observation annotations (a turn *carries an observation* when "
            "one cites its dia_id; the turn's text alone through `extract_facts`):",
            "",
            table(
                [obs],
                [
                    ("conversations", "conversations"),
                    ("turns", "turns"),
                    ("observed_turns", "turns with an observation"),
                    ("recall", "share of them with a fact"),
                    ("unobserved_turns", "turns without"),
                    ("false_positive_rate", "share of them with a fact"),
                ],
            ),
        ]
    return "\n".join(parts)


def generic(name: str, p: dict[str, Any]) -> str:
    rows = p.get("rows", [])
    cols = list(dict.fromkeys(k for r in rows for k in r))
    return f"### {name} (`{name}.json`)\n\n" + table(rows, [(c, c) for c in cols])


def generate(results: Path, docs: Path, plots: Sequence[Path]) -> str:
    payloads = {n: p for n in KNOWN if (p := load(results, n)) is not None}
    parts = [
        START,
        "<!-- generated by `python -m bench` from bench/results/*.json: edits here are lost -->",
        "",
        "*Generated by `python -m bench` from `bench/results/*.json`.*",
        "",
        runs(payloads),
    ]
    for path in plots:
        rel = Path(os.path.relpath(path, docs.parent)).as_posix()
        parts += ["", f"![{path.stem}]({rel})"]
    if "embedding" in payloads:
        e = payloads["embedding"]["rows"]
        parts += ["", "### Embedding throughput (`embedding.json`)", ""]
        parts.append(
            table(
                e,
                [
                    ("source", "source"),
                    ("dimensions", "dims"),
                    ("texts_per_s_batched", "texts/s batched"),
                    ("single_text_ms_p50", "one text p50 ms"),
                ],
            )
        )
    if "retrieval" in payloads:
        parts += ["", retrieval_section(payloads["retrieval"], payloads.get("ingest"))]
    if "locomo" in payloads:
        parts += ["", locomo_section(payloads["locomo"])]
    if "ablation" in payloads:
        parts += ["", ablation_section(payloads["ablation"])]
    if "peers" in payloads:
        parts += ["", peers_section(payloads["peers"])]
    if "extraction" in payloads:
        parts += ["", extraction_section(payloads["extraction"])]
    if "proxy" in payloads:
        from bench.proxy import section

        parts += ["", section(payloads["proxy"])]
    for name in ("gateway", "gateway_formats", "vectors", "resident", "load"):
        if name in payloads:
            parts += ["", generic(name, payloads[name])]
    if "load" in payloads and "checks" in payloads["load"]:
        skip = ("sample_errors", "rss")
        checks = {k: v for k, v in payloads["load"]["checks"].items() if k not in skip}
        parts += ["", "After the load run: " + ", ".join(f"{k} {v}" for k, v in checks.items())]
    if "load" in payloads and "rss" in payloads["load"]:
        from bench.rss import rss_line

        parts += ["", "During the load run: " + rss_line(payloads["load"]["rss"]) + "."]
    if "abuse" in payloads:
        from bench.abuse import summary

        p = payloads["abuse"]
        parts += ["", generic("abuse", p), "", "Abuse run: " + summary(p["rows"], p["abuse"])]
    parts += ["", END]
    return "\n".join(parts)


def write_region(docs: Path, region: str) -> None:
    """Replace the generated region of ``docs`` (or append it); the rest is untouched."""
    text = docs.read_text() if docs.exists() else "# Benchmarks\n"
    if REGION.search(text):
        new = REGION.sub(lambda _m: region, text, count=1)
    else:
        new = text.rstrip("\n") + "\n\n" + region + "\n"
    docs.parent.mkdir(parents=True, exist_ok=True)
    docs.write_text(new)
