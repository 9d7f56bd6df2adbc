"""The fake upstreams speak their providers' wire formats faithfully: the official
``openai`` and ``anthropic`` clients (no memoryd in between) parse every response and
every streamed event, and each raw event validates against the SDK's own type."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic.types import Message, MessageTokensCount, ModelInfo, RawMessageStreamEvent
from openai.types import CreateEmbeddingResponse
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from memoryd.testing import FakeAnthropicUpstream, FakeUpstream, serve_asgi

REPLY = "Lisbon is lovely in spring."
WORDS = ["Lisbon ", "is ", "lovely ", "in ", "spring."]
USER: list[Any] = [{"role": "user", "content": "I live in Lisbon."}]

RESPONSE_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    *["response.output_text.delta"] * len(WORDS),
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]
MESSAGE_EVENTS = [
    "message_start",
    "content_block_start",
    "ping",
    *["content_block_delta"] * len(WORDS),
    "content_block_stop",
    "message_delta",
    "message_stop",
]


@pytest.fixture
def oa() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream()
    fake.reply = REPLY
    with serve_asgi(fake.app) as url:
        yield fake, url


@pytest.fixture
def an() -> Iterator[tuple[FakeAnthropicUpstream, str]]:
    fake = FakeAnthropicUpstream()
    fake.reply = REPLY
    with serve_asgi(fake.app) as url:
        yield fake, url


def openai_client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0)


def anthropic_client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)


def raw_events(url: str, body: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """A stream's SSE events read with plain httpx: (``event:`` name, parsed data)."""
    events: list[tuple[str | None, dict[str, Any]]] = []
    with httpx.Client(timeout=30) as client, client.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for block in response.read().decode().split("\n\n"):
            if not block.strip():
                continue
            fields = dict(line.split(": ", 1) for line in block.split("\n"))
            assert set(fields) <= {"event", "data"}
            events.append((fields.get("event"), json.loads(fields["data"])))
    return events


# -- OpenAI: the Responses API ------------------------------------------------------------


def test_responses_create_returns_a_whole_response(oa: tuple[FakeUpstream, str]) -> None:
    fake, url = oa
    with openai_client(url) as client:
        response = client.responses.create(model="gpt-fake", input="I live in Lisbon.")
    assert response.output_text == REPLY
    assert (response.id, response.status, response.model) == ("resp_1", "completed", "gpt-fake")
    assert response.usage is not None
    assert response.usage.output_tokens == len(WORDS)
    assert response.usage.input_tokens == 4
    record = fake.requests[-1]
    assert record["path"] == "/v1/responses"
    assert record["body"] == fake.last == {"model": "gpt-fake", "input": "I live in Lisbon."}
    assert record["headers"]["authorization"] == "Bearer sk-test"
    # Every field the SDK's type requires is there (the SDK itself does not validate).
    raw = httpx.post(f"{url}/v1/responses", json={"model": "m", "input": "hi"}, timeout=30)
    assert Response.model_validate(raw.json()).output_text == REPLY


def test_responses_stream_sends_the_real_event_sequence(oa: tuple[FakeUpstream, str]) -> None:
    fake, url = oa
    with openai_client(url) as client:
        events = list(client.responses.create(model="gpt-fake", input=USER, stream=True))
        with client.responses.stream(model="gpt-fake", input="hi") as stream:
            final = stream.get_final_response()
    assert [e.type for e in events] == RESPONSE_EVENTS
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert deltas == WORDS
    assert "".join(deltas) == REPLY
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.output_text == REPLY
    assert final.output_text == REPLY
    assert [r["path"] for r in fake.requests] == ["/v1/responses"] * 2
    # On the wire: named events, each ``data`` valid as the SDK's event type.
    wire = raw_events(f"{url}/v1/responses", {"model": "m", "input": "hi", "stream": True})
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    for name, data in wire:
        assert name == data["type"] == adapter.validate_python(data).type
    assert [name for name, _ in wire] == RESPONSE_EVENTS


def test_responses_hold_and_responders(oa: tuple[FakeUpstream, str]) -> None:
    fake, url = oa
    fake.responders["extractor"] = lambda body: (200, {"answered": body["input"]})
    answered = httpx.post(
        f"{url}/v1/responses", json={"model": "extractor", "input": "x"}, timeout=30
    )
    assert answered.json() == {"answered": "x"}
    fake.hold = threading.Event()
    seen: list[str] = []

    def read() -> None:
        with openai_client(url) as client:
            seen.extend(e.type for e in client.responses.create(model="m", input="hi", stream=True))

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 10
    while "response.output_text.delta" not in seen and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    assert seen.count("response.output_text.delta") == 1  # stalled after the first delta
    fake.hold.set()
    reader.join(timeout=30)
    assert seen == RESPONSE_EVENTS


# -- OpenAI: embeddings and chat ----------------------------------------------------------


