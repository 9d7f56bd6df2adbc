"""Optional remote rerank: applied when configured, fail-open when the provider fails."""

from __future__ import annotations

from typing import Any

from memoryd.config.upstreams import Provider, save_providers
from memoryd.engine import MemoryEngine
from tests.conftest import add
from tests.fakes import http_server


def _reverse(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    docs = body["documents"]
    results = [
        {"index": i, "relevance_score": 0.9 - 0.1 * rank}
        for rank, i in enumerate(reversed(range(len(docs))))
    ]
    return 200, {"results": results}


def _memories(engine: MemoryEngine) -> None:
    for text in ("kiwi fruit salad", "kiwi fruit", "kiwi"):
        add(engine, "alice", text)


def _setup(engine: MemoryEngine, base_url: str) -> None:
    if not engine.list_memories(owner="alice").total:
        _memories(engine)
    save_providers(engine.store, [Provider("rr", base_url + "/v1", "secret")])
    engine.settings.update({"rerankEnabled": True, "rerankProviderModel": "rr/rerank-1"})


def test_rerank_reorders_and_marks_the_resolution(engine: MemoryEngine) -> None:
    _memories(engine)
    plain = [
        h.memory.content for h in engine.preview("alice", "kiwi fruit", strategy="hybrid").hits
    ]
    assert len(plain) == 3
    with http_server(_reverse) as (base, received):
        _setup(engine, base)
        preview = engine.preview("alice", "kiwi fruit", strategy="hybrid")
    assert preview.resolution.rerank_applied is True
    order = [h.memory.content for h in preview.hits]
    assert order == list(reversed(plain))
    assert preview.hits[0].score == 0.9
    request = received[0]
    assert request["path"] == "/v1/rerank"
    assert request["body"]["model"] == "rerank-1"
    assert request["body"]["query"] == "kiwi fruit"
    assert request["headers"]["Authorization"] == "Bearer secret"


def test_rerank_fails_open(engine: MemoryEngine) -> None:
    with http_server(lambda path, body: (500, {"error": "boom"})) as (base, _):
        _setup(engine, base)
        preview = engine.preview("alice", "kiwi fruit", strategy="hybrid")
        hits = engine.retrieve("alice", "kiwi fruit", strategy="hybrid")
    assert preview.resolution.rerank_applied is False
    assert "HTTP 500" in (preview.resolution.fallback_reason or "")
    assert len(preview.hits) == 3
    assert len(hits) == 3


def test_rerank_unreachable_and_unconfigured_provider(engine: MemoryEngine) -> None:
    _setup(engine, "http://127.0.0.1:9")  # nothing listens on the discard port
    preview = engine.preview("alice", "kiwi fruit")
    assert preview.resolution.rerank_applied is False
    assert len(preview.hits) == 3
    engine.settings.update({"rerankProviderModel": "nobody/model"})
    preview = engine.preview("alice", "kiwi fruit")
    assert "not configured" in (preview.resolution.fallback_reason or "")
    assert len(preview.hits) == 3
