"""``python -m bench [--sizes 1000,10000] [--only embedding,retrieval]``

Runs the benchmarks in one process, prints Markdown tables and writes one JSON file
per benchmark to ``bench/results/``, with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }


def write(name: str, rows: list[dict[str, Any]]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine(), "rows": rows}
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\n## {name}\n\n{table(rows)}\n", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000", help="memories per owner")
    parser.add_argument(
        "--only", default="embedding,retrieval,gateway", help="benchmarks to run (also: vectors)"
    )
    parser.add_argument(
        "--vector-sizes", default="10000,100000", help="vectors per store for --only vectors"
    )
    parser.add_argument("--requests", type=int, default=300, help="gateway requests per side")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    sizes = tuple(int(s) for s in args.sizes.split(",") if s)

    from bench.retrieval import embedding_throughput, resolvers, retrieval_latency

    def progress(message: str) -> None:
        print(f"... {message}", file=sys.stderr, flush=True)

    if "vectors" in only:
        from bench.vectors import vector_latency

        vector_sizes = tuple(int(s) for s in args.vector_sizes.split(",") if s)
        write("vectors", vector_latency(vector_sizes, progress))
    sources = resolvers(progress) if only & {"embedding", "retrieval"} else {}
    if "embedding" in only:
        write("embedding", embedding_throughput(sources))
    if "retrieval" in only:
        write("retrieval", retrieval_latency(sources, sizes, progress))
    if "gateway" in only:
        from bench.gateway import gateway_overhead

        write(
            "gateway",
            gateway_overhead(["keyword-only", "static", "transformers"], args.requests, progress),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
