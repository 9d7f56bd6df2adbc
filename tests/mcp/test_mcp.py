"""The MCP tools (docs/design/interfaces.md#mcp) driven by the SDK's own client over
streamable HTTP against the real app on a loopback port. Ports the reference cases
(memory-tools, mcp-memory-tools-strategy), adapted to memoryd: owner scoping by
credential, clear deletes every match. The stdio transport is in test_mcp_stdio.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from memoryd.engine import MemoryEngine
from memoryd.mcp import TOOL_NAMES
from memoryd.models import MemoryType, NewMemory
from tests.conftest import ADMIN, STORES, add
from tests.mcp_support import PREFIXED, Served, Session, contents, over_http, served


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Every test here runs on the SQLite file and on PostgreSQL."""
    return str(request.param)


@pytest.fixture
def srv(engine: MemoryEngine) -> Iterator[Served]:
    with served(engine) as s:
        yield s


# -- HTTP: credentials and schemas --------------------------------------------------------


def test_http_without_a_valid_credential_is_401(srv: Served) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic x"}):
        resp = httpx.post(f"{srv.url}/mcp", json=init, headers=headers)
        assert resp.status_code == 401
        assert resp.json()["error"]["code"] == "unauthorized"
        assert resp.headers["www-authenticate"].startswith("Bearer")
    assert httpx.get(f"{srv.url}/mcp").status_code == 401

    async def body(s: Session) -> None:
        await s.ok("memory_search", {})
        srv.engine.keys.revoke("alice")  # takes effect at once, mid-session
        with pytest.raises(MCPError):
            await s.client.call_tool("memory_search", {})

    over_http(srv.url, srv.alice, body)


def test_http_lists_the_tools_with_the_spec_schemas(srv: Served) -> None:
    async def body(s: Session) -> None:
        tools = {t.name: t for t in (await s.client.list_tools()).tools}
        assert (
            set(tools)
            == set(TOOL_NAMES)
            == {
                *PREFIXED,
                "memory_search",
                "memory_add",
                "memory_clear",
                "memory_pin",
                "memory_profile",
                "memory_forget",
            }
        )
        forget = tools["memory_forget"].input_schema
        assert set(forget["properties"]) == {"apiKeyId", "userId"}
        assert forget["required"] == ["userId"]
        assert tools["memory_forget"].annotations.destructive_hint is True
        for name in PREFIXED:
            assert tools[name].input_schema == tools[name.removeprefix("omniroute_")].input_schema
            assert tools[name].output_schema is not None
        search = tools["omniroute_memory_search"].input_schema
        props = search["properties"]
        assert set(props) == {"apiKeyId", "query", "type", "maxTokens", "limit", "userId"}
        assert search.get("required", []) == []
        assert (props["maxTokens"]["type"], props["maxTokens"]["minimum"]) == ("integer", 1)
        assert props["maxTokens"]["maximum"] == 8000
        assert (props["limit"]["minimum"], props["limit"]["maximum"]) == (1, 100)
        assert props["type"]["enum"] == ["factual", "episodic", "procedural", "semantic"]
        added = tools["omniroute_memory_add"].input_schema
        assert set(added["properties"]) == {
            "apiKeyId",
            "sessionId",
            "type",
            "key",
            "content",
            "metadata",
            "userId",
            "subjects",
        }
        assert sorted(added["required"]) == ["content"]  # type and key have defaults
        assert added["properties"]["content"]["minLength"] == 1
        assert added["properties"]["metadata"]["type"] == "object"
        cleared = tools["omniroute_memory_clear"].input_schema
        assert set(cleared["properties"]) == {"apiKeyId", "type", "olderThan", "userId"}
        assert cleared["properties"]["olderThan"]["type"] == "string"
        annotations = tools["memory_clear"].annotations
        assert annotations is not None
        assert annotations.destructive_hint is True

    over_http(srv.url, srv.alice, body)


# -- HTTP: add, search, clear ------------------------------------------------------------


