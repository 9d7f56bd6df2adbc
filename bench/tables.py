"""The ``tables`` bench stage: the Markdown tables of docs/benchmarks.md, from the JSON.

Two kinds of generated region, both rewritten from ``bench/results/*.json`` on every
run, the hand-written text around them left alone:

- named regions, ``<!-- bench:start NAME -->`` ... ``<!-- bench:end NAME -->``: the
  section ``NAME`` of ``SECTIONS`` (a table, the line saying where and when it was
  measured, its plot). docs/benchmarks.md (the reader's page) and the investigation
  pages under docs/benchmarks/ hold them;
- the unnamed region ``<!-- bench:start -->`` ... ``<!-- bench:end -->``: every known
  results file in one dump (``generate``). Without any marker in the docs file, that
  region is appended at the end of the file.
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


# -- named regions: the reader's page and the investigation pages ----------------------

NAMED = re.compile(r"<!-- bench:start ([\w-]+) -->.*?<!-- bench:end \1 -->", re.DOTALL)
EMBEDDER_NAMES = {"transformers": "MiniLM", "keyword-only": "none (keyword only)"}
STORE_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


class Page:
    """What a section needs: the results, and where the page and the plots are."""

    def __init__(self, results: Path, page: Path, plots: Path) -> None:
        self.results, self.page, self.plots = results, page, plots
        self._cache: dict[str, dict[str, Any] | None] = {}

    def get(self, name: str) -> dict[str, Any] | None:
        if name not in self._cache:
            self._cache[name] = load(self.results, name)
        return self._cache[name]

    def link(self, path: str) -> str:
        """``path`` (relative to the docs folder) as a link target from this page."""
        return Path(os.path.relpath(self.plots.parent / path, self.page.parent)).as_posix()

    def plot(self, name: str, alt: str) -> str:
        path = self.plots / f"{name}.png"
        if not path.exists():
            return ""
        rel = Path(os.path.relpath(path, self.page.parent)).as_posix()
        return f"![{alt}]({rel})"


def _short_cpu(model: str | None) -> str:
    model = model or "?"
    for name in ("AMD EPYC", "Intel(R) Xeon(R)"):
        if model.startswith(name):
            return name.replace("(R)", "")
    return model


def measured(page: Page, *names: str) -> str:
    """One line: which results files, on which commit, day and CPU, at which load."""
    groups: dict[tuple[Any, ...], list[tuple[str, str | None]]] = {}
    for name in names:
        p = page.get(name)
        if p is None:
            continue
        m = p.get("machine", {})
        load = m.get("load_average_start")
        key = (
            (m.get("commit") or "?")[:10],
            bool(m.get("dirty_in_bench_or_memoryd")),
            m.get("date"),
            _short_cpu(m.get("cpu_model")),
            m.get("cores"),
        )
        groups.setdefault(key, []).append((f"`{name}.json`", f"{load[0]:.1f}" if load else None))
    parts = []
    for (commit, dirty, date, cpu, cores), files in groups.items():
        loads = {load for _, load in files}
        one = len(loads) == 1
        names_ = [f if one or not load else f"{f} (load {load})" for f, load in files]
        where = f"commit `{commit}`" + (" (tree dirty)" if dirty else "")
        where += f", {date}, {cpu}, {cores} cores"
        if one and None not in loads:
            where += f", load {next(iter(loads))} at start"
        parts.append(f"{' and '.join(names_)}: {where}")
    return "*Measured: " + "; ".join(parts) + ".*" if parts else ""


def _join(*blocks: str) -> str:
    return "\n\n".join(b for b in blocks if b)


def _missing(*names: str) -> str:
    files = ", ".join(f"`bench/results/{n}.json`" for n in names)
    then = "`python -m bench --only plots,tables`"
    return f"*No results yet ({files}): run the stage below, then {then}.*"


def _row(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


def _said(ok: bool | None) -> str:
    return {True: ": met", False: ": not met", None: ""}[ok]


def _num(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) and value < 10 else fmt(value)


def _ms(value: Any) -> str:
    if value is None:
        return "\u2013"
    v = float(value)
    return f"{v:.2f} ms" if v < 10 else f"{fmt(v)} ms"


def _by_stream(
    rows: Sequence[dict[str, Any]], keys: Sequence[str], values: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per ``keys``, each value as "plain / stream" (rows carry ``stream``)."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        row = out.setdefault(tuple(r[k] for k in keys), {k: r[k] for k in keys})
        for v in values:
            row.setdefault(v, ["\u2013", "\u2013"])[1 if r.get("stream") else 0] = fmt(r.get(v))
    for row in out.values():
        for v in values:
            row[v] = " / ".join(row[v])
    return list(out.values())


def glance_section(page: Page) -> str:
    """The headline figures, one row each, with what to compare them to."""
    rows: list[dict[str, Any]] = []

    def add(what: str, ours: str, other: str, source: str, anchor: str) -> None:
        rows.append({"what": f"[{what}](#{anchor})", "ours": ours, "other": other, "src": source})

    peers = page.get("peers")
    if peers and peers.get("rows"):
        ref = peers["rows"][0]
        bm25 = next((r for r in peers["rows"] if "BM25" in r["system"]), None)
        static = next((r for r in peers["rows"] if "static" in r["system"]), None)
        peer = next(
            (r for r in peers["rows"] if not r["system"].startswith(("memoryd", "dense", "BM25"))),
            None,
        )
        other = f"{peer['system']}: {peer['R@10']:.3f}" if peer else ""
        other += f"; plain BM25: {bm25['R@10']:.3f}" if bm25 else ""
        add(
            "LoCoMo evidence recall@10",
            f"{ref['R@10']:.3f}",
            other,
            "peers",
            "retrieval-quality-against-peers-locomo",
        )
        ours = f"{ref['p50_ms']:.1f} ms (MiniLM)"
        ours += f", {static['p50_ms']:.1f} ms (static model)" if static else ""
        add(
            "LoCoMo search p50",
            ours,
            f"{peer['system']}: {peer['p50_ms']:.1f} ms" if peer else "",
            "peers",
            "retrieval-quality-against-peers-locomo",
        )
    heldout = page.get("heldout")
    if heldout and heldout.get("rows"):
        d = next(
            (r for r in heldout["rows"] if "(the default)" in r["pipeline"]), heldout["rows"][-1]
        )
        add(
            "Recall@10 on conversations never tuned on",
            f"{d['R@10']:.3f}",
            "",
            "heldout",
            "retrieval-quality-against-peers-locomo",
        )
    ext = page.get("extraction")
    if ext and ext.get("extraction", {}).get("splits"):
        res = ext["extraction"]
        tg = res.get("targets", {})
        held = [n for n in ("test8", "test7", "test6", "test4", "test2") if n in res["splits"]]
        held = held or [next(iter(res["splits"]))]

        def figures(name: str) -> str:
            sp = res["splits"][name]
            return (
                f"{sp['positives']['recall']:.2f} / {sp['negatives']['false_memory_rate']:.2f} / "
                f"{sp['supersede']['accuracy']:.2f}"
            )

        add(
            "Extraction, held-out splits: recall / false memories / supersede",
            "; ".join(f"{n} {figures(n)}" for n in held),
            f"targets \u2265 {tg.get('recall', 0):.2f} / \u2264 "
            f"{tg.get('false_memory_rate', 0):.2f} / \u2265 {tg.get('supersede_accuracy', 0):.2f}",
            "extraction",
            "extraction-quality",
        )
    proxy = page.get("proxy")
    if proxy and proxy.get("rows"):
        prow = proxy["rows"]
        kw, pure, lite = _row(prow, id="keyword"), _row(prow, id="pure"), _row(prow, id="litellm")
        if kw and pure:
            add(
                "Added latency p50: keyword retrieval (1k memories) / memory off",
                f"{_ms(kw['added_p50_ms'])} / {_ms(pure['added_p50_ms'])}",
                f"LiteLLM proxy: {_ms(lite['added_p50_ms'])}" if lite else "",
                "proxy",
                "gateway-overhead-against-litellm",
            )
            new1k, new10k = _row(prow, id="minilm_different"), _row(prow, id="minilm10k_different")
            if new1k and new10k:
                add(
                    "Added latency p50 / p99, a new question each time, MiniLM, 1k / 10k",
                    f"{_ms(new1k['added_p50_ms'])} / {_ms(new1k['added_p99_ms'])}; "
                    f"{_ms(new10k['added_p50_ms'])} / {_ms(new10k['added_p99_ms'])}",
                    "goal < 2.5 ms / < 6 ms",
                    "proxy",
                    "gateway-overhead-against-litellm",
                )
            add(
                "Requests/s at 16 clients, keyword retrieval",
                f"{kw['rps']:,.0f}",
                f"LiteLLM proxy: {lite['rps']:,.0f}" if lite else "",
                "proxy",
                "gateway-overhead-against-litellm",
            )
    ret = page.get("retrieval")
    if ret and ret.get("rows"):
        big = max(r["memories"] for r in ret["rows"])
        h = _row(ret["rows"], memories=big, embedder="transformers", strategy="hybrid")
        k = _row(ret["rows"], memories=big, embedder="keyword-only", strategy="hybrid")
        if h:
            add(
                f"Hybrid search p50, one owner of {big:,} memories",
                f"{_ms(h['p50_ms'])} (MiniLM)"
                + (f", {_ms(k['p50_ms'])} (keyword only)" if k else ""),
                "",
                "retrieval",
                "latency-against-corpus-size",
            )
    scale = page.get("load_scaleout")
    if scale and scale.get("rows"):
        one = _row(scale["rows"], store="postgresql", servers=1, workers=1)
        two = _row(scale["rows"], store="postgresql", servers=2, workers=1)
        lost = sum(r.get("lost_writes", 0) + r.get("lost_extractions", 0) for r in scale["rows"])
        if one and two:
            add(
                "PostgreSQL, two servers against one (req/s)",
                f"{two['requests_per_s']:.1f} against {one['requests_per_s']:.1f}",
                f"{lost} writes or extractions lost",
                "load_scaleout",
                "scale-out-and-load",
            )
    abuse = page.get("abuse")
    if abuse and len(abuse.get("rows", [])) == 2:
        q, a = abuse["rows"]
        d = abuse.get("abuse", {})
        add(
            "Polite p99 while one key attacks",
            f"{_ms(a['p99_ms'])} (quiet: {_ms(q['p99_ms'])}), {a['polite_errors']} errors",
            f"target \u2264 {d.get('target', {}).get('p99_ratio_max', 2)}\u00d7 quiet",
            "abuse",
            "under-abuse",
        )
    for r in rows:
        r["src"] = f"`{r['src']}.json`"
    columns = [
        ("what", "headline"),
        ("ours", "memoryd"),
        ("other", "for comparison"),
        ("src", "from"),
    ]
    return _join(machine_section(page), table(rows, columns) if rows else "")


def machine_section(page: Page) -> str:
    """The machines the results files of the reader's page come from."""
    by_cpu: dict[str, list[str]] = {}
    first: dict[str, Any] = {}
    for name in READER_FILES:
        p = page.get(name)
        if p is None:
            continue
        m = p.get("machine", {})
        first = first or m
        by_cpu.setdefault(_short_cpu(m.get("cpu_model")), []).append(f"`{name}`")
    if not first:
        return _missing(*READER_FILES)
    cpus = "; ".join(f"{cpu}: {', '.join(files)}" for cpu, files in by_cpu.items())
    return (
        f"{first.get('cores')} cores, {fmt((first.get('ram_mb') or 0) / 1024)} GB RAM, "
        f"Python {first.get('python')}, Linux, shared with other work. CPUs ({cpus}): "
        "timings compare within one results file, not across CPUs."
    )


