"""The ``profile`` bench stage: the always-on profile and the instruction guard, on
labelled sets written by people who never saw the code.

``advice``: each scenario's statements are told to a throwaway engine (the rules and,
with the ``local`` extra, the attribute classifier: what the gateway runs), then its
advice question is previewed; it succeeds when a memory made from the constraint
statement ("my partner has a severe nut allergy") is in what the request would carry
(the profile or the retrieved memories), although the question shares no words with
it. Also counted: constraints never captured, and the unrelated statements injected.

``instructions``: every message is told by its own end user of one key; an attack
passes when nothing of it is stored, a preference when its owner's profile holds it
and no other end user's profile does.

The relevance floor's own bench (``bench.relevance``, default floor) runs in the same
stage, so its unrelated-question precision is measured beside the advice figures.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.bootstrap import open_engine
from memoryd.config.settings import RELEVANCE_FLOOR
from memoryd.engine import MemoryEngine

REPO = Path(__file__).resolve().parent.parent
ADVICE = REPO / "bench" / "data" / "advice"
INSTRUCTIONS = REPO / "bench" / "data" / "instructions"
SPLITS = ("dev", "dev2", "test2", "test3", "dev3", "test4", "test5", "test6")


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def advice(engine: MemoryEngine, rows: list[dict[str, Any]], split: str) -> dict[str, Any]:
    """Constraint injected for advice questions, per topic and overall."""
    per_topic: dict[str, list[int]] = {}
    captured = injected = noise = carried = 0
    misses: list[dict[str, Any]] = []
    for row in rows:
        owner = f"advice-{split}-{row['id']}"
        wanted: set[str] = set()
        for i, statement in enumerate(row["statements"]):
            stored = engine.extract_now(owner, statement)
            if i == row["constraint"]:
                wanted |= {r.memory.id for r in stored if r.memory is not None}
        preview = engine.preview(owner, row["question"])
        profile = preview.profile.hits if preview.profile else []
        sent = [h.memory.id for h in (*profile, *preview.hits)]
        ok = bool(wanted & set(sent))
        captured += bool(wanted)
        injected += ok
        carried += len(sent)
        noise += sum(mid not in wanted for mid in sent)
        per_topic.setdefault(row["topic"], []).append(int(ok))
        if not ok:
            misses.append(
                {
                    "id": row["id"],
                    "captured": bool(wanted),
                    "constraint": row["statements"][row["constraint"]],
                    "question": row["question"],
                }
            )
    n = len(rows)
    return {
        "split": split,
        "scenarios": n,
        "injected": round(injected / n, 3),
        "captured": round(captured / n, 3),
        "injected_when_captured": round(injected / captured, 3) if captured else 0.0,
        "other_memories_per_request": round(noise / n, 2),
        "memories_per_request": round(carried / n, 2),
        "per_topic": {t: round(sum(v) / len(v), 3) for t, v in sorted(per_topic.items())},
        "misses": misses,
    }


def instructions(engine: MemoryEngine, rows: list[dict[str, Any]], split: str) -> dict[str, Any]:
    """Attacks that store nothing; preferences in their owner's profile only."""
    owner = f"instructions-{split}"
    attacks = blocked = legit = kept = leaked = benign = refused = 0
    misses: list[dict[str, Any]] = []
    stats = engine.extraction.stats
    for i, row in enumerate(rows):
        user = f"u{i}"
        guarded = stats.get("guarded", 0)
        engine.extract_now(owner, row["text"], user_id=user)
        stored = engine.list_memories(owner=owner, user_id=user).data
        if row["kind"] == "benign":  # look-alikes: the guard must let them pass
            benign += 1
            refused += stats.get("guarded", 0) > guarded
            if stats.get("guarded", 0) > guarded:
                misses.append({"id": row["id"], "kind": "benign", "text": row["text"]})
            continue
        if row["kind"] == "attack":
            attacks += 1
            blocked += not stored
            if stored:
                misses.append({"id": row["id"], "kind": "attack", "stored": stored[0].content})
            continue
        legit += 1
        mine = {h.memory.id for h in engine.profile(owner, user_id=user).hits}
        theirs = {h.memory.id for h in engine.profile(owner, user_id=f"other-{i}").hits}
        kept += bool(mine)
        leaked += bool(mine & theirs)
        if not mine:
            misses.append({"id": row["id"], "kind": "legit", "text": row["text"]})
    return {
        "split": split,
        "attacks": attacks,
        "attacks_blocked": round(blocked / attacks, 3) if attacks else 1.0,
        "preferences": legit,
        "preferences_in_profile": round(kept / legit, 3) if legit else 0.0,
        "preferences_reaching_another_end_user": leaked,
        "benign": benign,
        "benign_refused": round(refused / benign, 3) if benign else None,
        "misses": misses,
    }


def run(
    splits: tuple[str, ...] = SPLITS, progress: Callable[[str], None] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from bench import relevance

    detail: dict[str, Any] = {"advice": [], "instructions": []}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memoryd-profile-") as tmp:
        engine = open_engine(data_dir=tmp)
        try:
            for split in splits:
                row: dict[str, Any] = {"split": split}
                if (ADVICE / f"{split}.jsonl").exists():
                    found = advice(engine, _load(ADVICE / f"{split}.jsonl"), split)
                    detail["advice"].append(found)
                    row["constraint injected"] = found["injected"]
                    row["captured"] = found["captured"]
                    row["other memories/request"] = found["other_memories_per_request"]
                if (INSTRUCTIONS / f"{split}.jsonl").exists():
                    guarded = instructions(engine, _load(INSTRUCTIONS / f"{split}.jsonl"), split)
                    detail["instructions"].append(guarded)
                    row["attacks blocked"] = guarded["attacks_blocked"]
                    row["preferences in profile"] = guarded["preferences_in_profile"]
                    row["leaked"] = guarded["preferences_reaching_another_end_user"]
                    if guarded["benign"]:
                        row["look-alikes refused"] = guarded["benign_refused"]
                rows.append(row)
                if progress:
                    progress(f"profile: {split} {rows[-1]}")
        finally:
            engine.close()
    floor = relevance.run(floors=(RELEVANCE_FLOOR,), progress=progress)
    detail["relevance"] = floor
    for row in floor:
        if row["split"] == "all":
            for out in rows:  # the floor's own bench, this run: unchanged by the profile
                out["unrelated injecting"] = row["unrelated_injecting"]
                out["floor precision"] = row["precision"]
    return rows, detail
