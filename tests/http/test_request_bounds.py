"""Bounded work per request. Deep JSON is a 400 naming its field before any
parser recurses (gateway, REST, MCP, import), no stored row can break a listing, and
retrieval reads only the end of a huge user turn.

Over loopback: the official ``openai`` client and httpx against memoryd under uvicorn,
a fake upstream behind it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from memoryd.core.jsondepth import MAX_JSON_DEPTH
from memoryd.core.query import MAX_QUERY_CHARS, query_window
from memoryd.engine import MemoryEngine
from memoryd.engine.validation import MAX_METADATA_DEPTH
from tests.conftest import ADMIN
from tests.gateway_support import Gateway, running_gateway

AUTH = {"authorization": f"Bearer {ADMIN}"}


def nested(depth: int, leaf: Any = 1) -> Any:
    """A value ``depth`` containers deep, alternating objects and arrays."""
    value = leaf
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


def raw_nested(depth: int) -> bytes:
    """The same as JSON text, built without recursion (json.dumps would recurse)."""
    opening = b"".join(b'{"k":' if level % 2 else b"[" for level in range(depth))[::-1]
    closing = b"".join(b"}" if level % 2 else b"]" for level in range(depth))
    return opening + b"1" + closing


@pytest.fixture
def gw(engine: MemoryEngine) -> Iterator[Gateway]:
    with running_gateway(engine) as gateway:
        yield gateway


# -- 6. deep and odd JSON -----------------------------------------------------------------


def test_a_gateway_body_nested_1000_deep_is_a_400_and_the_connection_lives_on(
    gw: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    body = b'{"model": "m", "messages": [{"role": "user", "content": ' + raw_nested(1000) + b"}]}"
    headers = {"authorization": f"Bearer {gw.key}", "content-type": "application/json"}
    with httpx.Client(base_url=gw.url, headers=headers, timeout=30) as client:
        response = client.post("/v1/chat/completions", content=body)
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["param"] == "messages"
        assert error["code"] == "nesting_too_deep"
        assert "messages[0].content" in error["message"]
        # The same keep-alive connection answers the next request normally.
        ok = client.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert ok.status_code == 200
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_tools_nested_900_deep_are_refused_naming_tools_without_a_traceback(
    gw: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    # Raw bytes: no client can build this body (json.dumps itself recurses).
    body = (
        b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": '
        b'[{"type": "function", "function": {"name": "f", "parameters": '
        + raw_nested(900)
        + b"}}]}"
    )
    response = httpx.post(
        f"{gw.url}/v1/chat/completions",
        content=body,
        headers={"authorization": f"Bearer {gw.key}", "content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "tools"
    assert "tools[0].function.parameters" in error["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert gw.upstream.requests == []


def test_rest_metadata_nested_300_deep_is_a_400_and_nothing_is_stored(gw: Gateway) -> None:
    body = (
        b'{"apiKeyId": "' + gw.owner.encode() + b'", "content": "I like tea", "metadata": '
        b'{"deep": ' + raw_nested(300) + b"}}"
    )
    response = gw.api(
        "POST", "/api/memory", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    payload = response.json()
    assert payload["error"]["code"] == "nesting_too_deep"
    assert payload["error"]["details"][0]["field"] == "metadata"
    listing = gw.api("GET", "/api/memory", params={"apiKeyId": gw.owner})
    assert listing.status_code == 200
    assert listing.json()["total"] == 0


def test_metadata_deeper_than_its_limit_is_refused_by_every_interface(
    gw: Gateway, engine: MemoryEngine
) -> None:
    too_deep = {"deep": nested(MAX_METADATA_DEPTH)}  # one level over: the dict adds one
    response = gw.api(
        "POST",
        "/api/memory",
        json={"apiKeyId": gw.owner, "content": "I like tea", "metadata": too_deep},
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "metadata"
    line = json.dumps({"apiKeyId": gw.owner, "content": "I like tea", "metadata": too_deep})
    imported = gw.api(
        "POST",
        "/api/memory/import",
        content=line.encode() + b"\n",
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code in (200, 207, 400)
    assert "nested deeper" in imported.text
    assert engine.list_memories(owner=gw.owner).total == 0


def test_the_worst_accepted_metadata_never_breaks_a_listing(gw: Gateway) -> None:
    worst = {"deep": nested(MAX_METADATA_DEPTH - 1)}
    created = gw.api(
        "POST",
        "/api/memory",
        json={"apiKeyId": gw.owner, "content": "I like green tea", "metadata": worst},
    )
    assert created.status_code == 201, created.text
    listing = gw.api("GET", "/api/memory", params={"apiKeyId": gw.owner})
    assert listing.status_code == 200
    kept = listing.json()["data"][0]["metadata"]
    assert {k: v for k, v in kept.items() if k not in ("via", "saidAt")} == worst
    assert kept["via"] == "rest"  # provenance
    one = gw.api("GET", f"/api/memory/{created.json()['id']}")
    assert one.status_code == 200
    assert len(gw.export()) == 1
    preview = gw.api(
        "POST", "/api/memory/retrieve-preview", json={"apiKeyId": gw.owner, "query": "green tea"}
    )
    assert preview.status_code == 200
    assert preview.json()["memories"][0]["id"] == created.json()["id"]


def test_mcp_bodies_get_the_same_depth_limit(gw: Gateway) -> None:
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ' + raw_nested(500) + b"}"
    )
    response = httpx.post(
        f"{gw.url}/mcp",
        content=body,
        headers={
            **AUTH,
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
        timeout=30,
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["field"] == "params"


def test_depth_up_to_the_limit_is_accepted(gw: Gateway) -> None:
    content = raw_nested(MAX_JSON_DEPTH - 3)  # + the body object, messages, message
    body = b'{"model": "m", "messages": [{"role": "user", "content": ' + content + b"}]}"
    response = httpx.post(
        f"{gw.url}/v1/chat/completions",
        content=body,
        headers={"authorization": f"Bearer {gw.key}", "content-type": "application/json"},
        timeout=30,
    )
    # Not a depth error: the gateway's own content check answers (content must be text).
    assert response.json()["error"]["code"] != "nesting_too_deep"


# -- 4. bounded query text ----------------------------------------------------------------


def test_query_window_keeps_the_end_of_a_long_turn_at_a_word() -> None:
    text = "alpha " * 2000 + "the question is about Porto"
    window, cut = query_window(text)
    assert cut
    assert len(window) <= MAX_QUERY_CHARS
    assert window.endswith("about Porto")
    assert window.startswith("alpha")  # a whole word, not "lpha"
    assert query_window("short question") == ("short question", False)


def test_retrieval_reads_only_the_end_of_a_huge_turn(gw: Gateway) -> None:
    lisbon = gw.api(
        "POST", "/api/memory", json={"apiKeyId": gw.owner, "content": "User was born in Lisbon"}
    ).json()["id"]
    porto = gw.api(
        "POST", "/api/memory", json={"apiKeyId": gw.owner, "content": "User works in Porto"}
    ).json()["id"]
    filler = "lorem ipsum dolor sit amet " * 130_000  # ~3.5 MB
    text = f"Lisbon memories first. {filler} Now tell me about Porto."
    with openai.OpenAI(base_url=f"{gw.url}/v1", api_key=gw.key, max_retries=0) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="chat-model", messages=[{"role": "user", "content": text}]
        )
    injected = raw.headers["x-memoryd-memory-ids"].split(",")
    assert porto in injected
    assert lisbon not in injected
    query = "Lisbon first. " + "lorem ipsum " * 2500 + " and Porto?"
    preview = gw.api(
        "POST", "/api/memory/retrieve-preview", json={"apiKeyId": gw.owner, "query": query}
    ).json()
    assert preview["resolution"]["queryTruncated"] is True
    assert [m["id"] for m in preview["memories"]] == [porto]
