"""Anthropic's Messages API through memoryd: the official ``anthropic``
client's ``messages.create`` and ``messages.stream`` -> memoryd on loopback -> a fake
upstream speaking Anthropic's wire format, which records what it receives."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest

from memoryd.core.injection import format_memory_context
from tests.conftest import STORES, add
from tests.wire_support import ANTHROPIC_SECRET, Wire, block_lines

MODEL = "claude-fake"
FACTS = "Quick one: I'm allergic to penicillin and my cat is named Luna. What should I pack?"


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def ask(wire: Wire, text: str, **fields: Any) -> anthropic.types.Message:
    client = fields.pop("client", None) or wire.anthropic()
    fields.setdefault("model", MODEL)
    return client.messages.create(
        max_tokens=64, messages=[{"role": "user", "content": text}], **fields
    )


def test_memory_goes_into_a_string_system_which_keeps_its_text(wire: Wire) -> None:
    add(wire.engine, wire.owner, "User prefers concise answers about databases")
    reply = ask(wire, "tell me about databases", system="You are a terse assistant.")
    assert reply.content[0].text == wire.anthropic_upstream.reply  # type: ignore[union-attr]
    sent = wire.anthropic_upstream.last
    block = format_memory_context(["User prefers concise answers about databases"])
    assert sent["system"] == block + "\n\nYou are a terse assistant."
    assert sent["messages"] == [{"role": "user", "content": "tell me about databases"}]
    record = wire.anthropic_upstream.requests[-1]
    assert record["path"] == "/v1/messages"
    assert record["headers"]["x-api-key"] == ANTHROPIC_SECRET  # the provider's key only
    assert record["headers"]["anthropic-version"]  # the client's, passed through
    assert wire.key not in str(record["headers"])


def test_without_a_system_the_block_becomes_the_system(wire: Wire) -> None:
    add(wire.engine, wire.owner, "User's favourite database is PostgreSQL")
    ask(wire, "which database do I like?")
    assert block_lines(wire.anthropic_upstream.last["system"]) == [
        "User's favourite database is PostgreSQL"
    ]


def test_a_cached_system_prefix_stays_byte_identical(wire: Wire) -> None:
    add(wire.engine, wire.owner, "User's favourite database is PostgreSQL")
    system = [
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Project rules: be brief."},
    ]
    ask(wire, "which database do I like?", system=system)
    sent = wire.anthropic_upstream.last["system"]
    assert sent[: len(system)] == system  # every block up to the breakpoint unchanged
    assert len(sent) == len(system) + 1
    assert block_lines(sent[-1]["text"]) == ["User's favourite database is PostgreSQL"]
    assert "cache_control" not in sent[-1]  # no breakpoint of ours (Anthropic allows 4)


def test_without_caching_a_block_list_gets_the_memory_first(wire: Wire) -> None:
    add(wire.engine, wire.owner, "User's favourite database is PostgreSQL")
    system = [{"type": "text", "text": "Be brief."}]
    ask(wire, "which database do I like?", system=system)
    sent = wire.anthropic_upstream.last["system"]
    assert sent[1:] == system
    assert block_lines(sent[0]["text"])


def test_a_stream_relays_every_event_in_order_and_is_extracted_once(wire: Wire) -> None:
    wire.anthropic_upstream.reply = "Pack antihistamines and a photo of Luna."
    before = wire.scheduled()
    events = list(
        wire.anthropic().messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": FACTS}], stream=True
        )
    )
    with anthropic.Anthropic(base_url=wire.anthropic_url, api_key="direct") as direct:
        expected = list(
            direct.messages.create(
                model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "x"}], stream=True
            )
        )
    assert [e.type for e in events] == [e.type for e in expected]
    assert events[-1].type == "message_stop"
    assert wire.memories() == ["User is allergic to penicillin", "User's cat is named Luna"]
    assert wire.scheduled() == before + 1


def test_the_stream_helper_gets_the_whole_text(wire: Wire) -> None:
    wire.anthropic_upstream.reply = "Here is a packing list."
    with wire.anthropic().messages.stream(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": FACTS}]
    ) as stream:
        text = stream.get_final_text()
    assert text == "Here is a packing list."
    assert wire.memories() == ["User is allergic to penicillin", "User's cat is named Luna"]


def test_a_bearer_token_is_accepted_as_the_key(wire: Wire) -> None:
    ask(wire, "hello", client=wire.anthropic(bearer=True))
    headers = wire.anthropic_upstream.requests[-1]["headers"]
    assert "authorization" not in headers
    assert headers["x-api-key"] == ANTHROPIC_SECRET


def test_claude_codes_user_id_names_one_end_user_across_sessions(wire: Wire) -> None:
    alice = "user_5f3a_account_1111_session_{}"
    ask(wire, "My cat is named Luna.", metadata={"user_id": alice.format("aaaa")})
    ask(wire, "My cat is named Mochi.", metadata={"user_id": "user_9b2c_account_2222_session_x"})
    assert wire.memories("user_5f3a_account_1111") == ["User's cat is named Luna"]
    ask(wire, "What is my cat's name?", metadata={"user_id": alice.format("bbbb")})
    assert block_lines(wire.anthropic_upstream.last["system"]) == ["User's cat is named Luna"]


def test_only_claude_codes_whole_user_id_shape_loses_its_session_part(wire: Wire) -> None:
    """Any id ending in ``_session_<x>`` lost that part, so ``acme_session_1`` and
    ``acme_session_2`` were one end user and read each other's memories."""
    ask(wire, "My cat is named Luna.", metadata={"user_id": "acme_session_1"})
    assert wire.memories("acme_session_1") == ["User's cat is named Luna"]
    ask(wire, "What is my cat's name?", metadata={"user_id": "acme_session_2"})
    assert block_lines(wire.anthropic_upstream.last.get("system") or "") == []
    ask(wire, "What is my cat's name?", metadata={"user_id": "acme_session_1"})
    assert block_lines(wire.anthropic_upstream.last["system"]) == ["User's cat is named Luna"]