def peers_reader(page: Page) -> str:
    p = page.get("peers")
    if not p or not p.get("rows"):
        return _missing("peers")
    rows = [
        {**r, "embedder": r["embedder"].split(" (")[0].replace("none", "\u2013")} for r in p["rows"]
    ]
    parts = [
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
                ("p95_ms", "p95 ms"),
                ("ingest_s", "ingest s"),
            ],
        ),
        measured(page, "peers", "locomo"),
        page.plot("retrieval-vs-peers", "LoCoMo recall and search latency per system"),
    ]
    held = page.get("heldout")
    if held and held.get("rows"):
        info = held.get("heldout", {})
        rows = held["rows"]
        d = next((r for r in rows if "(the default)" in r["pipeline"]), rows[-1])
        parts += [
            f"On conversations written for memoryd and never used to choose a parameter "
            f"(`bench/data/heldout`: {info.get('conversations')} conversations, "
            f"{info.get('questions')} questions), the default scores R@5 {d['R@5']:.3f}, "
            f"**R@10 {d['R@10']:.3f}**, R@25 {d['R@25']:.3f} (every pipeline: "
            f"[retrieval.md]({page.link('benchmarks/retrieval.md')}#context-aware-indexing)). "
            + measured(page, "heldout")
        ]
    return _join(*parts)


