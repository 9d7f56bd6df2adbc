"""Seed API compatibility where it costs no safety: calls an OmniRoute client
or script makes that memoryd refused, each through the real app (in process) on a real
SQLite file."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoryd.app import create_app
from memoryd.config import EngineConfig, inert_variables
from memoryd.config.upstreams import Provider, save_providers
from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory, utcnow
from memoryd.testing import FakeUpstream, serve_asgi
from tests.cli.test_cli_keys_by_name import ok
from tests.conftest import ADMIN, add, make_engine
from tests.embedders import fixed_resolver
from tests.engine.test_doctor import base_env, doctor
from tests.server.test_server import spawn

__all__ = ["spawn"]  # the fixture, shared with tests/server/test_server.py

# -- summarize without apiKeyId: every owner, each apart -------------------------------


def test_summarize_without_an_owner_does_each_owner_apart(
    client: Any, engine: MemoryEngine
) -> None:
    old = utcnow() - timedelta(days=40)
    a1 = add(engine, "owner-a", "Alpha likes tea.", created_at=old)
    a2 = add(engine, "owner-a", "Alpha lives in Oslo.", created_at=old)
    b1 = add(engine, "owner-b", "Beta drives a van.", created_at=old)
    fresh = add(engine, "owner-c", "Gamma is new here.")

    dry = client.post("/api/memory/summarize", json={"olderThanDays": 30, "dryRun": True})
    assert dry.status_code == 200, dry.text
    preview = dry.json()
    assert (preview["dryRun"], preview["deletedCount"], preview["summaryId"]) == (True, 0, None)
    assert {(c["apiKeyId"], c["id"]) for c in preview["candidates"]} == {
        ("owner-a", a1.id), ("owner-a", a2.id), ("owner-b", b1.id),
    }  # fmt: skip
    assert [(o["apiKeyId"], o["candidates"], o["deletedCount"]) for o in preview["owners"]] == [
        ("owner-a", 2, 0), ("owner-b", 1, 0),
    ]  # fmt: skip
    assert all(engine.get(m.id) is not None for m in (a1, a2, b1))

    done = client.post("/api/memory/summarize", json={"olderThanDays": 30}).json()
    assert done["dryRun"] is False
    assert done["deletedCount"] == 3
    by_owner = {o["apiKeyId"]: o for o in done["owners"]}
    assert set(by_owner) == {"owner-a", "owner-b"}
    assert by_owner["owner-a"]["deletedCount"] == 2
    assert by_owner["owner-b"]["deletedCount"] == 1
    assert (
        done["summaryIds"] == by_owner["owner-a"]["summaryIds"] + by_owner["owner-b"]["summaryIds"]
    )
    assert done["summaryId"] == done["summaryIds"][0]
    for owner, entry in by_owner.items():  # never merged: each summary is its owner's
        (summary_id,) = entry["summaryIds"]
        summary = engine.get(summary_id)
        assert summary is not None
        assert summary.api_key_id == owner
        assert ("Beta" in summary.content) == (owner == "owner-b")
        assert ("Alpha" in summary.content) == (owner == "owner-a")
    assert all(engine.get(m.id) is None for m in (a1, a2, b1))
    assert engine.get(fresh.id) is not None


def test_summarize_one_owner_says_so_in_owners(client: Any, engine: MemoryEngine) -> None:
    add(engine, "owner-a", "Alpha likes tea.", created_at=utcnow() - timedelta(days=40))
    add(engine, "owner-b", "Beta drives a van.", created_at=utcnow() - timedelta(days=40))
    done = client.post("/api/memory/summarize", json={"apiKeyId": "owner-a"}).json()
    assert [(o["apiKeyId"], o["deletedCount"]) for o in done["owners"]] == [("owner-a", 1)]
    nothing = client.post("/api/memory/summarize", json={"apiKeyId": "owner-c"}).json()
    assert (nothing["owners"], nothing["candidates"]) == ([], [])


def test_summarize_refuses_an_end_user_without_its_key_and_an_empty_owner(
    client: Any, engine: MemoryEngine
) -> None:
    old = add(engine, "owner-a", "Alpha likes tea.", created_at=utcnow() - timedelta(days=40))
    for body in ({"userId": "u1"}, {"apiKeyId": ""}, {"olderThanDays": 0}):
        response = client.post("/api/memory/summarize", json=body)
        assert response.status_code == 400, (body, response.text)
    said = client.post("/api/memory/summarize", json={"userId": "u1"}).json()["error"]
    assert said["message"] == "userId needs apiKeyId: an end user belongs to one key"
    assert engine.get(old.id) is not None


# -- Qdrant settings: OmniRoute's embeddingModel kept, and what memoryd embeds with ----


@pytest.fixture
def semantic_client(semantic_engine: MemoryEngine) -> Iterator[Any]:
    """The real app over an engine with a (test) embedder, admin-authenticated."""
    app = create_app(semantic_engine, admin_token=ADMIN)
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        yield http


def test_qdrant_keeps_omniroutes_embedding_model_and_names_the_one_in_use(
    semantic_client: Any, semantic_engine: MemoryEngine
) -> None:
    """The body OmniRoute's dashboard sends (its qdrant-routes test) is accepted; the
    field is shown back, and ``embeddingModelInUse`` says what memoryd embeds with."""
    before = semantic_engine.embeddings.resolution()  # type: ignore[union-attr]
    body = {
        "enabled": False,
        "host": "qdrant-server",
        "port": 6333,
        "collection": "test-collection",
        "embeddingModel": "openai/text-embedding-3-small",
    }
    response = semantic_client.put("/api/settings/qdrant", json=body)
    assert response.status_code == 200, response.text
    shown = response.json()
    assert shown["embeddingModel"] == "openai/text-embedding-3-small"
    assert shown["embeddingModelInUse"] == f"{before.source}/{before.model}"
    again = semantic_client.get("/api/settings/qdrant").json()
    assert again["embeddingModel"] == "openai/text-embedding-3-small"
    assert again["embeddingModelInUse"] == shown["embeddingModelInUse"]
    # It chooses nothing: the memory embedder and its settings are as they were.
    assert semantic_engine.embeddings.resolution() == before  # type: ignore[union-attr]
    assert semantic_engine.settings.get().embedding_provider_model is None
    # "" and null remove it, as for the other optional fields.
    for cleared in ("", None):
        semantic_client.put("/api/settings/qdrant", json={"embeddingModel": "x/y"})
        gone = semantic_client.put("/api/settings/qdrant", json={"embeddingModel": cleared})
        assert gone.json()["embeddingModel"] is None


def test_qdrant_names_a_remote_embedder_as_provider_and_model(
    client: Any, engine: MemoryEngine
) -> None:
    """Without any embedder it says none; with a remote one its ``provider/model``."""
    assert client.get("/api/settings/qdrant").json()["embeddingModelInUse"] is None
    semantic = make_engine(engine.config.data_dir / "remote", resolver=None)
    try:
        semantic.settings.update(
            {"embeddingSource": "remote", "embeddingProviderModel": "up/nomic-embed-text"}
        )
        save_providers(semantic.store, [Provider("up", "http://127.0.0.1:9/v1", "k")])
        app = create_app(semantic, admin_token=ADMIN)
        with TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
            shown = http.get("/api/settings/qdrant").json()
        assert shown["embeddingModelInUse"] == "up/nomic-embed-text"
    finally:
        semantic.close()


# -- import: one JSON array as well as JSON Lines ----------------------------------------


def test_rest_import_takes_a_json_array(client: Any, engine: MemoryEngine) -> None:
    items = [
        {"content": "User likes green tea.", "key": "preference:tea"},
        {"content": "User lives in Oslo.", "key": "fact:home", "type": "factual"},
        {"content": "User chose Postgres.", "key": "decision:db", "type": "episodic"},
    ]
    response = client.post(
        "/api/memory/import",
        params={"apiKeyId": "owner-a"},
        content=json.dumps(items, indent=2),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"imported": 3, "updated": 0, "skipped": 0, "errors": []}
    stored = {m.key: m.content for m in engine.list_memories(owner="owner-a").data}
    assert stored == {i["key"]: i["content"] for i in items}
    again = client.post("/api/memory/import?apiKeyId=owner-a", json=items).json()
    assert (again["imported"], again["skipped"]) == (0, 3)  # idempotent, as JSON Lines are
    assert client.post("/api/memory/import?apiKeyId=owner-a", content=b"  [ ]\n").json() == {
        "imported": 0, "updated": 0, "skipped": 0, "errors": [],
    }  # fmt: skip


def test_bad_items_are_named_by_item_and_line_and_the_rest_imported(
    client: Any, engine: MemoryEngine
) -> None:
    deep: Any = "x"
    for _ in range(70):
        deep = {"d": deep}
    body = "\n".join(
        [
            "",  # a blank first line: lines count from the start of the body
            "[",
            '  {"content": "User likes green tea.", "key": "a"},',
            '  "not an object",',
            '  {"content": "User likes jazz.", "key": "b", "type": "bogus"},',
            f'  {{"content": "Too deep.", "key": "c", "metadata": {json.dumps(deep)}}},',
            '  {"content": "User lives in Oslo.", "key": "d"}',
            "]",
        ]
    )
    result = client.post("/api/memory/import?apiKeyId=owner-a", content=body).json()
    assert result["imported"] == 2
    assert [(e["item"], e["line"]) for e in result["errors"]] == [(2, 4), (3, 5), (4, 6)]
    messages = [e["message"] for e in result["errors"]]
    assert messages[0] == "not a JSON object"
    assert "unknown type 'bogus'" in messages[1]
    assert "nested deeper than 64 levels" in messages[2]
    assert sorted(m.key for m in engine.list_memories(owner="owner-a").data) == ["a", "d"]


def test_a_broken_array_imports_nothing_and_says_where(client: Any, engine: MemoryEngine) -> None:
    for body, line in (
        ('[\n {"content": "User likes tea.", "key": "a"}\n {"content": "x", "key": "b"}\n]', 3),
        ('[\n {"content": "User likes tea.", "key": "a"}\n]\n{"content": "x"}', 4),
        ('[\n {"content": "User likes tea.", "key": "a"},\n', 2),  # ends early
    ):
        result = client.post("/api/memory/import?apiKeyId=owner-a", content=body).json()
        assert result["imported"] == 0, body
        (error,) = result["errors"]
        assert error["line"] == line, (body, error)
        assert "item" not in error
        assert error["message"].startswith("invalid JSON array")
    assert engine.list_memories(owner="owner-a").total == 0


def test_a_json_array_over_the_limit_is_one_error(engine: MemoryEngine) -> None:
    """The REST body limit stops such a body before; a file goes through this check."""
    chunk = b'"' + b"x" * (1 << 20) + b'",\n'
    lines = itertools.chain([b"[\n"], itertools.repeat(chunk, 65), [b'""]\n'])
    result = engine.import_jsonl(lines, owner="owner-a")
    assert result.imported == 0
    assert result.errors == [
        {"line": 1, "message": f"a JSON array over {64 * 1024 * 1024} bytes: send JSON Lines"}
    ]


def test_the_cli_imports_a_json_array_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = tmp_path / "memories.json"
    items = [
        {"apiKeyId": "owner-a", "content": "User likes green tea.", "key": "preference:tea"},
        {"apiKeyId": "owner-b", "content": "User lives in Oslo.", "key": "fact:home"},
    ]
    source.write_text(json.dumps(items, indent=2))
    result = ok(data, "import", str(source))
    assert (result["imported"], result["errors"]) == (2, [])
    listed = ok(data, "memory", "list", "-k", "owner-b")
    assert [m["content"] for m in listed["data"]] == ["User lives in Oslo."]


# -- MEMORY_RRF_K: said at start when it does nothing ------------------------------------


def test_rrf_k_without_rrf_fusion_is_named_with_the_fusion_in_use() -> None:
    (line,) = inert_variables({"MEMORY_RRF_K": "60"})
    assert line.startswith("MEMORY_RRF_K does nothing")
    assert "MEMORY_FUSION=zscore" in line  # the default, named
    assert "set MEMORY_FUSION=rrf" in line
    (score,) = inert_variables({"MEMORY_RRF_K": "30", "MEMORY_FUSION": "score"})
    assert "MEMORY_FUSION=score" in score
    assert inert_variables({"MEMORY_RRF_K": "30", "MEMORY_FUSION": "RRF"}) == []
    assert inert_variables({"MEMORY_FUSION": "zscore"}) == []
    assert inert_variables({"MEMORY_RRF_K": " "}) == []


def test_rrf_k_is_honoured_under_rrf(tmp_path: Path) -> None:
    """Where it acts, it is the config's k; elsewhere the config keeps the default
    ranking (the warning above says so)."""
    rrf = EngineConfig.from_env({"MEMORY_RRF_K": "30", "MEMORY_FUSION": "rrf"}, data_dir=tmp_path)
    assert (rrf.fusion, rrf.rrf_k) == ("rrf", 30)
    moved = EngineConfig.from_env({"MEMORY_RRF_K": "30"}, data_dir=tmp_path)
    assert moved.fusion == "zscore"


def test_serve_and_doctor_say_rrf_k_does_nothing(spawn: Any, tmp_path: Path) -> None:
    server = spawn(MEMORY_RRF_K="45")
    server.wait_ready()
    assert "MEMORY_RRF_K does nothing" in server.stderr
    assert "MEMORY_FUSION=zscore" in server.stderr
    check = doctor(tmp_path / "doc", env=base_env(MEMORY_RRF_K="45")).checks["environment"]
    assert check["status"] == "warn"
    assert "MEMORY_RRF_K does nothing" in check["detail"]
    both = doctor(tmp_path / "doc", env=base_env(MEMORY_RRF_K="45", MEMORY_RRF_KK="1"))
    assert "MEMORY_RRF_KK" in both.checks["environment"]["detail"]
    assert "MEMORY_RRF_K does nothing" in both.checks["environment"]["detail"]
    quiet = doctor(tmp_path / "doc", env=base_env(MEMORY_RRF_K="45", MEMORY_FUSION="rrf"))
    assert quiet.checks["environment"]["status"] == "ok"


# -- a remote embedding model's width: from its first answer ---------------------------


def test_a_remote_models_width_comes_from_its_first_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A familiar model name (the table says 1536) served at another width, as an
    OmniRoute alias or a local server may: the index is built once, at the width the
    provider sends, and a restart keeps it (it was dropped and rebuilt twice)."""
    caplog.set_level(logging.INFO)
    upstream = FakeUpstream()  # answers 8 floats: the request names no `dimensions`
    texts = ["I like green tea.", "I live in Oslo.", "I drive a van."]
    with serve_asgi(upstream.app) as url:
        first = make_engine(tmp_path / "data", resolver=None)
        try:
            save_providers(first.store, [Provider("up", f"{url}/v1", "k")])
            first.settings.update(
                {"embeddingSource": "remote", "embeddingProviderModel": "up/text-embedding-3-small"}
            )
            for i, text in enumerate(texts):
                first.create(NewMemory("owner-a", text, key=f"k{i}"))
            assert first.drain(30)
            status = first.status()
        finally:
            first.close()
        assert status["embedding"]["dimensions"] == 8
        assert status["embedding"]["signature"] == "remote:up/text-embedding-3-small:8"
        assert "dim=8, learned from the first answer" in status["embedding"]["reason"]
        vectors = status["vectorStore"]
        assert (vectors["activeDim"], vectors["rowCount"], vectors["needsReindex"]) == (8, 3, 0)
        assert "indexing failed" not in caplog.text  # no index built for 1536 first

        caplog.clear()
        seen = len(upstream.requests)
        again = make_engine(tmp_path / "data", resolver=None)  # a restart
        try:
            kept = again.status()["vectorStore"]
            assert (kept["activeDim"], kept["rowCount"]) == (8, 3)
            assert again.drain(30)
            hits = again.preview("owner-a", "green tea", strategy="semantic").to_dict()
        finally:
            again.close()
        assert "vector index reset" not in caplog.text
        asked = [r["body"]["input"] for r in upstream.requests[seen:]]
        assert not any(t in str(asked) for t in texts), asked  # nothing re-embedded
        assert hits["resolution"]["fallbackReason"] is None  # served by the kept vectors
        assert hits["resolution"]["vectorStore"] == "sqlite-vec"


