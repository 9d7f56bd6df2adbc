"""The gateway end to end: the official `openai` client -> memoryd (real HTTP on
loopback) -> a fake OpenAI-compatible upstream (real HTTP on loopback) that records what
it receives. Ports the reference pipeline cases, adapted to docs/design/injection.md and
docs/design/gateway.md."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
import pytest

from memoryd.app import create_app
from memoryd.config.upstreams import Provider, save_providers
from memoryd.core.injection import format_memory_context
from memoryd.engine import MemoryEngine
from tests.conftest import ADMIN, STORES, add
from tests.fakes import FakeUpstream, serve_asgi


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Every test here runs on the SQLite file and on PostgreSQL."""
    return str(request.param)


@dataclass
class Gateway:
    engine: MemoryEngine
    upstream: FakeUpstream
    url: str
    key: str
    key_id: str
    clients: list[openai.OpenAI] = field(default_factory=list)

    def client(self, key: str | None = None, **headers: str) -> openai.OpenAI:
        client = openai.OpenAI(
            base_url=f"{self.url}/v1",
            api_key=key or self.key,
            max_retries=0,
            default_headers=headers or None,
        )
        self.clients.append(client)  # closed with the fixture: no pooled socket left to GC
        return client


@pytest.fixture
def gateway(engine: MemoryEngine) -> Iterator[Gateway]:
    upstream = FakeUpstream()
    with serve_asgi(upstream.app) as upstream_url:
        save_providers(
            engine.store,
            [
                Provider("default", f"{upstream_url}/v1", "upstream-secret"),
                Provider("glm", f"{upstream_url}/v1", None),
                Provider("mimo", f"{upstream_url}/v1", None),
            ],
        )
        record, secret = engine.keys.create("tester")
        with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
            gateway = Gateway(engine, upstream, url, secret, record.id)
            try:
                yield gateway
            finally:
                for client in gateway.clients:
                    client.close()


def system_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "system"]


def test_empty_store_forwards_the_original_messages(gateway: Gateway) -> None:
    messages = [{"role": "user", "content": "hello there"}]
    reply = gateway.client().chat.completions.create(model="fake-model", messages=messages)
    assert reply.choices[0].message.content == "Sure, noted."
    assert gateway.upstream.last["messages"] == messages
    assert gateway.upstream.last["model"] == "fake-model"
    headers = gateway.upstream.requests[-1]["headers"]
    assert headers["authorization"] == "Bearer upstream-secret"  # never the client's key


def test_stored_memory_is_injected_as_a_leading_system_message(gateway: Gateway) -> None:
    add(gateway.engine, gateway.key_id, "User prefers concise answers about databases")
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="fake-model",
        messages=[
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "tell me about databases"},
        ],
    )
    body = gateway.upstream.last
    assert body["messages"][0] == {
        "role": "system",
        "content": format_memory_context(["User prefers concise answers about databases"]),
    }
    assert body["messages"][1]["content"] == "You are helpful."
    assert raw.headers["x-memoryd-memory-count"] == "1"
    assert int(raw.headers["x-memoryd-memory-tokens"]) > 0
    assert raw.headers["x-memoryd-memory-ids"]


def test_budget_keeps_what_fits(gateway: Gateway) -> None:
    gateway.engine.settings.update({"maxTokens": 30, "strategy": "recent"})
    for i in range(6):
        add(gateway.engine, gateway.key_id, f"fact number {i} " + "x" * 40)  # ~13 tokens each
    gateway.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    injected = system_texts(gateway.upstream.last)[0]
    assert injected.count("fact number") == 2
    assert "fact number 5" in injected
    assert "fact number 4" in injected  # the newest


def test_memory_disabled_means_no_injection_and_no_extraction(gateway: Gateway) -> None:
    add(gateway.engine, gateway.key_id, "User likes hiking in the mountains")
    gateway.engine.keys.set_memory_enabled(gateway.key_id, False)
    gateway.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "I prefer tea. mountains?"}]
    )
    assert system_texts(gateway.upstream.last) == []
    gateway.engine.drain()
    assert gateway.engine.list_memories(owner=gateway.key_id).total == 1