def extraction_reader(page: Page) -> str:
    p = page.get("extraction")
    result = (p or {}).get("extraction", {})
    splits: dict[str, Any] = result.get("splits", {})
    if not splits:
        return _missing("extraction")
    targets = result.get("targets", {})
    rows = []
    for name, s in splits.items():
        ok = s.get("meets", {})
        rows.append(
            {
                "split": {
                    "test": "test (held out; the tagger's thresholds were set on it)",
                    "test2": "test2 (held out; the tagger's thresholds were set on it)",
                    "test4": "test4 (held out; the tagger's thresholds were set on it)",
                    "test6": "test6 (held out; measured once, then its misses published)",
                    "test7": "test7 (held out: updates; measured before and after)",
                    "test8": "test8 (held out, new: updates; measured once)",
                    "dev8": "dev8 (written as test5: measured fresh once, then tuned on)",
                    "dev6": "dev6 (never trained on; thresholds swept on it)",
                    "all": "all",
                }.get(name, f"{name} (tuned on)"),
                "positives": s["positives"]["n"],
                "recall": _target(s["positives"]["recall"], ok.get("recall")),
                "negatives": s["negatives"]["n"],
                "false": _target(s["negatives"]["false_memory_rate"], ok.get("false_memory_rate")),
                "pairs": s["supersede"]["n"],
                "supersede": _target(s["supersede"]["accuracy"], ok.get("supersede_accuracy")),
            }
        )
    pace, worst = result.get("throughput", {}), result.get("long_messages", {})
    speed_ok = result.get("speed_meets", {})
    speed = (
        f"Speed: **{fmt(pace.get('messages_per_s'))} messages/s** on one thread (target "
        f"\u2265 {targets.get('messages_per_s', 0):,.0f}{_said(speed_ok.get('messages_per_s'))});"
        f" the slowest 64 KiB message {_slowest(worst)} (target \u2264 "
        f"{targets.get('worst_64k_ms', 0):.0f} ms{_said(speed_ok.get('worst_64k_ms'))})."
    )
    rules_only = result.get("rules_only", {})
    alone = (
        "Rules alone (no classifier, no value tagger), recall / false memories / supersede: "
        + "; ".join(
            f"{n} {fmt(r['recall'])} / {fmt(r['false_memory_rate'])} / {fmt(r['supersede'])}"
            for n, r in rules_only.items()
        )
        + f". Classifier: {result.get('classifier', 'not recorded')}."
        if rules_only
        else ""
    )
    return _join(
        table(
            rows,
            [
                ("split", "split"),
                ("positives", "positives"),
                ("recall", "recall"),
                ("negatives", "negatives"),
                ("false", "false memories"),
                ("pairs", "supersede pairs"),
                ("supersede", "supersede"),
            ],
        ),
        speed,
        alone,
        measured(page, "extraction"),
        page.plot("extraction-quality", "extraction quality per split"),
    )


