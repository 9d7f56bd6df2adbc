"""Seed API compatibility where it costs no safety (issue 41): calls an OmniRoute client
or script makes that memoryd refused, each through the real app (in process) on a real
SQLite file."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memoryd.engine import MemoryEngine
from memoryd.models import utcnow
from tests.conftest import add

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
    assert engine.get(old.id) is not None
