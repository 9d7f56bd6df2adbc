"""What context-aware indexing costs, at ingest and at query time.

``python -m bench.context_cost [--data DIR]``: the LoCoMo conversations are ingested
into fresh engines, with the default local embedder (MiniLM) and without an embedder
(keyword only): with the context field and the second vector
(``MEMORY_CONTEXT_VECTOR_WEIGHT=0.35``), with the field only (the default), and with
neither (``MEMORY_CONTEXT_FIELD_WEIGHT=0``): ingest seconds
(every vector stored), the database's size, and the p50/p95 of every question's
search. Writes ``bench/results/context_cost.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.locomo import DEFAULT_DATA
from bench.output import write
from memoryd.eval import locomo
from memoryd.eval.metrics import latency_summary

OFF = {"context_vector_weight": 0.0, "context_field_weight": 0.0}
VECTOR = {"context_vector_weight": 0.35}


def measure(
    conversations: list[locomo.Conversation],
    embedder: locomo.EvalEmbedder,
    overrides: dict[str, float],
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memoryd-context-cost-") as tmp:
        data_dir = Path(tmp) / "data"
        config = locomo.eval_config(data_dir, **overrides)
        engine = locomo.open_eval_engine(data_dir, embedder, config)
        try:
            started = time.perf_counter()
            turns = locomo.ingest(engine, conversations, locomo.turn_with_context)
            engine.drain(timeout=3600)
            ingest_s = time.perf_counter() - started
            size = sum(p.stat().st_size for p in data_dir.glob("memoryd.db*"))
            latencies = []
            for conv in conversations:
                for question in locomo.evaluated(conv):
                    latencies.append(locomo.ask(engine, conv, question, "hybrid", 25)[3])
        finally:
            engine.close()
    summary = latency_summary(latencies)
    return {
        "turns": turns,
        "ingest_s": round(ingest_s, 1),
        "turns_per_s": round(turns / ingest_s, 1),
        "db_mb": round(size / 1e6, 1),
        "search_p50_ms": summary["p50"],
        "search_p95_ms": summary["p95"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.context_cost", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    conversations = locomo.load_conversations(args.data)
    minilm = locomo.transformers_embedder()
    if minilm is None:
        raise SystemExit("the local MiniLM is not installed")
    runs = [
        ("MiniLM", minilm, "context field and second vector", VECTOR),
        ("MiniLM", minilm, "context field (default)", {}),
        ("MiniLM", minilm, "off", OFF),
        ("keyword only", locomo.no_embedder(), "context field (default)", {}),
        ("keyword only", locomo.no_embedder(), "off", OFF),
    ]
    rows = []
    for name, embedder, label, overrides in runs:
        row = {"embedder": name, "context indexing": label}
        rows.append(row | measure(conversations, embedder, overrides))
        print(rows[-1], flush=True)
    write("context_cost", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
