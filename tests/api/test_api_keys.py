"""``/api/keys`` over HTTP through the real app (in process),
docs/design/interfaces.md#rest-api shapes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoryd.app import create_app
from memoryd.engine import MemoryEngine
from tests.conftest import STORES


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Every test here runs on the SQLite file and on PostgreSQL."""
    return str(request.param)


TOKEN = "test-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PUBLIC_FIELDS = {"id", "name", "prefix", "createdAt", "revokedAt", "memoryEnabled"}


@pytest.fixture
def http(engine: MemoryEngine) -> Iterator[TestClient]:
    app = create_app(engine, admin_token=TOKEN)
    with TestClient(app) as client:
        yield client


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "code", "details"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    assert isinstance(body["error"]["details"], list)
    assert "Traceback" not in response.text
    return dict(body["error"])


def create(http: TestClient, **body: Any) -> dict[str, Any]:
    response = http.post("/api/keys", json={"name": "laptop", **body}, headers=AUTH)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_create_returns_201_with_the_secret_once(http: TestClient, engine: MemoryEngine) -> None:
    created = create(http)
    assert set(created) == {"id", "name", "key", "prefix", "createdAt"}
    assert created["key"].startswith("mk_")
    assert created["prefix"] == created["key"][:8]
    assert created["name"] == "laptop"
    assert created["createdAt"].endswith("Z")
    found = engine.keys.authenticate(created["key"])
    assert found is not None
    assert found.id == created["id"]


def test_list_never_shows_a_secret_or_hash(http: TestClient) -> None:
    secrets = [create(http, name=f"k{i}")["key"] for i in range(3)]
    response = http.get("/api/keys", headers=AUTH)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data"}
    assert [k["name"] for k in body["data"]] == ["k2", "k1", "k0"]  # newest first
    for item in body["data"]:
        assert set(item) == PUBLIC_FIELDS
    for secret in secrets:
        assert secret not in response.text
    assert '"key"' not in response.text
    assert "keyHash" not in response.text
    assert "key_hash" not in response.text


def test_create_with_memory_flag_and_explicit_id(http: TestClient) -> None:
    created = create(http, memoryEnabled=False, id="alice")
    assert created["id"] == "alice"
    one = http.get("/api/keys/alice", headers=AUTH)
    assert one.status_code == 200
    assert one.json()["key"]["memoryEnabled"] is False
    assert_error(
        http.post("/api/keys", json={"name": "again", "id": "alice"}, headers=AUTH), 409, "conflict"
    )


def test_delete_revokes_then_404(http: TestClient, engine: MemoryEngine) -> None:
    created = create(http)
    assert engine.keys.authenticate(created["key"]) is not None
    first = http.delete(f"/api/keys/{created['id']}", headers=AUTH)
    assert first.status_code == 200
    assert first.json() == {"revoked": True}
    assert engine.keys.authenticate(created["key"]) is None  # at once
    listed = http.get("/api/keys", headers=AUTH).json()["data"]
    assert listed[0]["revokedAt"] is not None
    live = http.get("/api/keys", params={"includeRevoked": "false"}, headers=AUTH).json()
    assert live == {"data": []}
    assert_error(http.delete(f"/api/keys/{created['id']}", headers=AUTH), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("DELETE", "/api/keys/nope", None),
        ("GET", "/api/keys/nope", None),
        ("PATCH", "/api/keys/nope", {"memoryEnabled": True}),
        ("DELETE", "/api/keys/" + "x" * 300, None),
    ],
)
def test_unknown_id_is_404(http: TestClient, method: str, path: str, body: Any) -> None:
    assert_error(http.request(method, path, json=body, headers=AUTH), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "bogus": 1}, "bogus"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 201}, "name"),
        ({}, "name"),
        ({"name": 5}, "name"),
        ({"name": "x", "memoryEnabled": "yes"}, "memoryEnabled"),
        ({"name": "x", "id": "global"}, "id"),
        ({"name": "x", "id": "GLOBAL"}, "id"),
        ({"name": "x", "id": "a b"}, "id"),
        ({"name": "x", "id": ""}, "id"),
        ({"name": "x", "id": "__memoryd_health__"}, "id"),
    ],
)
def test_bad_create_body_is_400(
    http: TestClient, engine: MemoryEngine, body: dict[str, Any], field: str
) -> None:
    error = assert_error(http.post("/api/keys", json=body, headers=AUTH), 400, "invalid_request")
    assert field in {d.get("field") for d in error["details"]}, error
    assert engine.keys.list() == []


@pytest.mark.parametrize("raw", [b"{not json", b"", b"[]", b'"name"', b"null"])
def test_malformed_json_is_400(http: TestClient, raw: bytes) -> None:
    headers = {**AUTH, "Content-Type": "application/json"}
    assert_error(http.post("/api/keys", content=raw, headers=headers), 400, "invalid_request")


def test_patch_memory_enabled(http: TestClient, engine: MemoryEngine) -> None:
    created = create(http)
    path = f"/api/keys/{created['id']}"
    for value in (True, False, None):
        response = http.patch(path, json={"memoryEnabled": value}, headers=AUTH)
        assert response.status_code == 200, response.text
        assert set(response.json()) == {"key"}
        assert set(response.json()["key"]) == PUBLIC_FIELDS
        assert response.json()["key"]["memoryEnabled"] is value
        stored = engine.keys.get(created["id"])
        assert stored is not None
        assert stored.memory_enabled is value
    assert created["key"] not in http.patch(path, json={"memoryEnabled": True}, headers=AUTH).text
    for bad in ({}, {"memoryEnabled": "on"}, {"memoryEnabled": True, "name": "x"}):
        assert_error(http.patch(path, json=bad, headers=AUTH), 400, "invalid_request")


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer "},
        {"Authorization": TOKEN},
    ],
)
def test_admin_token_is_required(http: TestClient, headers: dict[str, str]) -> None:
    for method, path, body in [
        ("GET", "/api/keys", None),
        ("POST", "/api/keys", {"name": "x"}),
        ("DELETE", "/api/keys/x", None),
        ("PATCH", "/api/keys/x", {"memoryEnabled": True}),
    ]:
        assert_error(http.request(method, path, json=body, headers=headers), 401, "unauthorized")


def test_a_client_key_is_not_an_admin_token(http: TestClient, engine: MemoryEngine) -> None:
    _, secret = engine.keys.create("client")
    client_auth = {"Authorization": f"Bearer {secret}"}
    assert_error(http.get("/api/keys", headers=client_auth), 401, "unauthorized")
    assert_error(
        http.post("/api/keys", json={"name": "x"}, headers=client_auth), 401, "unauthorized"
    )
    assert len(engine.keys.list()) == 1


def test_openapi_documents_the_key_routes(http: TestClient) -> None:
    spec = http.get("/openapi.json").json()
    paths = spec["paths"]
    assert {"post", "get"} <= set(paths["/api/keys"])
    assert {"get", "patch", "delete"} <= set(paths["/api/keys/{key_id}"])
    created = paths["/api/keys"]["post"]["responses"]["201"]["content"]["application/json"]
    assert created["schema"]["$ref"].endswith("/KeyCreated")
    listed = paths["/api/keys"]["get"]["responses"]["200"]["content"]["application/json"]
    assert listed["schema"]["$ref"].endswith("/KeyList")
    public = spec["components"]["schemas"]["KeyPublic"]["properties"]
    assert set(public) == PUBLIC_FIELDS
