"""``/api/settings/qdrant*`` over the real app: the reference qdrant-routes and
qdrant-schemas cases adapted to docs/design/owners.md#every-read-filters-by-owner
(owner-scoped test search, strict 400s, the key never returned), plus
``POST /api/memory/reindex {target: "qdrant"}``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import MemoryEngine
from tests.conftest import ADMIN, add

pytest.importorskip("qdrant_client")

BASE = "/api/settings/qdrant"
STACK = ("Traceback", 'File "')


@pytest.fixture
def semantic_client(semantic_engine: MemoryEngine) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from memoryd.app import create_app

    app = create_app(semantic_engine, admin_token=ADMIN)
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        yield http


def settle(engine: MemoryEngine) -> None:
    assert engine.qdrant is not None
    for _ in range(3):
        assert engine.drain(10)
        engine.qdrant.notify()
        assert engine.qdrant.join(20)


# -- settings --------------------------------------------------------------------------


def test_get_defaults_without_a_key(client: Any) -> None:
    response = client.get(BASE)
    assert response.status_code == 200
    body = response.json()
    assert body == {
        "enabled": False,
        "host": "",
        "port": 6333,
        "collection": "memoryd_memory",
        "path": None,
        "quantization": "none",
        "embeddingModel": None,
        "embeddingModelInUse": None,  # the client fixture has no embedder
        "hasApiKey": False,
        "apiKeyMasked": None,
    }
    assert "apiKey" not in body


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", BASE), ("PUT", BASE), ("GET", f"{BASE}/health"), ("POST", f"{BASE}/search"),
     ("POST", f"{BASE}/cleanup"), ("GET", f"{BASE}/embedding-models")],
)  # fmt: skip
def test_every_route_needs_the_admin_token(client: Any, method: str, path: str) -> None:
    response = client.request(method, path, headers={"Authorization": "Bearer nope"}, json={})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_put_updates_masks_the_key_and_sets_vector_store(
    client: Any, engine: MemoryEngine, tmp_path: Path
) -> None:
    response = client.put(
        BASE,
        json={
            "enabled": True,
            "host": "qdrant-server",
            "port": 6333,
            "collection": "test-collection",
            "apiKey": "qd-secret-key-123456",
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["enabled"], body["host"], body["collection"]) == (
        True, "qdrant-server", "test-collection",
    )  # fmt: skip
    assert body["hasApiKey"] is True
    assert body["apiKeyMasked"] == "qd-s…3456"
    assert "qd-secret-key-123456" not in response.text
    assert "qd-secret-key-123456" not in client.get(BASE).text
    assert engine.settings.get().vector_store == "qdrant"  # read without a restart
    assert client.get("/api/settings/memory").json()["vectorStore"] == "qdrant"

    # Renaming the collection leaves vectorStore alone; disabling resets it to auto.
    assert client.put(BASE, json={"collection": "renamed"}).status_code == 200
    assert engine.settings.get().vector_store == "qdrant"
    assert client.put(BASE, json={"enabled": False}).json()["enabled"] is False
    assert engine.settings.get().vector_store == "auto"

    # "" removes the stored key.
    cleared = client.put(BASE, json={"apiKey": ""}).json()
    assert (cleared["hasApiKey"], cleared["apiKeyMasked"]) == (False, None)


@pytest.mark.parametrize(
    "body",
    [
        {"port": "not-a-number"},
        {"port": 0},
        {"port": 65536},
        {"collection": ""},
        {"collection": "a/b"},
        {"quantization": "bogus"},
        {"enabled": "yes"},
        {"enabled": None},
        {"host": "ftp://x"},
        {"embeddingModel": 5},
        {"embeddingModel": "x" * 201},
        {"vectorSize": 1536},
        {"unknown": 1},
    ],
)
def test_put_rejects_invalid_fields_with_400(client: Any, body: dict[str, Any]) -> None:
    response = client.put(BASE, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["message"]
    assert client.get(BASE).json()["enabled"] is False  # nothing stored


def test_malformed_json_is_400_without_a_stack_trace(client: Any) -> None:
    response = client.put(BASE, content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert not any(marker in response.text for marker in STACK)


# -- health, search, cleanup -------------------------------------------------------------


def test_health_when_disabled_and_in_local_mode(client: Any, tmp_path: Path) -> None:
    off = client.get(f"{BASE}/health").json()
    assert off["ok"] is False
    assert isinstance(off["latencyMs"], float)
    assert off["error"].startswith("not_configured")
    client.put(BASE, json={"enabled": True, "path": str(tmp_path / "q")})
    on = client.get(f"{BASE}/health").json()
    assert on["ok"] is True
    assert on["latencyMs"] >= 0
    assert "error" not in on or on["error"] is None


def test_health_of_an_unreachable_server(client: Any) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client.put(BASE, json={"enabled": True, "host": "127.0.0.1", "port": port})
    body = client.get(f"{BASE}/health").json()
    assert body["ok"] is False
    assert body["error"]
    assert not any(marker in body["error"] for marker in STACK)
    status = client.get("/api/memory/engine-status").json()["qdrant"]
    assert (status["enabled"], status["healthy"]) == (True, False)


@pytest.mark.parametrize(
    "body",
    [{"query": "", "apiKeyId": "k1"}, {"query": "x"}, {"query": "x", "apiKeyId": ""},
     {"query": "x", "apiKeyId": "k1", "topK": 51}, {"query": "x", "apiKeyId": "k1", "topK": 0},
     {"query": "x", "apiKeyId": "k1", "extra": True}],
)  # fmt: skip
def test_search_validation(client: Any, body: dict[str, Any]) -> None:
    assert client.post(f"{BASE}/search", json=body).status_code == 400


def test_search_when_disabled(client: Any) -> None:
    body = client.post(f"{BASE}/search", json={"query": "test query", "apiKeyId": "k1"}).json()
    assert body["ok"] is False
    assert body["results"] == []


def test_search_is_owner_scoped(
    semantic_client: Any, semantic_engine: MemoryEngine, tmp_path: Path
) -> None:
    mine = add(semantic_engine, "alice", "I prefer dark mode in editors")
    add(semantic_engine, "alice", "I drink green tea")
    theirs = add(semantic_engine, "mallory", "I prefer dark mode in editors")
    assert semantic_client.put(BASE, json={"enabled": True, "path": str(tmp_path / "q")}).is_success
    settle(semantic_engine)
    response = semantic_client.post(
        f"{BASE}/search", json={"query": "dark mode editors", "topK": 5, "apiKeyId": "alice"}
    )
    body = response.json()
    assert body["ok"] is True
    found = [r["id"] for r in body["results"]]
    assert found[0] == mine.id
    assert theirs.id not in found
    assert all(r["payload"]["apiKeyId"] == "alice" for r in body["results"])
    assert body["results"][0]["content"] == mine.content
    assert 0 < body["results"][0]["score"] <= 1.0
    nobody = semantic_client.post(
        f"{BASE}/search", json={"query": "dark mode", "apiKeyId": "nobody"}
    ).json()
    assert nobody == {"ok": True, "results": [], "error": None}


def test_cleanup_counts_and_uses_retention(
    semantic_client: Any, semantic_engine: MemoryEngine, tmp_path: Path
) -> None:
    from datetime import timedelta

    from memoryd.models import utcnow

    semantic_engine.settings.update({"retentionDays": 30})
    disabled = semantic_client.post(f"{BASE}/cleanup").json()
    assert disabled["ok"] is False
    assert disabled["deletedCount"] == 0
    assert disabled["retentionDays"] == 30
    add(semantic_engine, "alice", "fresh note")
    add(semantic_engine, "alice", "old note", created_at=utcnow() - timedelta(days=40))
    semantic_client.put(BASE, json={"enabled": True, "path": str(tmp_path / "q")})
    settle(semantic_engine)
    assert semantic_client.post(f"{BASE}/cleanup", json={"retentionDays": 60}).json() == {
        "ok": True, "deletedCount": 0, "retentionDays": 60, "error": None,
    }  # fmt: skip
    body = semantic_client.post(f"{BASE}/cleanup", json={}).json()
    assert (body["ok"], body["deletedCount"], body["retentionDays"]) == (True, 1, 30)
    assert semantic_client.post(f"{BASE}/cleanup", json={"retentionDays": 0}).status_code == 400


def test_embedding_models(client: Any) -> None:
    response = client.get(f"{BASE}/embedding-models")
    assert response.status_code == 200
    models = response.json()["models"]
    assert models
    values = [m["value"] for m in models]
    assert values == sorted(values)
    assert any(v.startswith("transformers/") for v in values)
    assert all({"value", "label", "dimensions", "available"} <= set(m) for m in models)


# -- reindex target qdrant ---------------------------------------------------------------


def test_reindex_target_qdrant(
    semantic_client: Any, semantic_engine: MemoryEngine, tmp_path: Path
) -> None:
    refused = semantic_client.post("/api/memory/reindex", json={"target": "qdrant"})
    assert refused.status_code == 400
    assert "not" in refused.json()["error"]["message"]
    for i in range(4):
        add(semantic_engine, "alice", f"note number {i}")
    semantic_client.put(BASE, json={"enabled": True, "path": str(tmp_path / "q")})
    settle(semantic_engine)
    started = semantic_client.post("/api/memory/reindex", json={"target": "qdrant", "force": True})
    assert started.status_code == 202
    assert started.json()["started"] is True
    assert started.json()["pending"] == 4
    settle(semantic_engine)
    sync = semantic_client.get("/api/memory/engine-status").json()["qdrant"]["sync"]
    assert (sync["pending"], sync["complete"], sync["running"]) == (0, True, False)
    assert sync["processed"] >= 8
    plain = semantic_client.post("/api/memory/reindex", json={})
    assert plain.status_code == 202  # the sqlite-vec target is unchanged