def _labelled_groups(splits: dict[str, Any], key: str, title: str) -> str:
    """Recall and supersede per register (or attribute) of the splits that label them
    (dev3, test2): "n" is how many messages or pairs the cell counts."""
    named = {
        n: s
        for n, s in splits.items()
        if n != "all" and set(s["positives"].get(key, {})) - {"unlabelled"}
    }
    if not named:
        return ""
    groups = sorted(
        {
            g
            for s in named.values()
            for part in ("positives", "supersede")
            for g in s[part].get(key, {})
        }
        - {"unlabelled"}
    )

    def cell(group: dict[str, Any] | None, field: str) -> str:
        if not group:
            return ""
        return f"{fmt(group[field])} ({group['n']})"

    rows = []
    for g in groups:
        row: dict[str, Any] = {title: g}
        for n, s in named.items():
            row[f"{n} recall"] = cell(s["positives"][key].get(g), "recall")
            row[f"{n} supersede"] = cell(s["supersede"][key].get(g), "accuracy")
        rows.append(row)
    columns = [(title, title)] + [
        (f"{n} {m}", f"{n} {m} (n)") for n in named for m in ("recall", "supersede")
    ]
    return table(rows, columns)


def extraction_groups(page: Page) -> str:
    """Recall and supersede per register and per attribute of the labelled splits."""
    p = page.get("extraction")
    splits: dict[str, Any] = (p or {}).get("extraction", {}).get("splits", {})
    if not splits:
        return _missing("extraction")
    return _join(
        _labelled_groups(splits, "per_register", "register"),
        _labelled_groups(splits, "per_attribute", "attribute"),
        measured(page, "extraction"),
    )


