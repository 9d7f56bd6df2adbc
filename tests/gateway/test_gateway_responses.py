"""The OpenAI Responses API through memoryd: the official ``openai`` client's
``responses.create`` -> memoryd on loopback -> a fake upstream speaking the Responses
wire format, which records what it receives."""

from __future__ import annotations

import httpx
import openai
import pytest

from memoryd.core.injection import format_memory_context
from tests.conftest import STORES, add
from tests.wire_support import OPENAI_SECRET, Wire, block_lines

FACTS = "Quick one: I'm allergic to penicillin and my cat is named Luna. What should I pack?"


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_memory_goes_before_the_clients_own_instructions_which_keep_their_text(
    wire: Wire,
) -> None:
    add(wire.engine, wire.owner, "User prefers concise answers about databases")
    raw = wire.openai().responses.with_raw_response.create(
        model="gpt-fake",
        instructions="You are a terse assistant.",
        input="tell me about databases",
    )
    reply = raw.parse()
    assert reply.output_text == wire.openai_upstream.reply
    sent = wire.openai_upstream.last
    block = format_memory_context(["User prefers concise answers about databases"])
    assert sent["instructions"] == block + "\n\nYou are a terse assistant."
    assert sent["input"] == "tell me about databases"  # the client's input untouched
    assert wire.openai_upstream.requests[-1]["path"] == "/v1/responses"
    headers = wire.openai_upstream.requests[-1]["headers"]
    assert headers["authorization"] == f"Bearer {OPENAI_SECRET}"
    assert wire.key not in str(headers)
    assert raw.headers["x-memoryd-memory-count"] == "1"


def test_input_items_with_input_text_parts_are_the_query(wire: Wire) -> None:
    add(wire.engine, wire.owner, "User's favourite database is PostgreSQL")
    add(wire.engine, wire.owner, "User's dog is named Rex")
    wire.openai().responses.create(
        model="gpt-fake",
        input=[
            {"role": "user", "content": "hello"},
            {"type": "message", "role": "assistant", "content": "hi"},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "which database do I like?"}],
            },
        ],
    )
    sent = wire.openai_upstream.last
    assert block_lines(sent["instructions"]) == ["User's favourite database is PostgreSQL"]
    assert "instructions" in sent
    assert len(sent["input"]) == 3


def test_a_stream_relays_every_event_in_order_and_is_extracted_once(wire: Wire) -> None:
    wire.openai_upstream.reply = "Pack antihistamines and a photo of Luna."
    before = wire.scheduled()
    events = list(wire.openai().responses.create(model="gpt-fake", input=FACTS, stream=True))
    with openai.OpenAI(
        base_url=wire.openai_url, api_key="direct", max_retries=0
    ) as direct:  # the same stream straight from the upstream, for comparison
        expected = list(direct.responses.create(model="gpt-fake", input="x", stream=True))
    assert [e.type for e in events] == [e.type for e in expected]
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == wire.openai_upstream.reply
    assert events[-1].type == "response.completed"
    assert wire.memories() == ["User is allergic to penicillin", "User's cat is named Luna"]
    assert wire.scheduled() == before + 1  # one extraction for the exchange


def test_a_non_streaming_response_is_extracted_from_its_input(wire: Wire) -> None:
    wire.openai().responses.create(model="gpt-fake", input=FACTS)
    assert wire.memories() == ["User is allergic to penicillin", "User's cat is named Luna"]


def test_a_function_call_output_going_back_is_not_extracted_again(wire: Wire) -> None:
    add(wire.engine, wire.owner, "User's cat is named Luna")
    wire.openai().responses.create(
        model="gpt-fake",
        input=[
            {"role": "user", "content": "I'm allergic to penicillin. What is my cat's name?"},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "lookup",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        ],
    )
    assert wire.memories() == ["User's cat is named Luna"]  # no new turn of the user's
    # ... while retrieval still used the user's last words
    assert block_lines(wire.openai_upstream.last["instructions"]) == ["User's cat is named Luna"]


def test_previous_response_id_and_store_pass_through_untouched(wire: Wire) -> None:
    wire.openai().responses.create(
        model="gpt-fake", input="and then?", previous_response_id="resp_0", store=False
    )
    sent = wire.openai_upstream.last
    assert sent["previous_response_id"] == "resp_0"
    assert sent["store"] is False


def test_end_users_named_by_user_or_safety_identifier_stay_apart(wire: Wire) -> None:
    client = wire.openai()
    client.responses.create(model="gpt-fake", input="My cat is named Luna.", user="alice")
    client.responses.create(
        model="gpt-fake", input="My cat is named Mochi.", safety_identifier="bob"
    )
    assert wire.memories("alice") == ["User's cat is named Luna"]
    assert wire.memories("bob") == ["User's cat is named Mochi"]
    client.responses.create(model="gpt-fake", input="What is my cat's name?", user="bob")
    assert block_lines(wire.openai_upstream.last["instructions"]) == ["User's cat is named Mochi"]


def test_the_no_memory_header_skips_injection_and_extraction(wire: Wire) -> None:
    add(wire.engine, wire.owner, "User's cat is named Luna")
    wire.openai(**{"x-memoryd-no-memory": "true"}).responses.create(
        model="gpt-fake", instructions="Be brief.", input="My dog is named Rex. My cat?"
    )
    assert wire.openai_upstream.last["instructions"] == "Be brief."
    assert wire.memories() == ["User's cat is named Luna"]


def test_an_upstream_error_comes_back_in_openais_shape(wire: Wire) -> None:
    wire.openai_upstream.status = 400
    wire.openai_upstream.error_body = {
        "error": {"message": "bad input", "type": "invalid_request_error", "param": "input"}
    }
    with pytest.raises(openai.BadRequestError) as caught:
        wire.openai().responses.create(model="gpt-fake", input="My cat is named Luna.")
    assert caught.value.body == wire.openai_upstream.error_body["error"]
    assert wire.memories() == []  # a failed call is not remembered


def test_our_own_errors_are_in_openais_shape(wire: Wire) -> None:
    with pytest.raises(openai.AuthenticationError):
        wire.openai(key="not-a-key").responses.create(model="gpt-fake", input="hi")
    response = httpx.post(
        f"{wire.url}/v1/responses",
        headers={"authorization": f"Bearer {wire.key}"},
        json={"model": "gpt-fake", "input": 42},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "input"
    assert "string or an array" in error["message"]
    assert wire.openai_upstream.requests == []  # nothing malformed was forwarded


def test_a_broken_upstream_stream_raises_in_the_client_and_is_not_extracted(
    wire: Wire,
) -> None:
    wire.openai_upstream.reply = "one two three four five"
    wire.openai_upstream.break_after = 2
    seen: list[str] = []
    stream = wire.openai().responses.create(model="gpt-fake", input=FACTS, stream=True)
    with pytest.raises(openai.APIError) as caught:  # raised on memoryd's error event
        seen.extend(event.type for event in stream)
    assert "stream broke" in caught.value.message
    assert "response.completed" not in seen
    assert seen.count("response.output_text.delta") == 2
    assert wire.memories() == []
