"""Provenance of every write: a memory records where it came from: the
gateway (request id, role, when said: tests/engine/test_erasure.py), REST, MCP (the SDK's
client over streamable HTTP) or an import, and when it was said; a writer's own
``via``/``saidAt`` are replaced (a client could otherwise claim a conversation), and
an export imported again is unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.models import parse_iso, utcnow
from tests.embedders import no_source
from tests.gateway_support import Gateway, gateway_on
from tests.mcp_support import Session, over_http


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with gateway_on(tmp_path / "data", "prov", no_source) as base:
        yield base


def test_rest_mcp_and_import_writes_record_where_they_came_from(gateway: Gateway) -> None:
    engine, owner = gateway.engine, gateway.owner
    before = utcnow()
    rest = gateway.api("POST", "/api/memory", json={"apiKeyId": owner, "content": "Likes tea"})
    assert rest.status_code == 201, rest.text
    meta = rest.json()["memory"]["metadata"]
    assert meta["via"] == "rest"
    assert before <= parse_iso(meta["saidAt"]) <= utcnow()
    own = gateway.api(
        "POST",
        "/api/memory",
        json={"apiKeyId": owner, "content": "Likes coffee", "metadata": {"via": "my-app"}},
    )
    assert own.json()["memory"]["metadata"]["via"] == "rest"  # a writer cannot claim another

    async def add(session: Session) -> None:
        out = await session.ok("memory_add", {"content": "Likes green tea"})
        assert out["memory"]["metadata"]["via"] == "mcp"

    over_http(gateway.url, gateway.key, add)
    (by_mcp,) = [
        m for m in engine.list_memories(owner=owner).data if m.content == "Likes green tea"
    ]
    assert by_mcp.metadata["via"] == "mcp"
    assert "saidAt" in by_mcp.metadata

    line = {"content": "Likes jasmine tea", "createdAt": "2025-03-01T10:00:00Z", "key": "tea:j"}
    imported = gateway.api(
        "POST",
        "/api/memory/import",
        params={"apiKeyId": owner},
        content=json.dumps(line) + "\n",
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 200, imported.text
    (jasmine,) = [m for m in engine.list_memories(owner=owner).data if m.key == "tea:j"]
    assert jasmine.metadata["via"] == "import"
    assert parse_iso(jasmine.metadata["saidAt"]) == parse_iso("2025-03-01T10:00:00Z")

    exported = gateway.export()
    again = gateway.api(
        "POST",
        "/api/memory/import",
        params={"apiKeyId": owner},
        content="\n".join(json.dumps(m) for m in exported) + "\n",
        headers={"content-type": "application/x-ndjson"},
    )
    assert again.status_code == 200, again.text
    assert {m["id"]: m["metadata"] for m in gateway.export()} == {
        m["id"]: m["metadata"] for m in exported
    }