def test_add_with_a_client_key_stores_under_that_key(srv: Served) -> None:
    async def body(s: Session) -> None:
        args = {"type": "factual", "key": "pref:language", "content": "I prefer Python"}
        out = await s.ok("omniroute_memory_add", args)
        memory = out["memory"]
        assert (memory["apiKeyId"], memory["sessionId"]) == ("alice", "")
        assert set(memory["metadata"]) == {"via", "saidAt"}  # provenance
        assert memory["metadata"]["via"] == "mcp"
        again = await s.ok(
            "memory_add",
            {
                **args,
                "content": "I prefer Rust",
                "apiKeyId": "alice",
                "sessionId": "s1",
                "metadata": {"src": "t"},
            },
        )
        assert again["memory"]["id"] == memory["id"]  # upsert on (owner, key)
        found = await s.ok("memory_search", {"query": "Rust"})
        assert [m["content"] for m in found["memories"]] == ["I prefer Rust"]
        assert found["count"] == 1
        assert found["totalTokens"] == found["memories"][0]["tokens"] > 0

    over_http(srv.url, srv.alice, body)
    stored = srv.engine.list_memories(owner="alice").data
    assert [(m.content, m.session_id, m.metadata["src"], m.metadata["via"]) for m in stored] == [
        ("I prefer Rust", "s1", "t", "mcp")
    ]


def test_subjects_are_checked_as_rest_checks_them(srv: Served) -> None:
    """MCP took a 300-character subject and dropped an empty one silently, where REST
    refuses both."""

    async def body(s: Session) -> None:
        for subjects in (["x" * 101], [""], ["a"] * 9):
            message = await s.err("memory_add", {"content": "about Anna", "subjects": subjects})
            assert "subjects" in message
        out = await s.ok("memory_add", {"content": "about Anna", "subjects": [" Anna ", " "]})
        assert out["memory"]["subjects"] == ["Anna"]

    over_http(srv.url, srv.alice, body)
    assert [m.content for m in srv.engine.list_memories(owner="alice").data] == ["about Anna"]


def test_search_uses_the_strategy_from_settings(semantic_engine: MemoryEngine) -> None:
    engine = semantic_engine
    add(engine, "alice", "Paris is the capital of France")
    add(engine, "alice", "The user waters the tomatoes every morning")
    engine.drain()
    tiers = {"recent": "recent", "semantic": "vector", "hybrid": "hybrid"}
    with served(engine) as srv:

        async def body(s: Session) -> None:
            for strategy, tier in tiers.items():
                engine.settings.update({"strategy": strategy})
                found = await s.ok("omniroute_memory_search", {"query": "Paris capital"})
                first = found["memories"][0]["content"]
                if strategy == "recent":  # the newest, whatever the words
                    assert first.startswith("The user waters"), strategy
                else:
                    assert first.startswith("Paris"), strategy
                assert {m["tier"] for m in found["memories"]} == {tier}, strategy
            engine.settings.update({"strategy": "recent"})
            latest = await s.ok("memory_search", {})  # no query: the most recent
            assert latest["count"] == 2

        over_http(srv.url, srv.alice, body)


def test_reference_typescript_backend_ranks_typescript_first(
    semantic_engine: MemoryEngine,
) -> None:
    engine = semantic_engine
    with served(engine) as srv:

        async def body(s: Session) -> None:
            for type_, key, content in [
                ("factual", "pref:lang", "The user writes TypeScript for every backend service"),
                ("factual", "pref:hobby", "The user enjoys hiking in the mountains"),
                ("factual", "pref:stack", "Backend APIs are built with TypeScript and Node"),
                ("semantic", "sum:garden", "Summary: the user talked about gardening"),
            ]:
                await s.ok("omniroute_memory_add", {"type": type_, "key": key, "content": content})
            engine.drain()
            args = {"query": "typescript backend", "type": "factual", "limit": 2}
            found = await s.ok("omniroute_memory_search", args)
            assert found["count"] == 2
            assert all(m["type"] == "factual" for m in found["memories"])
            assert all("TypeScript" in m["content"] for m in found["memories"])
            assert found["totalTokens"] == sum(m["tokens"] for m in found["memories"]) > 0

        over_http(srv.url, srv.alice, body)


