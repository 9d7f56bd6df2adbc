"""The ``relevance`` bench stage: the per-hit relevance floor.

Every owner of ``bench/data/relevance`` is stored in a throwaway engine with the default
install's embedder (all-MiniLM-L6-v2), and every query is previewed with the default
hybrid strategy at several floors (``relevanceFloor``; 0 = off, what memoryd did
before). Per floor and split (``calibrate``: the floor is chosen there; ``check``: only
measured): the share of unrelated queries that inject anything (all of them, and
without the ``tricky`` ones that share a word with a memory), the share of related
queries whose memory is injected, memory recall and precision.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.bootstrap import open_engine
from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "bench" / "data" / "relevance"
FLOORS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3)


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run(
    data: Path = DEFAULT_DATA,
    floors: tuple[float, ...] = FLOORS,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    owners = _load(data / "owners.jsonl")
    queries = _load(data / "queries.jsonl")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memoryd-relevance-") as tmp:
        engine = open_engine(data_dir=tmp)
        try:
            for owner in owners:
                engine.create_many(
                    NewMemory(owner["owner"], m["content"], key=m["key"]) for m in owner["memories"]
                )
            engine.drain(timeout=600)
            model = engine.preview(owners[0]["owner"], "x").resolution.embedding_model
            if progress:
                progress(f"relevance: {len(queries)} queries, embedder {model}")
            for floor in floors:
                engine.settings.update({"relevanceFloor": floor})
                for split in ("calibrate", "check", "all"):
                    chosen = [q for q in queries if split == "all" or q["split"] == split]
                    rows.append({"floor": floor, "split": split, **_score(engine, chosen)})
        finally:
            engine.close()
    return rows


def _score(engine: MemoryEngine, queries: list[dict[str, Any]]) -> dict[str, Any]:
    unrelated = inject = plain = plain_inject = related = found = tp = fn = fp = 0
    for q in queries:
        hits = engine.preview(q["owner"], q["query"], max_tokens=16000).hits
        keys = [h.memory.key for h in hits]
        wanted = set(q["relevant"])
        fp += sum(k not in wanted for k in keys)
        if not wanted:
            unrelated += 1
            inject += bool(keys)
            if not q.get("tricky"):
                plain += 1
                plain_inject += bool(keys)
            continue
        related += 1
        hit = len(wanted & set(keys))
        found += hit > 0
        tp += hit
        fn += len(wanted) - hit
    return {
        "queries": len(queries),
        "unrelated_injecting": round(inject / max(1, unrelated), 3),
        "plain_unrelated_injecting": round(plain_inject / max(1, plain), 3),
        "related_served": round(found / max(1, related), 3),
        "memory_recall": round(tp / max(1, tp + fn), 3),
        "precision": round(tp / max(1, tp + fp), 3),
    }