@pytest.mark.parametrize("header", ["x-memoryd-no-memory", "x-omniroute-no-memory"])
def test_no_memory_header_turns_off_both(gateway: Gateway, header: str) -> None:
    add(gateway.engine, gateway.key_id, "User likes hiking in the mountains")
    gateway.client(**{header: "true"}).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "I prefer tea. mountains?"}]
    )
    assert system_texts(gateway.upstream.last) == []
    gateway.engine.drain()
    assert gateway.engine.list_memories(owner=gateway.key_id).total == 1


def test_inject_only_and_extract_only(gateway: Gateway) -> None:
    add(gateway.engine, gateway.key_id, "User likes hiking in the mountains")
    gateway.client(**{"x-memoryd-memory": "inject-only"}).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "I prefer tea. mountains?"}]
    )
    assert system_texts(gateway.upstream.last)
    gateway.engine.drain()
    assert gateway.engine.list_memories(owner=gateway.key_id).total == 1
    gateway.client(**{"x-memoryd-memory": "extract-only"}).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "I prefer coffee. mountains?"}]
    )
    assert system_texts(gateway.upstream.last) == []
    gateway.engine.drain()
    assert gateway.engine.list_memories(owner=gateway.key_id).total == 2


def test_facts_are_learned_for_this_key_and_used_next_time(gateway: Gateway) -> None:
    gateway.engine.settings.update({"strategy": "recent"})  # keyword-only engine here
    other, other_secret = gateway.engine.keys.create("other")
    gateway.client().chat.completions.create(
        model="m",
        messages=[
            {"role": "user", "content": "I prefer TypeScript. I'll use Postgres for this project."}
        ],
    )
    gateway.engine.drain()
    stored = {m.content for m in gateway.engine.list_memories(owner=gateway.key_id).data}
    assert "User prefers TypeScript" in stored
    assert any("Postgres" in s for s in stored)
    assert gateway.engine.list_memories(owner=other.id).total == 0
    gateway.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "which language and database do I use?"}]
    )
    injected = system_texts(gateway.upstream.last)[0]
    assert "TypeScript" in injected
    assert "Postgres" in injected
    # the injected block is not re-extracted: still the same two memories
    gateway.engine.drain()
    assert gateway.engine.list_memories(owner=gateway.key_id).total == len(stored)
    # the other key sees nothing of it
    gateway.client(other_secret).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "which language and database do I use?"}]
    )
    assert system_texts(gateway.upstream.last) == []


def test_assistant_text_is_not_extracted_by_default(gateway: Gateway) -> None:
    gateway.upstream.reply = "I prefer Rust myself."
    gateway.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    gateway.engine.drain()
    assert gateway.engine.list_memories(owner=gateway.key_id).total == 0
    gateway.engine.settings.update({"extractFrom": ["user", "assistant"]})
    gateway.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    gateway.engine.drain()
    assert [m.content for m in gateway.engine.list_memories(owner=gateway.key_id).data] == [
        "User prefers Rust"
    ]


def test_a_tool_result_turn_does_not_queue_the_earlier_user_turn_again(
    gateway: Gateway,
) -> None:
    """A request ending in a tool result carries the user's earlier turn: it was queued
    again, and "I live in Madrid" replaced the newer "I moved to Lyon"."""
    asked = [{"role": "user", "content": "I live in Madrid. What's the weather at home?"}]
    gateway.client().chat.completions.create(model="m", messages=asked)  # type: ignore[arg-type]
    gateway.engine.drain()
    gateway.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "I moved to Lyon last week."}]
    )
    gateway.engine.drain()
    scheduled = gateway.engine.extraction_stats["scheduled"]
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    gateway.client().chat.completions.create(
        model="m",
        messages=[  # type: ignore[arg-type]
            *asked,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
    )
    gateway.engine.drain()
    assert gateway.engine.extraction_stats["scheduled"] == scheduled
    current = [m.content for m in gateway.engine.list_memories(owner=gateway.key_id).data]
    assert current == ["User moved to Lyon last week and lives there now"]


def test_sessions_are_separate_with_session_scope(gateway: Gateway) -> None:
    gateway.engine.settings.update({"scope": "session", "strategy": "recent"})
    add(gateway.engine, gateway.key_id, "fact from session one", session_id="s1")
    add(gateway.engine, gateway.key_id, "fact from session two", session_id="s2")
    raw = gateway.client(
        **{"x-memoryd-session-id": "s1"}
    ).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert raw.headers["x-memoryd-session-id"] == "s1"
    injected = system_texts(gateway.upstream.last)[0]
    assert "session one" in injected
    assert "session two" not in injected
    gateway.client(**{"x-omniroute-session-id": "s2"}).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "I prefer green tea."}]
    )
    assert "session two" in system_texts(gateway.upstream.last)[0]
    gateway.engine.drain()
    learned = [
        m
        for m in gateway.engine.list_memories(owner=gateway.key_id).data
        if "green tea" in m.content
    ]
    assert learned[0].session_id == "s2"