def test_embeddings_are_deterministic_vectors(oa: tuple[FakeUpstream, str]) -> None:
    fake, url = oa
    with openai_client(url) as client:
        # The SDK asks for base64 by default and decodes it.
        many = client.embeddings.create(model="emb", input=["alpha", "beta", "alpha"])
        one = client.embeddings.create(model="emb", input="alpha", encoding_format="float")
        wide = client.embeddings.create(model="emb", input="alpha", dimensions=20)
    assert fake.requests[0]["body"]["encoding_format"] == "base64"
    assert [d.index for d in many.data] == [0, 1, 2]
    vectors = [d.embedding for d in many.data]
    assert all(len(v) == 8 for v in vectors)
    assert vectors[0] == pytest.approx(vectors[2])
    assert vectors[0] != pytest.approx(vectors[1])
    assert one.data[0].embedding == pytest.approx(vectors[0])
    assert sum(x * x for x in one.data[0].embedding) == pytest.approx(1.0)
    assert len(wide.data[0].embedding) == 20
    assert (many.model, many.usage.prompt_tokens, many.usage.total_tokens) == ("emb", 3, 3)
    assert [r["path"] for r in fake.requests] == ["/v1/embeddings"] * 3
    raw = httpx.post(f"{url}/v1/embeddings", json={"model": "e", "input": [1, 2, 3]}, timeout=30)
    assert len(CreateEmbeddingResponse.model_validate(raw.json()).data) == 1


def test_chat_is_recorded_with_its_path(oa: tuple[FakeUpstream, str]) -> None:
    fake, url = oa
    with openai_client(url) as client:
        reply = client.chat.completions.create(model="m", messages=USER)
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert reply.choices[0].message.content == streamed == REPLY
    assert [r["path"] for r in fake.requests] == ["/v1/chat/completions"] * 2
    assert fake.last["stream"] is True


def test_openai_errors_reach_the_sdk_as_its_error_classes(oa: tuple[FakeUpstream, str]) -> None:
    fake, url = oa
    with openai_client(url) as client:
        fake.status = 400
        with pytest.raises(openai.BadRequestError) as bad:
            client.responses.create(model="m", input="hi", stream=True)
        assert bad.value.body == fake.error_body["error"]
        fake.status = 429
        with pytest.raises(openai.RateLimitError):
            client.embeddings.create(model="emb", input="hi")
    assert len(fake.requests) == 2  # failed requests are recorded too


# -- Anthropic: the Messages API ----------------------------------------------------------


def test_messages_create_returns_a_message(an: tuple[FakeAnthropicUpstream, str]) -> None:
    fake, url = an
    with anthropic_client(url) as client:
        message = client.messages.create(
            model="claude-fake", max_tokens=64, system="Be brief.", messages=USER
        )
    assert message.content[0].type == "text"
    assert message.content[0].text == REPLY
    assert (message.id, message.stop_reason, message.model) == ("msg_1", "end_turn", "claude-fake")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (6, len(WORDS))
    record = fake.requests[-1]
    assert record["path"] == "/v1/messages"
    assert fake.last["system"] == "Be brief."
    assert fake.last["max_tokens"] == 64
    headers = record["headers"]  # this SDK sends the key as a bearer token
    assert "sk-ant-test" in headers.get("x-api-key", headers.get("authorization", ""))
    assert "anthropic-version" in record["headers"]
    raw = httpx.post(f"{url}/v1/messages", json={"model": "c", "messages": USER}, timeout=30)
    assert Message.model_validate(raw.json()).content[0].type == "text"


def test_messages_stream_sends_the_real_event_sequence(
    an: tuple[FakeAnthropicUpstream, str],
) -> None:
    fake, url = an
    with anthropic_client(url) as client:
        with client.messages.stream(model="claude-fake", max_tokens=64, messages=USER) as stream:
            pieces = list(stream.text_stream)
            final = stream.get_final_message()
        with client.messages.stream(model="claude-fake", max_tokens=64, messages=USER) as stream:
            text = stream.get_final_text()
        raw = client.messages.create(model="c", max_tokens=64, messages=USER, stream=True)
        types = [event.type for event in raw]
    assert pieces == WORDS
    assert text == REPLY
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == len(WORDS)
    assert types == [t for t in MESSAGE_EVENTS if t != "ping"]  # the SDK skips pings
    assert fake.last["stream"] is True
    wire = raw_events(f"{url}/v1/messages", {"model": "c", "messages": USER, "stream": True})
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    for name, data in wire:
        assert name == data["type"]
        if name != "ping":
            assert adapter.validate_python(data).type == name
    assert [name for name, _ in wire] == MESSAGE_EVENTS


