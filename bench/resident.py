"""The ``resident`` bench stage: large owners searched in memory against the SQL search.

One LoCoMo ingest (the default MiniLM when installed, else the static model), every
evaluated question asked twice on the same engine: with every owner searched through
its resident copy (``min_rows`` 1) and with none (budget 0, sqlite-vec's SQL). The
copy claims to be exact, so the vector leg's top 10 must match the SQL search's, and
recall must not move; the table says how close each came. The latency at 10k and 100k
memories is the retrieval stage's.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memoryd.eval import locomo as ev

KS = (5, 10, 25)


def _ask(engine: Any, conv: Any, question: Any, strategy: str) -> tuple[list[str], float]:
    ranked, _, _, ms = ev.ask(engine, conv, question, strategy, max(KS))
    return ranked, ms


def run(data: Path, progress: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    embedder = ev.transformers_embedder() or ev.static_embedder(
        Path.home() / ".cache" / "memoryd" / "static"
    )
    if embedder is None:
        raise RuntimeError("no embedding source: the resident stage compares vector searches")
    return compare(ev.load_conversations(data), embedder, progress)


def compare(
    conversations: list[ev.Conversation], embedder: ev.EvalEmbedder, progress: Any
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every question through both searches on one ingest: rows per strategy and search."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memoryd-resident-") as tmp:
        data_dir = Path(tmp) / "data"
        engine = ev.open_eval_engine(data_dir, embedder, ev.eval_config(data_dir))
        try:
            progress(f"resident: ingesting LoCoMo ({embedder.name})")
            started = time.perf_counter()
            ev.ingest(engine, conversations, ev.turn_with_context)
            engine.drain(timeout=3600)
            progress(f"resident: ingested in {time.perf_counter() - started:.0f} s")
            store = engine.indexer.store if engine.indexer is not None else None
            resident = getattr(store, "resident", None)
            if resident is None:
                raise RuntimeError("the vector store has no resident copies (int8 or PostgreSQL)")
            for strategy in ("semantic", "hybrid"):
                runs: dict[str, Any] = {}
                for mode, min_rows, budget in (("sql", 0, 0), ("resident", 1, 1024 * 2**20)):
                    resident.min_rows, resident.budget_bytes = min_rows, budget
                    resident.forget()
                    result = ev.StrategyResult(KS)
                    ranked_all, times = [], []
                    for conv in conversations:
                        for question in ev.evaluated(conv):
                            ranked, ms = _ask(engine, conv, question, strategy)
                            result.add(question, ranked, [0] * len(ranked))
                            ranked_all.append(ranked)
                            times.append(ms)
                    runs[mode] = (result.to_dict(), ranked_all, times)
                    progress(f"resident: {strategy} via {mode} done")
                pairs = list(zip(runs["sql"][1], runs["resident"][1], strict=True))
                # (sets: two turns can share an evidence id; nothing found twice agrees)
                overlap = [
                    len(set(a[:10]) & set(b[:10])) / len(set(a[:10])) if a else float(not b)
                    for a, b in pairs
                ]
                identical = sum(a[:10] == b[:10] for a, b in pairs)
                for mode in ("sql", "resident"):
                    summary, _, times = runs[mode]
                    rows.append(
                        {
                            "strategy": strategy,
                            "search": mode,
                            **{f"R@{k}": summary["recall"][str(k)] for k in KS},
                            "top10_overlap_with_sql": round(statistics.fmean(overlap), 4)
                            if mode == "resident"
                            else 1.0,
                            "identical_top10": round(identical / len(overlap), 4)
                            if mode == "resident"
                            else 1.0,
                            "p50_ms": round(statistics.median(times), 2),
                        }
                    )
            stats = resident.stats()
        finally:
            engine.close()
    return rows, {"embedder": embedder.name, "resident": stats}