@pytest.mark.parametrize("model", ["o1-mini", "glm/glm-4"])
def test_providers_without_system_role_get_a_user_message(gateway: Gateway, model: str) -> None:
    add(gateway.engine, gateway.key_id, "User prefers metric units")
    gateway.client().chat.completions.create(
        model=model, messages=[{"role": "user", "content": "how far is it in units?"}]
    )
    body = gateway.upstream.last
    assert body["messages"][0]["role"] == "user"
    assert body["messages"][0]["content"].startswith("Memory context:")
    assert body["model"] == model.split("/")[-1]  # "glm/glm-4" routed to provider glm as glm-4


def test_mimo_merges_into_the_first_system_message(gateway: Gateway) -> None:
    add(gateway.engine, gateway.key_id, "User prefers metric units")
    gateway.client().chat.completions.create(
        model="mimo/mimo-7b",
        messages=[{"role": "system", "content": "SYS"}, {"role": "user", "content": "units?"}],
    )
    body = gateway.upstream.last
    assert system_texts(body) == [format_memory_context(["User prefers metric units"]) + "\nSYS"]
    assert body["messages"][0]["role"] == "system"


def test_cache_control_places_memory_before_the_last_user_turn(gateway: Gateway) -> None:
    add(gateway.engine, gateway.key_id, "User prefers metric units")
    system = {
        "role": "system",
        "content": [
            {"type": "text", "text": "SYSTEM PROMPT", "cache_control": {"type": "ephemeral"}}
        ],
    }
    messages = [
        system,
        {"role": "user", "content": "turn 1"},
        {"role": "assistant", "content": "answer 1"},
        {"role": "user", "content": "units for turn 2"},
    ]
    http = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {gateway.key}"},
        json={"model": "m", "messages": messages},
    )
    assert http.status_code == 200
    sent = gateway.upstream.last["messages"]
    assert sent[:3] == messages[:3]
    assert sent[3]["content"].startswith("Memory context:")
    assert sent[4] == messages[3]


def test_top_level_system_field_is_merged(gateway: Gateway) -> None:
    add(gateway.engine, gateway.key_id, "User prefers metric units")
    http = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {gateway.key}"},
        json={
            "model": "m",
            "system": "Be brief",
            "messages": [{"role": "user", "content": "units?"}],
        },
    )
    assert http.status_code == 200
    body = gateway.upstream.last
    assert body["system"].startswith(format_memory_context(["User prefers metric units"]))
    assert body["system"].endswith("Be brief")
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_streaming_relays_chunks_before_the_upstream_finishes(gateway: Gateway) -> None:
    gateway.upstream.reply = "one two three four five"
    gateway.upstream.chunk_delay_s = 0.3
    gateway.engine.settings.update({"extractFrom": ["user", "assistant"]})
    start = time.monotonic()
    arrivals = []
    stream = gateway.client().chat.completions.create(
        model="m", stream=True, messages=[{"role": "user", "content": "I prefer short answers."}]
    )
    text = ""
    for chunk in stream:
        arrivals.append(time.monotonic() - start)
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    assert text == "one two three four five"
    assert arrivals[0] < 1.0  # the first chunk came long before the ~1.5 s stream ended
    assert arrivals[-1] - arrivals[0] > 0.9
    gateway.engine.drain()
    contents = {m.content for m in gateway.engine.list_memories(owner=gateway.key_id).data}
    assert "User prefers short answers" in contents


def test_upstream_errors_pass_through(gateway: Gateway) -> None:
    gateway.upstream.status = 429
    gateway.upstream.error_body = {"error": {"message": "slow down", "type": "rate_limit"}}
    with pytest.raises(openai.RateLimitError) as caught:
        gateway.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.status_code == 429
    assert caught.value.body == {"message": "slow down", "type": "rate_limit"}
    gateway.upstream.status = 500
    with pytest.raises(openai.InternalServerError):
        gateway.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )


def test_upstream_down_is_502_in_openai_shape(gateway: Gateway) -> None:
    save_providers(gateway.engine.store, [Provider("default", "http://127.0.0.1:9/v1", None)])
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {gateway.key}"},
        json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 502
    error = response.json()["error"]
    assert {"message", "type", "code"} <= set(error)


def test_missing_unknown_and_revoked_keys_are_401(gateway: Gateway) -> None:
    with pytest.raises(openai.AuthenticationError):
        gateway.client("mk_not-a-real-key").chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    response = httpx.post(f"{gateway.url}/v1/chat/completions", json={"messages": []})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert gateway.engine.keys.revoke(gateway.key_id)
    with pytest.raises(openai.AuthenticationError):
        gateway.client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    # the admin token is not a client key either
    with pytest.raises(openai.AuthenticationError):
        gateway.client(ADMIN).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )


def test_memory_failure_never_fails_the_request(gateway: Gateway) -> None:
    add(gateway.engine, gateway.key_id, "User likes hiking")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("store down")

    gateway.engine.recall = broken  # type: ignore[method-assign]
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hiking?"}]
    )
    assert raw.http_response.status_code == 200
    assert raw.headers["x-memoryd-memory-count"] == "0"
    assert system_texts(gateway.upstream.last) == []


def test_models_pass_through(gateway: Gateway) -> None:
    models = gateway.client().models.list()
    assert [m.id for m in models.data] == ["fake-model"]


def test_no_upstream_is_a_clear_503(engine: MemoryEngine) -> None:
    _, secret = engine.keys.create("k")
    with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
        response = httpx.post(
            f"{url}/v1/chat/completions",
            headers={"Authorization": f"Bearer {secret}"},
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
        )
    assert response.status_code == 503
    assert "MEMORYD_UPSTREAM_BASE_URL" in response.json()["error"]["message"]


def _user(content: str | bytes) -> bytes:
    """A request body whose one user message has ``content`` (raw JSON text)."""
    raw = content.encode() if isinstance(content, str) else content
    return b'{"model": "m", "messages": [{"role": "user", "content": ' + raw + b"}]}"


#: (raw body, the error's ``param``, words its message must contain)
MALFORMED: list[tuple[bytes, str | None, str]] = [
    (b"not json", None, "not valid JSON"),
    (b"[1,2]", None, "JSON object"),
    (b'{"model": "m"}', "messages", "'messages'"),
    (b'{"messages": "hi"}', "messages", "'messages'"),
    (b'{"messages": []}', "messages", "'messages'"),
    (b'{"messages": [42]}', "messages[0]", "'role'"),
    (b'{"messages": [{"content": "x"}]}', "messages[0]", "'role'"),
    (b'{"model": 5, "messages": [{"role": "user", "content": "x"}]}', "model", "'model'"),
    (b"\xff\xfe", None, "not valid JSON"),
    # not UTF-8 inside a JSON string: a 400, never a 500
    (_user(b'"\xff\xfe"'), None, "not valid UTF-8"),
    # content that is neither a string nor an array of parts
    (_user("42"), "messages[0].content", "string or an array of content parts, got number"),
    (_user("{}"), "messages[0].content", "got object"),
    (_user("true"), "messages[0].content", "got boolean"),
    (_user("null"), "messages[0].content", "required for a 'user' message"),
    (b'{"messages": [{"role": "system"}]}', "messages[0].content", "required for a 'system'"),
    # parts of an unknown type, or not parts at all
    (
        _user('[{"type": "text", "text": "hi"}, {"type": "hologram", "hologram": {}}]'),
        "messages[0].content[1].type",
        "must be one of text, image_url, input_audio, file, refusal, input_text, input_image, "
        "video_url, audio_url; got 'hologram'",
    ),
    (_user('[{"type": "tex", "text": "x"}]'), "messages[0].content[0].type", "'tex'"),
    (_user('[{"text": "no type"}]'), "messages[0].content[0].type", "got none"),
    (_user('[{"type": 7}]'), "messages[0].content[0].type", "got number"),
    (_user('["just a string"]'), "messages[0].content[0]", "content part object, got string"),
    (_user("[[]]"), "messages[0].content[0]", "got array"),
    # a text part needs a string text
    (_user('[{"type": "text"}]'), "messages[0].content[0].text", "must be a string"),
    (_user('[{"type": "text", "text": 5}]'), "messages[0].content[0].text", "got number"),
    (
        b'{"messages": [{"role": "user", "content": "ok"}, {"role": "assistant", "content": 42}]}',
        "messages[1].content",
        "messages[1].content must be a string",
    ),
]