def test_count_tokens_and_models(an: tuple[FakeAnthropicUpstream, str]) -> None:
    fake, url = an
    with anthropic_client(url) as client:
        counted = client.messages.count_tokens(
            model="claude-fake",
            system=[{"type": "text", "text": "Be brief."}],
            messages=[{"role": "user", "content": [{"type": "text", "text": "one two three"}]}],
        )
        models = list(client.models.list())
    assert counted.input_tokens == 5
    assert fake.requests[-1]["path"] == "/v1/messages/count_tokens"
    assert [(m.id, m.display_name) for m in models] == [("claude-fake", "Claude Fake")]
    raw = httpx.get(f"{url}/v1/models", timeout=30).json()
    assert (raw["has_more"], raw["first_id"], raw["last_id"]) == (
        False,
        "claude-fake",
        "claude-fake",
    )
    ModelInfo.model_validate(raw["data"][0])
    count = httpx.post(f"{url}/v1/messages/count_tokens", json={"messages": USER}, timeout=30)
    assert MessageTokensCount.model_validate(count.json()).input_tokens == 4


def test_anthropic_errors_reach_the_sdk_as_its_error_classes(
    an: tuple[FakeAnthropicUpstream, str],
) -> None:
    fake, url = an
    with anthropic_client(url) as client:
        fake.status = 400
        with pytest.raises(anthropic.BadRequestError) as bad:
            client.messages.create(model="c", max_tokens=8, messages=USER)
        assert bad.value.body == fake.error_body
        assert fake.error_body["error"]["type"] == "invalid_request_error"
        fake.status = 429
        with pytest.raises(anthropic.RateLimitError):
            client.messages.count_tokens(model="c", messages=USER)


# -- break_after: a stream cut mid-flight -------------------------------------------------


def test_break_after_cuts_the_openai_streams(oa: tuple[FakeUpstream, str]) -> None:
    fake, url = oa
    fake.break_after = 2
    with openai_client(url) as client:
        seen: list[Any] = []
        events = client.responses.create(model="m", input="hi", stream=True)
        with pytest.raises(openai.APIConnectionError) as caught:
            seen.extend(events)
        assert type(caught.value.__cause__).__name__ == "RemoteProtocolError"
        assert [e.type for e in seen] == RESPONSE_EVENTS[:6]  # the head, then two deltas
        chunks: list[Any] = []
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        with pytest.raises(openai.APIConnectionError):
            chunks.extend(stream)
        assert [c.choices[0].delta.content for c in chunks] == WORDS[:2]
    # A plain HTTP client sees the body end without the chunked terminator.
    received: list[bytes] = []
    body = {"model": "m", "input": "hi", "stream": True}
    with (
        httpx.Client(timeout=30) as raw,
        raw.stream("POST", f"{url}/v1/responses", json=body) as response,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        received.extend(response.iter_raw())
    assert b"".join(received).count(b"event: response.output_text.delta") == 2
    fake.break_after = None
    with openai_client(url) as client, client.responses.stream(model="m", input="hi") as whole:
        assert whole.get_final_response().output_text == REPLY


def _chain(exc: BaseException | None) -> list[str]:
    names: list[str] = []
    while exc is not None and len(names) < 10:
        names.append(type(exc).__name__)
        exc = exc.__cause__ or exc.__context__
    return names


def test_break_after_cuts_the_anthropic_stream(
    an: tuple[FakeAnthropicUpstream, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = an
    fake.break_after = 1
    # A plain HTTP client reads the head and exactly one delta, then no terminator.
    received: list[bytes] = []
    body = {"model": "c", "max_tokens": 8, "messages": USER, "stream": True}
    with (
        httpx.Client(timeout=30) as raw,
        raw.stream("POST", f"{url}/v1/messages", json=body) as response,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        received.extend(response.iter_raw())
    data = b"".join(received)
    assert data.count(b"event: content_block_delta") == 1
    assert b"message_stop" not in data
    pieces: list[str] = []
    # The SDK's transport is its own httpx fork: the error is matched by name. It is
    # raised mid-stream (RemoteProtocolError) or, should the cut race the head on a
    # loaded machine, wrapped as APIConnectionError; either way it names the cut.
    with (
        anthropic_client(url) as client,
        pytest.raises(Exception) as caught,
        client.messages.stream(model="c", max_tokens=8, messages=USER) as stream,
    ):
        pieces.extend(stream.text_stream)
    assert "RemoteProtocolError" in _chain(caught.value), _chain(caught.value)
    assert pieces == WORDS[: len(pieces)]
    assert len(pieces) <= 1
    # The deliberate cut leaves no error line in the log.
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


# -- python -m memoryd.testing ------------------------------------------------------------


@pytest.mark.parametrize("flag", [[], ["--anthropic"]])
def test_the_fakes_run_as_a_process(flag: list[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "memoryd.testing", "--port", str(port), *flag]
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as fake:
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).json()
                    break
                except httpx.TransportError:
                    assert fake.poll() is None
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
        finally:
            fake.terminate()
            fake.wait(timeout=30)
    assert ("has_more" in models) == bool(flag)