def test_search_budget_and_limits(srv: Served) -> None:
    for i in range(5):
        add(srv.engine, "alice", f"TypeScript fact number {i} " + "word " * 20)

    async def body(s: Session) -> None:
        small = await s.ok("memory_search", {"query": "TypeScript", "maxTokens": 60})
        assert 1 <= small["count"] < 5
        assert small["totalTokens"] <= 60
        assert (await s.ok("memory_search", {"query": "TypeScript", "limit": 2}))["count"] == 2
        for bad in ({"maxTokens": 0}, {"maxTokens": 8001}, {"limit": 0}, {"limit": 101}):
            message = await s.err("memory_search", {"query": "TypeScript", **bad})
            assert next(iter(bad)) in message
        srv.engine.settings.update({"maxTokens": 0})  # a zero budget injects nothing
        assert await s.ok("memory_search", {"query": "TypeScript"}) == {
            "memories": [],
            "count": 0,
            "totalTokens": 0,
        }
        srv.engine.settings.update({"maxTokens": 2000, "enabled": False})
        off = await s.ok("memory_search", {"query": "TypeScript", "maxTokens": 500})
        assert off["count"] == 5  # search runs even with memory off globally

    over_http(srv.url, srv.alice, body)


def test_clear_with_type_and_date_filters(srv: Served) -> None:
    old = datetime(2024, 1, 1, tzinfo=UTC)
    new = datetime(2025, 6, 1, tzinfo=UTC)
    add(srv.engine, "alice", "old fact", created_at=old)
    add(srv.engine, "alice", "new fact", created_at=new)
    add(srv.engine, "alice", "old episode", type=MemoryType.EPISODIC, created_at=old)
    add(srv.engine, "bob", "bob old fact", created_at=old)

    async def body(s: Session) -> None:
        args = {"type": "factual", "olderThan": "2025-01-01T00:00:00.000Z"}
        assert await s.ok("omniroute_memory_clear", args) == {"deletedCount": 1}
        assert contents(srv.engine, "alice") == ["new fact", "old episode"]
        assert await s.ok("memory_clear", {"olderThan": "2025-01-01"}) == {"deletedCount": 1}
        assert contents(srv.engine, "alice") == ["new fact"]

    over_http(srv.url, srv.alice, body)
    assert contents(srv.engine, "bob") == ["bob old fact"]


def test_clear_deletes_every_match_beyond_one_page(srv: Served) -> None:
    srv.engine.create_many(
        NewMemory(api_key_id=owner, content=f"{owner} fact {i}")
        for owner in ("alice", "bob")
        for i in range(120)
    )

    async def body(s: Session) -> None:
        assert await s.ok("memory_clear", {"type": "factual"}) == {"deletedCount": 120}

    over_http(srv.url, srv.alice, body)
    assert srv.engine.list_memories(owner="alice").total == 0
    assert srv.engine.list_memories(owner="bob").total == 120


# -- HTTP: errors and isolation -----------------------------------------------------------


def test_admin_token_requires_apikeyid(srv: Served) -> None:
    async def body(s: Session) -> None:
        for tool, args in [
            ("memory_search", {"query": "x"}),
            ("omniroute_memory_add", {"type": "factual", "key": "k", "content": "c"}),
            ("memory_clear", {}),
        ]:
            assert "apiKeyId: required with the admin token" in await s.err(tool, args)
        add_args = {"type": "factual", "key": "k", "content": "Shared rule"}
        await s.ok("memory_add", {"apiKeyId": "bob", **add_args})
        await s.ok("memory_add", {"apiKeyId": "global", **add_args})  # the admin may
        found = await s.ok("memory_search", {"apiKeyId": "bob", "query": "rule"})
        assert [m["apiKeyId"] for m in found["memories"]] == ["bob"]
        assert await s.ok("memory_clear", {"apiKeyId": "global"}) == {"deletedCount": 1}

    over_http(srv.url, ADMIN, body)
    assert contents(srv.engine, "bob") == ["Shared rule"]