def test_malformed_requests_are_clear_4xx(gateway: Gateway) -> None:
    auth = {"Authorization": f"Bearer {gateway.key}"}
    url = f"{gateway.url}/v1/chat/completions"
    for raw, param, words in MALFORMED:
        response = httpx.post(
            url, headers={**auth, "content-type": "application/json"}, content=raw
        )
        assert response.status_code == 400, raw
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}, raw
        assert error["type"] == "invalid_request_error", raw
        assert error["param"] == param, raw
        assert words in error["message"], (raw, error["message"])
    assert not gateway.upstream.requests  # nothing malformed was forwarded


def test_content_openai_accepts_is_forwarded(gateway: Gateway) -> None:
    """The content check is no stricter than OpenAI: null content on an assistant turn
    with tool_calls and on a tool result, every part type, extra keys in a part."""
    messages: list[dict[str, Any]] = [
        {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
                {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-1"}},
                {"type": "video_url", "video_url": {"url": "https://example.invalid/v.mp4"}},
                {"type": "input_text", "text": "as newer clients send it"},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": None},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
        {"role": "assistant", "tool_calls": []},  # content left out
        {"role": "user", "content": ""},
    ]
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {gateway.key}"},
        json={"model": "m", "messages": messages},
    )
    assert response.status_code == 200, response.text
    assert gateway.upstream.last["messages"] == messages


def test_client_disconnect_cancels_the_upstream_stream(gateway: Gateway) -> None:
    gateway.upstream.reply = " ".join(f"w{i}" for i in range(40))
    gateway.upstream.chunk_delay_s = 0.1
    done = threading.Event()

    def read_two() -> None:
        with httpx.stream(
            "POST",
            f"{gateway.url}/v1/chat/completions",
            headers={"Authorization": f"Bearer {gateway.key}"},
            json={
                "model": "m",
                "stream": True,
                "messages": [{"role": "user", "content": "I prefer jazz."}],
            },
        ) as response:
            for i, _ in enumerate(response.iter_raw()):
                if i >= 1:
                    break
        done.set()

    thread = threading.Thread(target=read_two)
    thread.start()
    thread.join(timeout=10)
    assert done.is_set()
    time.sleep(0.5)
    gateway.engine.drain()
    # the stream never completed, so nothing was extracted from it
    assert gateway.engine.list_memories(owner=gateway.key_id).total == 0


def test_gateway_posts_are_served_by_the_direct_routes(engine: MemoryEngine) -> None:
    """A chat call is matched by the plain route tried first (no FastAPI dependency
    machinery); the OpenAPI schema still documents it, and a wrong method is a 405."""
    from fastapi.routing import APIRoute

    upstream = FakeUpstream()
    app = create_app(engine, admin_token=ADMIN)
    served: list[object] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        await app(scope, receive, send)
        if scope["type"] == "http":
            served.append(scope.get("route"))

    with serve_asgi(upstream.app) as upstream_url:
        save_providers(engine.store, [Provider("default", f"{upstream_url}/v1", "up")])
        _, secret = engine.keys.create("direct")
        with serve_asgi(recording) as url:
            with openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0) as client:
                reply = client.chat.completions.create(
                    model="chat-model", messages=[{"role": "user", "content": "hello"}]
                )
            assert reply.choices[0].message.content
            wrong = httpx.get(f"{url}/v1/chat/completions", timeout=30)
            schema = httpx.get(f"{url}/openapi.json", timeout=30).json()
    route = served[0]
    assert getattr(route, "path", None) == "/v1/chat/completions"
    assert not isinstance(route, APIRoute)
    assert wrong.status_code == 405
    assert "error" in wrong.json()
    assert "post" in schema["paths"]["/v1/chat/completions"]
    assert engine.drain(timeout=30)