def profile_section(page: Page) -> str:
    """The profile on advice questions and the instruction guard, per split."""
    p = page.get("profile")
    detail = (p or {}).get("profile") or {}
    if not p or not p.get("rows"):
        return _missing("profile")
    head = (
        "| split | constraint injected | captured | other memories per request | "
        "attacks blocked | preferences in their profile | reaching another end user | "
        "look-alikes refused |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]

    def cell(r: dict[str, Any], key: str) -> str:
        value = r.get(key)
        return "" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)

    for r in p["rows"]:  # a split may have advice scenarios, instructions, or both
        keys = (
            "constraint injected",
            "captured",
            "other memories/request",
            "attacks blocked",
            "preferences in profile",
            "leaked",
            "look-alikes refused",
        )
        lines.append(f"| {r['split']} | " + " | ".join(cell(r, k) for k in keys) + " |")
    topics = ["", "| split | " + " | ".join(_TOPICS) + " |", "|---|" + "---|" * len(_TOPICS)]
    for a in detail.get("advice", []):
        per = a.get("per_topic", {})
        topics.append(
            f"| {a['split']} | " + " | ".join(f"{per.get(t, 0):.2f}" for t in _TOPICS) + " |"
        )
    tail = _floor_tail(detail)
    return _join("\n".join(lines + topics) + "\n" + tail, measured(page, "profile"))


_TOPICS = ("food", "exercise", "travel", "childcare", "work")


def _floor_tail(detail: dict[str, Any]) -> str:
    """The relevance floor's own bench, run beside a stage: one sentence."""
    floor = [r for r in detail.get("relevance", []) if r.get("split") == "all"]
    if not floor:
        return ""
    f = floor[0]
    return (
        f"\nThe relevance floor's bench in the same run (floor {f['floor']}): unrelated "
        f"queries injecting anything {f['unrelated_injecting']}, related queries served "
        f"{f['related_served']}, precision {f['precision']}.\n"
    )