def test_end_users_of_a_key_through_mcp(srv: Served) -> None:
    """UserId on add and search; another end user's memory never shows."""

    async def body(s: Session) -> None:
        await s.ok("memory_add", {"apiKeyId": "bob", "content": "Shared rule", "key": "r"})
        await s.ok("memory_add", {"apiKeyId": "bob", "userId": "ann", "content": "Ann likes figs"})
        await s.ok("memory_add", {"apiKeyId": "bob", "userId": "tom", "content": "Tom likes figs"})
        found = await s.ok("memory_search", {"apiKeyId": "bob", "userId": "ann", "query": "figs"})
        assert [m["content"] for m in found["memories"]] == ["Ann likes figs"]
        assert found["memories"][0]["userId"] == "ann"
        # the key's shared memories reach its end users only when it shares them
        shared = await s.ok("memory_search", {"apiKeyId": "bob", "userId": "ann", "query": "rule"})
        assert shared["memories"] == []
        srv.engine.settings.update({"shareWithEndUsers": ["bob"]})
        shared = await s.ok("memory_search", {"apiKeyId": "bob", "userId": "ann", "query": "rule"})
        assert [m["content"] for m in shared["memories"]] == ["Shared rule"]

    over_http(srv.url, ADMIN, body)


def test_add_needs_only_content(srv: Served) -> None:
    """Without key and type the memory is factual under a derived key."""

    async def body(s: Session) -> None:
        out = await s.ok("memory_add", {"apiKeyId": "bob", "content": "User plays chess"})
        assert out["memory"]["type"] == "factual"
        assert out["memory"]["key"].startswith("factual:user_plays_chess:")
        again = await s.ok("memory_add", {"apiKeyId": "bob", "content": "User plays chess"})
        assert again["memory"]["id"] == out["memory"]["id"]

    over_http(srv.url, ADMIN, body)
    assert contents(srv.engine, "bob") == ["User plays chess"]


def test_bad_input_is_a_clear_tool_error(srv: Served) -> None:
    async def body(s: Session) -> None:
        new = {"type": "factual", "key": "k", "content": "c"}
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("memory_clear", {"olderThan": "next tuesday"}, "olderThan: not a valid ISO-8601"),
            ("memory_clear", {"olderThan": ""}, "olderThan"),
            ("memory_add", {**new, "content": ""}, "content"),
            ("memory_add", {**new, "content": "   "}, "content: must be a non-empty string"),
            ("memory_add", {**new, "key": ""}, "key"),
            ("memory_add", {**new, "type": "gossip"}, "type"),
            ("memory_add", {**new, "metadata": [1]}, "metadata"),
            ("memory_search", {"type": "gossip"}, "type"),
            ("memory_search", {"apiKeyId": ""}, "apiKeyId"),
            ("memory_clear", {"apiKeyId": ""}, "apiKeyId"),
        ]
        for tool, args, needle in cases:
            assert needle in await s.err(tool, args), (tool, args)
        await s.ok("memory_add", new)  # the session is still fine

    over_http(srv.url, srv.alice, body)
    assert contents(srv.engine, "alice") == ["c"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_client_key_cannot_touch_another_owner(srv: Served, mode: str) -> None:
    add(srv.engine, "bob", "Bob's secret plan uses TypeScript")
    add(srv.engine, "global", "Shared pool note about TypeScript")

    async def body(s: Session) -> None:
        await s.ok(
            "memory_add", {"type": "factual", "key": "a", "content": "Alice uses TypeScript"}
        )
        found = await s.ok("memory_search", {"query": "TypeScript secret plan"})
        assert [m["apiKeyId"] for m in found["memories"]] == ["alice"]
        for tool, args in [
            ("memory_search", {"apiKeyId": "bob", "query": "plan"}),
            ("memory_add", {"apiKeyId": "bob", "type": "factual", "key": "x", "content": "hi"}),
            ("memory_add", {"apiKeyId": "global", "type": "factual", "key": "x", "content": "hi"}),
            ("memory_clear", {"apiKeyId": "bob"}),
            ("omniroute_memory_clear", {"apiKeyId": "global"}),
        ]:
            assert "may only use its own memories" in await s.err(tool, args), (tool, args)
        assert await s.ok("memory_clear", {}) == {"deletedCount": 1}

    over_http(srv.url, srv.alice, body, mode=mode)
    assert contents(srv.engine, "alice") == []
    assert contents(srv.engine, "bob") == ["Bob's secret plan uses TypeScript"]
    assert contents(srv.engine, "global") == ["Shared pool note about TypeScript"]