# -- fallbackReason with MEMORY_DISABLE_VEC -----------------------------------------------


def test_fallback_reason_names_memory_disable_vec(tmp_path: Path) -> None:
    """The embedder works; the vector tier is off by the variable: every answer says
    that (it said "no embedding source available")."""
    engine = make_engine(
        tmp_path / "data", {"MEMORY_DISABLE_VEC": "1"}, resolver=fixed_resolver("hash")
    )
    try:
        add(engine, "owner-a", "I like green tea in the morning.")
        app = create_app(engine, admin_token=ADMIN)
        with TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
            for strategy in ("hybrid", "semantic"):
                preview = http.post(
                    "/api/memory/retrieve-preview",
                    json={"query": "green tea", "strategy": strategy, "apiKeyId": "owner-a"},
                ).json()
                reason = preview["resolution"]["fallbackReason"]
                assert reason == (
                    "sqlite-vec not available (disabled by MEMORY_DISABLE_VEC): keyword search"
                ), strategy
                assert preview["memories"], strategy  # the keyword tier still answers
            status = http.get("/api/memory/engine-status").json()
        assert status["embedding"]["available"] is True
        assert "disabled by MEMORY_DISABLE_VEC" in status["vectorStore"]["reason"]
        assert "disabled by MEMORY_DISABLE_VEC" in status["qdrant"]["reason"]
    finally:
        engine.close()