def selfq_section(page: Page) -> str:
    """Questions about the user through the gateway: per split, then per
    register and per attribute."""
    p = page.get("selfq")
    detail = (p or {}).get("selfq") or {}
    splits = detail.get("splits") or []
    if not p or not splits:
        return _missing("selfq")
    lines = [
        "| split | mode | self-questions | asked fact in block | captured | in block when "
        "captured | update: new, not old | overview facts | unrelated clean |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in splits:
        lines.append(
            f"| {s['split']} | {s.get('mode', 'classifier')} | {s['self_questions']} | "
            f"{s['asked_fact_in_block']:.2f} | {s['captured']:.2f} | "
            f"{s['in_block_when_captured']:.2f} | {s['update_new_without_old']:.2f} | "
            f"{s['overview_facts_in_block']:.2f} | {s['unrelated_clean']:.2f} |"
        )
    shown = [s for s in splits if s.get("mode", "classifier") == "classifier"]
    names = [s["split"] for s in shown]
    groups = []
    for key, label in (("per_register", "register"), ("per_attribute", "attribute")):
        keys = sorted({k for s in shown for k in s.get(key, {})})
        heads = " | ".join(f"{n}: in block (captured)" for n in names)
        groups += ["", f"| {label} | {heads} |"]
        groups.append("|---|" + "---|" * len(names))
        for k in keys:
            cells = []
            for s in shown:
                g = s.get(key, {}).get(k)
                cells.append(f"{g['ok']:.2f} ({g['captured']:.2f}), n={g['n']}" if g else "")
            groups.append(f"| {k} | " + " | ".join(cells) + " |")
    tail = _floor_tail(detail)
    return _join("\n".join(lines + groups) + "\n" + tail, measured(page, "selfq"))


def gateway_reader(page: Page) -> str:
    p = page.get("proxy")
    parts = _proxy_reader(page, p) if p and p.get("rows") else [_missing("proxy")]
    formats = page.get("gateway_formats")
    if formats and formats.get("rows"):
        by = _by_stream(formats["rows"], ("format",), ("added_p50_ms", "vs_chat"))
        each = ", ".join(f"{r['format']} {r['added_p50_ms']} ms (\u00d7{r['vs_chat']})" for r in by)
        parts.append(
            "Per wire format, one memoryd with keyword retrieval, added p50 plain / streamed "
            f"(\u00d7 chat completions'; the goal is within 10 %): {each}. "
            + measured(page, "gateway_formats")
        )
    return _join(*parts)


def _proxy_reader(page: Page, p: dict[str, Any]) -> list[str]:
    rows = []
    for r in p["rows"]:
        row = dict(r)
        if r.get("id") == "direct":
            pairs = (("added_p50_ms", "p50_ms"), ("added_p99_ms", "p99_ms"))
            for key, base in (*pairs, ("added_ttfb_ms", "ttfb_ms")):
                row[key] = f"0 (itself: {fmt(r.get(base))})"
        rows.append(row)
    goals = "; ".join(
        f"{g['goal']}: {_num(g['measured'])}{_met(g['met'])}" for g in p.get("goals", [])
    )
    s = p.get("settings", {})
    parts = [
        table(
            rows,
            [
                ("config", "configuration"),
                ("added_p50_ms", "added p50 ms"),
                ("added_p99_ms", "added p99 ms"),
                ("added_ttfb_ms", "added stream TTFB ms"),
                ("rps", f"req/s @{s.get('clients', 16)} clients"),
                ("cpu_ms_per_request", "CPU ms/request"),
            ],
        ),
        f"Goals: {goals}." if goals else "",
        measured(page, "proxy"),
        page.plot("gateway-overhead", "added latency and throughput per proxy configuration"),
    ]
    return parts


def stores_reader(page: Page) -> str:
    p = page.get("stores")
    if not p or not p.get("rows"):
        return _missing("stores")
    named = [
        {**r, "store": STORE_NAMES.get(r["store"], r["store"])}
        for r in sorted(p["rows"], key=lambda r: (r["memories_per_owner"], r["store"] != "sqlite"))
    ]
    parts = [
        table(
            named,
            [
                ("store", "store"),
                ("memories_per_owner", "memories per owner"),
                ("ingest_per_s", "writes/s"),
                ("ingest_with_embedding_per_s", "with embedding /s"),
                ("hybrid_p50_ms", "hybrid p50 ms"),
                ("hybrid_p95_ms", "hybrid p95 ms"),
            ],
        ),
        page.plot("stores", "hybrid latency and ingest per owner size, SQLite and PostgreSQL"),
    ]
    gw = page.get("stores_gateway")
    if gw and gw.get("rows"):
        rows = [
            {
                **r,
                "store": STORE_NAMES.get(r["store"], r["store"]),
                "embedder": EMBEDDER_NAMES.get(r["embedder"], r["embedder"]),
            }
            for r in gw["rows"]
        ]
        parts += [
            "The gateway on each store (1,000 memories, memory on; added over the fake "
            "upstream alone):",
            table(
                _by_stream(
                    rows, ("store", "embedder"), ("added_p50_ms", "added_p99_ms", "gateway_rps")
                ),
                [
                    ("store", "store"),
                    ("embedder", "embedder"),
                    ("added_p50_ms", "added p50 ms (plain / stream)"),
                    ("added_p99_ms", "added p99 ms (plain / stream)"),
                    ("gateway_rps", "req/s (plain / stream)"),
                ],
            ),
        ]
    return _join(*parts, measured(page, "stores", "stores_gateway"))


def scaleout_reader(page: Page) -> str:
    p = page.get("load_scaleout")
    parts = []
    if p and p.get("rows"):
        rows = [{**r, "store": STORE_NAMES.get(r["store"], r["store"])} for r in p["rows"]]
        parts += [
            f"{p.get('clients')} clients for {fmt(p.get('seconds'))} s per configuration:",
            table(
                rows,
                [
                    ("store", "store"),
                    ("servers", "servers"),
                    ("workers", "workers each"),
                    ("requests_per_s", "req/s"),
                    ("chat_p50_ms", "chat p50 ms"),
                    ("chat_p99_ms", "chat p99 ms"),
                    ("errors", "errors"),
                    ("lost_writes", "lost writes"),
                    ("lost_extractions", "lost extractions"),
                ],
            ),
            measured(page, "load_scaleout"),
            page.plot("scale-out", "requests/s and chat latency with one and two servers"),
        ]
    load_ = page.get("load")
    if load_ and load_.get("rows"):
        c = load_.get("checks", {})
        head = f"One SQLite server, {c.get('clients')} clients for {fmt(c.get('seconds'))} s"
        tail = (
            f"{c.get('requests_per_s')} requests/s, {c.get('errors')} errors, "
            f"{c.get('lost_writes')} lost writes of {fmt(c.get('acknowledged_writes'))}, "
            f"{c.get('lost_extractions')} lost extractions of {fmt(c.get('acknowledged_chats'))} "
            f"chats, integrity check {c.get('integrity_check')}"
        )
        if "rss" in load_:
            from bench.rss import rss_line

            tail += "; " + rss_line(load_["rss"])
        chat = _row(load_["rows"], op="chat") or {}
        tail += f"; chat p50 {_ms(chat.get('p50_ms'))}, p99 {_ms(chat.get('p99_ms'))}"
        parts += [f"{head}: {tail}.", measured(page, "load")]
    return _join(*parts) or _missing("load_scaleout", "load")


def load_details(page: Page) -> str:
    p = page.get("load")
    if not p or not p.get("rows"):
        return _missing("load")
    skip = ("sample_errors", "rss")
    checks = {k: v for k, v in p.get("checks", {}).items() if k not in skip}
    return _join(
        table(
            p["rows"],
            [
                ("op", "operation"),
                ("count", "count"),
                ("per_s", "per s"),
                ("p50_ms", "p50 ms"),
                ("p95_ms", "p95 ms"),
                ("p99_ms", "p99 ms"),
                ("errors", "errors"),
            ],
        ),
        "After the load run: " + ", ".join(f"{k} {v}" for k, v in checks.items()) + ".",
        measured(page, "load"),
    )


def latency_reader(page: Page) -> str:
    p = page.get("retrieval")
    if not p or not p.get("rows"):
        return _missing("retrieval", "ingest")
    ingest = {(r["memories"], r["embedder"]): r for r in (page.get("ingest") or {}).get("rows", [])}
    merged: dict[tuple[int, str], dict[str, Any]] = {}
    for r in p["rows"]:
        key = (r["memories"], r["embedder"])
        row = merged.setdefault(
            key,
            {
                "memories": r["memories"],
                "embedder": EMBEDDER_NAMES.get(r["embedder"], r["embedder"]),
                **{
                    k: v
                    for k, v in ingest.get(key, {}).items()
                    if k not in ("memories", "embedder")
                },
            },
        )
        row[f"{r['strategy']}_p50"] = r["p50_ms"]
        row[f"{r['strategy']}_p99"] = r["p99_ms"]
    rows = [merged[k] for k in sorted(merged, key=lambda k: (k[0], EMBEDDER_ORDER.get(k[1], 9)))]
    return _join(
        table(
            rows,
            [
                ("memories", "memories"),
                ("embedder", "embedder"),
                ("recent_p50", "recent p50 ms"),
                ("semantic_p50", "semantic p50 ms"),
                ("hybrid_p50", "hybrid p50 ms"),
                ("hybrid_p99", "hybrid p99 ms"),
                ("ingest_per_s", "writes/s"),
                ("ingest_with_embedding_per_s", "with embedding /s"),
                ("rss_mb_per_100k", "RSS MB per 100k"),
                ("disk_mb", "on disk MB"),
            ],
        ),
        measured(page, "retrieval", "ingest"),
        page.plot("latency-vs-size", "retrieval latency against corpus size"),
    )


def abuse_reader(page: Page) -> str:
    p = page.get("abuse")
    if not p or len(p.get("rows", [])) != 2:
        return _missing("abuse")
    from bench.abuse import summary

    return _join(
        table(
            p["rows"],
            [
                ("phase", "phase"),
                ("polite_requests", "polite chats"),
                ("per_s", "per s"),
                ("p50_ms", "p50 ms"),
                ("p95_ms", "p95 ms"),
                ("p99_ms", "p99 ms"),
                ("max_ms", "max ms"),
                ("polite_errors", "polite errors"),
                ("server_rss_mb", "server RSS MB"),
                ("server_cpu_pct", "server CPU %"),
            ],
        ),
        "Abuse run: " + summary(p["rows"], p["abuse"]) + ".",
        measured(page, "abuse"),
        page.plot("abuse", "polite latency, quiet and under abuse"),
    )


def locomo_details(page: Page) -> str:
    p = page.get("locomo")
    if not p or not p.get("rows"):
        return _missing("locomo")
    return _join(
        locomo_section(p),
        measured(page, "locomo"),
        page.plot("recall-by-strategy", "LoCoMo recall per strategy"),
        page.plot("recall-by-category", "LoCoMo recall@10 per question category"),
    )


def peers_details(page: Page) -> str:
    p = page.get("peers")
    return _join(peers_section(p), measured(page, "peers")) if p else _missing("peers")


def ablation_details(page: Page) -> str:
    p = page.get("ablation")
    return _join(ablation_section(p), measured(page, "ablation")) if p else _missing("ablation")


def latency_details(page: Page) -> str:
    parts = []
    e = page.get("embedding")
    if e:
        parts += [
            "### Embedding throughput (`embedding.json`)",
            table(
                e["rows"],
                [
                    ("source", "source"),
                    ("dimensions", "dims"),
                    ("texts_per_s_batched", "texts/s batched"),
                    ("single_text_ms_p50", "one text p50 ms"),
                ],
            ),
            measured(page, "embedding"),
        ]
    r = page.get("retrieval")
    if r:
        parts += [retrieval_section(r, page.get("ingest")), measured(page, "retrieval", "ingest")]
    for name in ("vectors", "resident"):
        p = page.get(name)
        if p:
            parts += [generic(name, p), measured(page, name)]
    return _join(*parts) or _missing("embedding", "retrieval", "vectors", "resident")


def extraction_details(page: Page) -> str:
    p = page.get("extraction")
    if not p:
        return _missing("extraction")
    return _join(extraction_section(p), measured(page, "extraction"))


def gateway_details(page: Page) -> str:
    parts = []
    p = page.get("proxy")
    if p:
        from bench.proxy import section

        parts += [section(p), measured(page, "proxy")]
    g = page.get("gateway")
    if g:
        parts += [
            generic("gateway", g),
            "The older `gateway` stage (`python -m bench --only gateway`): an httpx client "
            "alternating between the fake upstream and memoryd with 1,000 memories, memory "
            "on, per embedder.",
            measured(page, "gateway"),
        ]
    f = page.get("gateway_formats")
    if f:
        parts += [generic("gateway_formats", f), measured(page, "gateway_formats")]
    return _join(*parts) or _missing("proxy", "gateway")


SECTIONS: dict[str, Any] = {
    "machine": machine_section,
    "glance": glance_section,
    "peers": peers_reader,
    "extraction": extraction_reader,
    "gateway": gateway_reader,
    "stores": stores_reader,
    "scale-out": scaleout_reader,
    "latency": latency_reader,
    "abuse": abuse_reader,
    "locomo-details": locomo_details,
    "ablation-details": ablation_details,
    "peers-details": peers_details,
    "latency-details": latency_details,
    "extraction-details": extraction_details,
    "extraction-groups": extraction_groups,
    "profile": profile_section,
    "selfq": selfq_section,
    "gateway-details": gateway_details,
    "load-details": load_details,
}
# the results the reader's page shows (its machine line lists their CPUs)
READER_FILES = (
    "peers",
    "locomo",
    "heldout",
    "extraction",
    "proxy",
    "gateway_formats",
    "stores",
    "stores_gateway",
    "load_scaleout",
    "load",
    "retrieval",
    "ingest",
    "abuse",
)


def fill_named(text: str, page: Page) -> str:
    """Every named region of ``text`` regenerated; an unknown name is left as it is."""

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in SECTIONS:
            return m.group(0)
        body = SECTIONS[name](page).strip("\n")
        # a table's last row needs a blank line after it, or the marker may join the table
        gap = "\n" if body.rsplit("\n", 1)[-1].startswith("|") else ""
        return f"<!-- bench:start {name} -->\n{body}\n{gap}<!-- bench:end {name} -->"

    return NAMED.sub(one, text)


def rewrite(results: Path, docs: Path, plots_dir: Path, plots: Sequence[Path]) -> list[Path]:
    """The ``tables`` stage: the generated regions of ``docs`` and of the pages in the
    folder of the same name beside it (docs/benchmarks/*.md). Returns the pages written."""
    written = []
    if docs.exists() and NAMED.search(docs.read_text()):
        text = docs.read_text()
        new = fill_named(text, Page(results, docs, plots_dir))
        if REGION.search(new):
            new = REGION.sub(lambda _m: generate(results, docs, plots), new, count=1)
        docs.write_text(new)
    else:
        write_region(docs, generate(results, docs, plots))
    written.append(docs)
    folder = docs.with_suffix("")
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        text = path.read_text()
        if NAMED.search(text):
            path.write_text(fill_named(text, Page(results, path, plots_dir)))
            written.append(path)
    return written