def test_a_user_id_that_is_not_a_string_is_refused(wire: Wire) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(wire, "I have diabetes.", metadata={"user_id": 4711})
    assert "metadata.user_id" in str(caught.value)
    assert wire.memories() == []


def test_a_tool_result_turn_is_not_extracted_but_retrieval_uses_the_last_human_words(
    wire: Wire,
) -> None:
    add(wire.engine, wire.owner, "User's cat is named Luna")
    before = wire.scheduled()
    wire.anthropic().messages.create(
        model=MODEL,
        max_tokens=64,
        messages=[
            {"role": "user", "content": "I'm allergic to penicillin. What is my cat's name?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "tu_1", "name": "look", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "ok"}],
            },
        ],
    )
    assert wire.scheduled() == before
    assert block_lines(wire.anthropic_upstream.last["system"]) == ["User's cat is named Luna"]


def test_system_reminders_are_not_the_users_words(wire: Wire) -> None:
    content = [
        {"type": "text", "text": "<system-reminder>My name is Claude Code.</system-reminder>"},
        {"type": "text", "text": "My cat is named Luna."},
    ]
    wire.anthropic().messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": content}]
    )
    assert wire.memories() == ["User's cat is named Luna"]


def test_the_no_memory_header_skips_injection_and_extraction(wire: Wire) -> None:
    add(wire.engine, wire.owner, "User's cat is named Luna")
    ask(wire, "My dog is named Rex. My cat?", client=wire.anthropic(**{"x-memoryd-no-memory": "1"}))
    assert "system" not in wire.anthropic_upstream.last
    assert wire.memories() == ["User's cat is named Luna"]


def test_an_upstream_error_comes_back_in_anthropics_shape(wire: Wire) -> None:
    wire.anthropic_upstream.status = 400
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(wire, "My cat is named Luna.")
    assert caught.value.body == wire.anthropic_upstream.error_body
    assert wire.memories() == []


def test_our_own_errors_are_in_anthropics_shape(wire: Wire) -> None:
    with pytest.raises(anthropic.AuthenticationError) as caught:
        ask(wire, "hi", client=wire.anthropic(key="not-a-key"))
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == "authentication_error"
    assert body["error"]["message"].startswith("invalid or revoked API key: /v1 takes")
    response = httpx.post(
        f"{wire.url}/v1/messages",
        headers={"x-api-key": wire.key, "anthropic-version": "2023-06-01"},
        json={"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": 7}]},
    )
    assert response.status_code == 400
    body = response.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert "messages.0.content" in body["error"]["message"]
    too_big = httpx.post(
        f"{wire.url}/v1/messages",
        headers={"x-api-key": wire.key},
        content=b"{" + b" " * (wire.engine.config.max_body_bytes + 1) + b"}",
    )
    assert too_big.status_code == 413
    assert too_big.json()["error"]["type"] == "request_too_large"
    assert wire.anthropic_upstream.requests == []


def test_an_openai_provider_cannot_serve_the_messages_api(wire: Wire) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(wire, "hi", model="default/gpt-fake")
    assert "kind anthropic" in str(caught.value)


def test_a_broken_upstream_stream_raises_in_the_client_and_is_not_extracted(
    wire: Wire,
) -> None:
    wire.anthropic_upstream.reply = "one two three four five"
    wire.anthropic_upstream.break_after = 2
    seen: list[str] = []
    stream = wire.anthropic().messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": FACTS}], stream=True
    )
    with pytest.raises(anthropic.APIStatusError) as caught:  # raised on memoryd's error event
        seen.extend(event.type for event in stream)
    assert "stream broke" in str(caught.value)
    assert "message_stop" not in seen
    assert seen.count("content_block_delta") == 2
    assert wire.memories() == []


def test_count_tokens_and_models_pass_through(wire: Wire) -> None:
    client = wire.anthropic()
    count = client.messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": "one two three"}]
    )
    assert count.input_tokens == 3  # the client's words only: no memory added
    assert wire.anthropic_upstream.requests[-1]["path"] == "/v1/messages/count_tokens"
    assert [m.id for m in client.models.list()] == ["claude-fake"]


