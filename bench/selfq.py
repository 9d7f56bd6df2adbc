"""The ``selfq`` bench stage: questions about the user, through the gateway.

Each persona of ``bench/data/selfq/{split}.jsonl`` (written by a helper who never read
the retrieval code) is one end user of one key. Its messages are sent, in order, through
memoryd with the official ``openai`` client to a fake upstream on loopback (extraction
runs as in production: the rules and the attribute classifier); then each of its
questions is sent the same way and the memory block the upstream received is read. A
self-question succeeds when the block holds one of the fact's ``expect`` strings and
none of its ``absent`` ones (an update's old value); ``captured`` says whether any
current memory of the persona held it at all (capture is the extraction bench's measure,
this one is retrieval's). An overview question scores the share of its four expected
facts in the block. An unrelated question is clean when no memory beyond the always-on
profile rides with it (``x-memoryd-memory-ids`` minus
``x-memoryd-profile-ids``).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

from memoryd.app import create_app
from memoryd.bootstrap import open_engine
from memoryd.config.upstreams import Provider, save_providers
from memoryd.engine import MemoryEngine
from memoryd.engine.asked import QuestionModel
from memoryd.testing import FakeUpstream, serve_asgi

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "data" / "selfq"
MODEL = "chat-model"


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class _Client:
    def __init__(self, engine: MemoryEngine, upstream: FakeUpstream, url: str, key: str) -> None:
        self.engine, self.upstream = engine, upstream
        self.client = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0)

    def send(self, text: str, user: str) -> tuple[str, list[str], list[str]]:
        """The block the upstream received, and the memory and profile ids memoryd sent."""
        raw = self.client.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": text}], user=user
        )
        raw.parse()
        self.engine.drain(timeout=60)
        body = self.upstream.requests[-1]["body"]
        block = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        ids = [i for i in raw.headers.get("x-memoryd-memory-ids", "").split(",") if i]
        profile = [i for i in raw.headers.get("x-memoryd-profile-ids", "").split(",") if i]
        return block, ids, profile


def _has(text: str, needles: list[str]) -> bool:
    low = text.casefold()
    return any(n.casefold() in low for n in needles)


def persona(c: _Client, row: dict[str, Any], owner: str) -> list[dict[str, Any]]:
    """Every question of one persona, with what the block held."""
    user = row["persona"]
    for text in row["say"]:
        c.send(text, user)
    memories = [m.content for m in c.engine.list_memories(owner=owner, user_id=user).data]
    out: list[dict[str, Any]] = []
    for q in row["questions"]:
        block, ids, _ = c.send(q["ask"], user)
        found = [e for e in q["expect"] if _has(block, [e])]
        stale = [a for a in q.get("absent", []) if _has(block, [a])]
        out.append(
            {
                "id": q["id"],
                "kind": "overview" if q["attribute"] == "overview" else "self",
                "attribute": q["attribute"],
                "register": row["register"],
                "update": bool(q.get("absent")),
                "ask": q["ask"],
                "ok": bool(found) and not stale,
                "share": len(found) / len(q["expect"]),
                "stale": stale,
                "captured": any(_has(m, q["expect"]) for m in memories)
                and not (q.get("absent") and all(_has(m, q["absent"]) for m in memories)),
                "carried": len(ids),
            }
        )
    for text in row.get("unrelated", []):
        block, ids, profile = c.send(text, user)
        extra = [i for i in ids if i not in profile]
        out.append(
            {
                "id": f"{user}-u",
                "kind": "unrelated",
                "register": row["register"],
                "ask": text,
                "ok": not extra,
                "carried": len(extra),
            }
        )
    return out


def _share(rows: list[dict[str, Any]], key: str = "ok") -> float:
    return round(sum(bool(r[key]) for r in rows) / len(rows), 3) if rows else 0.0


def summarize(results: list[dict[str, Any]], split: str) -> dict[str, Any]:
    selfq = [r for r in results if r["kind"] == "self"]
    captured = [r for r in selfq if r["captured"]]
    updates = [r for r in selfq if r["update"]]
    overview = [r for r in results if r["kind"] == "overview"]
    unrelated = [r for r in results if r["kind"] == "unrelated"]
    groups: dict[str, dict[str, list[dict[str, Any]]]] = {"attribute": {}, "register": {}}
    for r in selfq:
        groups["attribute"].setdefault(r["attribute"], []).append(r)
        groups["register"].setdefault(r["register"], []).append(r)
    return {
        "split": split,
        "self_questions": len(selfq),
        "attributes": len(groups["attribute"]),
        "asked_fact_in_block": _share(selfq),
        "captured": _share(selfq, "captured"),
        "in_block_when_captured": _share(captured),
        "updates": len(updates),
        "update_new_without_old": _share(updates),
        "overview_questions": len(overview),
        "overview_facts_in_block": round(sum(r["share"] for r in overview) / len(overview), 3)
        if overview
        else 0.0,
        "unrelated_questions": len(unrelated),
        "unrelated_clean": _share(unrelated),
        "memories_per_self_question": round(sum(r["carried"] for r in selfq) / len(selfq), 2)
        if selfq
        else 0.0,
        "per_attribute": {
            k: {"n": len(v), "ok": _share(v), "captured": _share(v, "captured")}
            for k, v in sorted(groups["attribute"].items())
        },
        "per_register": {
            k: {"n": len(v), "ok": _share(v), "captured": _share(v, "captured")}
            for k, v in sorted(groups["register"].items())
        },
        "misses": [r for r in selfq if not r["ok"]],
    }


def run_split(
    split: str, progress: Callable[[str], None] | None = None, *, questions: bool = True
) -> dict[str, Any]:
    """One split through a fresh gateway; ``questions=False`` answers by search alone
    (the question classifier absent: what memoryd did before it had one)."""
    rows = _load(DATA / f"{split}.jsonl")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memoryd-selfq-") as tmp:
        engine = open_engine(data_dir=tmp)
        upstream = FakeUpstream()
        try:
            engine.settings.update({"strategy": "hybrid"})
            if not questions:
                engine.retriever.questions = QuestionModel(Path(tmp) / "absent.npz")
            with serve_asgi(upstream.app) as upstream_url:
                save_providers(engine.store, [Provider("default", f"{upstream_url}/v1", "x")])
                record, secret = engine.keys.create("selfq")
                with serve_asgi(create_app(engine, admin_token="selfq-admin-token-0000")) as url:
                    client = _Client(engine, upstream, url, secret)
                    results: list[dict[str, Any]] = []
                    for row in rows:
                        results += persona(client, row, record.id)
                        upstream.requests.clear()
                    client.client.close()
        finally:
            engine.close()
    out = summarize(results, split)
    out["mode"] = "classifier" if questions else "search alone"
    out["elapsed_s"] = round(time.perf_counter() - started, 1)
    if progress:
        progress(
            f"selfq {split}: asked fact in block {out['asked_fact_in_block']} "
            f"(captured {out['captured']}), updates {out['update_new_without_old']}, "
            f"overview {out['overview_facts_in_block']}, unrelated clean {out['unrelated_clean']}"
        )
    return out


def run(
    splits: tuple[str, ...] = ("dev", "test", "test2"),
    progress: Callable[[str], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each split by search alone (as before the question classifier) and with the
    question classifier, then the relevance floor's own bench, in one run."""
    from bench import relevance
    from memoryd.config.settings import RELEVANCE_FLOOR

    detail: dict[str, Any] = {
        "splits": [run_split(s, progress, questions=q) for s in splits for q in (False, True)]
    }
    floor = relevance.run(floors=(RELEVANCE_FLOOR,), progress=progress)
    detail["relevance"] = floor
    every = next(r for r in floor if r["split"] == "all")
    rows = [
        {
            "split": s["split"],
            "mode": s["mode"],
            "self-questions": s["self_questions"],
            "asked fact in block": s["asked_fact_in_block"],
            "captured": s["captured"],
            "in block when captured": s["in_block_when_captured"],
            "update: new, not old": s["update_new_without_old"],
            "overview facts": s["overview_facts_in_block"],
            "unrelated clean": s["unrelated_clean"],
            "relevance bench: unrelated injecting": every["unrelated_injecting"],
        }
        for s in detail["splits"]
    ]
    return rows, detail


if __name__ == "__main__":
    import sys

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    for s in args or ["dev"]:
        found = run_split(s, print, questions="--search-alone" not in sys.argv)
        if "--misses" in sys.argv:
            for miss in found["misses"]:
                print(json.dumps(miss))