def test_an_unreachable_provider_is_an_anthropic_shaped_502(wire: Wire) -> None:
    from memoryd.config.upstreams import Provider, save_providers, stored_providers

    save_providers(
        wire.engine.store,
        [
            *stored_providers(wire.engine.store),
            Provider("down", "http://127.0.0.1:9", kind="anthropic"),
        ],
    )
    with pytest.raises(anthropic.APIStatusError) as caught:
        ask(wire, "hi", model="down/claude-fake")
    assert caught.value.status_code == 502
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "api_error", "message": caught.value.body["error"]["message"]},
    }
    assert "upstream down is unreachable" in caught.value.body["error"]["message"]


def test_with_caching_the_same_memories_give_the_same_block_bytes(wire: Wire) -> None:
    """The block is in the cached prefix: two turns that retrieve the same memories in a
    different order must still send byte-identical systems, or the cache misses."""
    add(wire.engine, wire.owner, "User's favourite database is PostgreSQL")
    add(wire.engine, wire.owner, "User's favourite editor is Helix")
    system = [{"type": "text", "text": "Rules", "cache_control": {"type": "ephemeral"}}]
    sent = []
    for question in ("my favourite database: PostgreSQL?", "my favourite editor: Helix?"):
        ask(wire, question, system=system)
        sent.append(wire.anthropic_upstream.last["system"])
    assert len(block_lines(sent[0][-1]["text"])) == 2
    assert sent[0] == sent[1]


def test_a_cached_conversation_gets_the_block_after_its_last_breakpoint(wire: Wire) -> None:
    """Claude Code caches the conversation (``cache_control`` on the newest turn): the
    block is the last block of that turn, after the breakpoint, so system and every
    earlier turn stay byte-identical, now and when the turn is sent again without it."""
    add(wire.engine, wire.owner, "User's favourite database is PostgreSQL")
    system = [{"type": "text", "text": "You are Claude Code."}]
    history = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
    ]
    newest = {
        "role": "user",
        "content": [
            {"type": "text", "text": "which database do I like?"},
            {"type": "text", "text": "(be brief)", "cache_control": {"type": "ephemeral"}},
        ],
    }
    wire.anthropic().messages.create(
        model=MODEL, max_tokens=64, system=system, messages=[*history, newest]
    )
    sent = wire.anthropic_upstream.last
    assert sent["system"] == system  # untouched
    assert sent["messages"][:2] == history
    blocks = sent["messages"][2]["content"]
    assert blocks[:2] == newest["content"]  # up to and including the breakpoint
    assert block_lines(blocks[2]["text"]) == ["User's favourite database is PostgreSQL"]
    assert "cache_control" not in blocks[2]


def test_an_unreachable_upstream_leaks_no_pool_slot(wire: Wire) -> None:
    """Every way a call can end gives its pool slot back (an invalid provider URL, a
    refused connection): afterwards the pool is whole."""
    from memoryd.config.upstreams import Provider, save_providers, stored_providers

    save_providers(
        wire.engine.store,
        [
            *stored_providers(wire.engine.store),
            Provider("badport", "http://127.0.0.1:99999", kind="anthropic"),
            Provider("down", "http://127.0.0.1:9", kind="anthropic"),
        ],
    )
    for name in ("badport", "down", "badport", "down"):
        with pytest.raises(anthropic.APIStatusError) as caught:
            ask(wire, "hi", model=f"{name}/claude-fake")
        assert caught.value.status_code == 502
    assert ask(wire, "hello").content  # the pool still serves
    assert wire.free_slots() == wire.engine.config.upstream_max_connections


def test_routes_we_lack_answer_in_each_clients_own_shape(wire: Wire) -> None:
    """An SDK calling a route memoryd does not serve (Message Batches, a wrong method)
    gets its own error class with a message naming the route, never our REST shape."""
    client = wire.anthropic()
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.messages.batches.create(
            requests=[{"custom_id": "a", "params": {"model": "m", "max_tokens": 8, "messages": []}}]
        )
    assert missing.value.body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": "Not Found: POST /v1/messages/batches"},
    }
    headers = {"x-api-key": wire.key, "anthropic-version": "2023-06-01"}
    wrong = httpx.get(f"{wire.url}/v1/messages", headers=headers, timeout=30)
    assert wrong.status_code == 405
    assert wrong.json()["type"] == "error"
    assert wrong.json()["error"]["type"] == "api_error"
    assert "GET /v1/messages" in wrong.json()["error"]["message"]
    # OpenAI's clients under /v1/ get OpenAI's shape; the REST API keeps its own.
    with pytest.raises(openai.NotFoundError) as gone:
        wire.openai().files.list()
    assert gone.value.body == {
        "message": "Not Found: GET /v1/files",
        "type": "not_found_error",
        "param": None,
        "code": "not_found",
    }
    rest = httpx.get(f"{wire.url}/api/nothing-here", timeout=30)
    assert rest.status_code == 404
    assert rest.json()["error"]["code"] == "not_found"
