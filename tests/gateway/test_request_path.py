"""The lean request path, through the real gateway: a turn that states no
fact costs no extraction job (no queue row, no background work); a turn with a fact,
or any turn while the assistant's text is extracted too, still gets its durable job."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from memoryd.engine import MemoryEngine
from tests.gateway_support import Gateway, running_gateway


@pytest.fixture
def gateway(engine: MemoryEngine) -> Iterator[Gateway]:
    with running_gateway(engine, "lean") as gateway:
        yield gateway


def scheduled(engine: MemoryEngine) -> int:
    assert engine.drain(timeout=30)
    return int(engine.extraction_stats["scheduled"])


def test_a_question_without_facts_queues_no_extraction_job(gateway: Gateway) -> None:
    before = scheduled(gateway.engine)
    gateway.send("What is a good name for a dog-walking app?")
    assert scheduled(gateway.engine) == before
    gateway.send("My dog is called Rex. Any name ideas for a dog-walking app?")
    assert scheduled(gateway.engine) == before + 1
    contents = [m.content for m in gateway.engine.list_memories(owner=gateway.owner).data]
    assert contents == ["User's dog is called Rex"]


def test_a_streamed_turn_is_checked_the_same(gateway: Gateway) -> None:
    """The pre-check runs while the upstream answers; a streamed answer waits for it at
    its end, as a plain one does before its body."""
    before = scheduled(gateway.engine)
    with openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.key, max_retries=0) as c:
        for text in ("Any name ideas for a cat cafe?", "My cat is called Mochi. Name ideas?"):
            stream = c.chat.completions.create(
                model="chat-model", messages=[{"role": "user", "content": text}], stream=True
            )
            assert "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)
    assert scheduled(gateway.engine) == before + 1
    contents = [m.content for m in gateway.engine.list_memories(owner=gateway.owner).data]
    assert contents == ["User's cat is called Mochi"]


def test_with_the_assistant_extracted_every_turn_is_queued(gateway: Gateway) -> None:
    gateway.engine.settings.update({"extractFrom": ["user", "assistant"]})
    before = scheduled(gateway.engine)
    gateway.send("What is a good name for a dog-walking app?")
    assert scheduled(gateway.engine) == before + 1  # the answer is not known in advance


def test_with_an_extraction_model_every_turn_is_queued(gateway: Gateway) -> None:
    gateway.engine.settings.update({"extractionMode": "llm"})
    before = scheduled(gateway.engine)
    gateway.send("What is a good name for a dog-walking app?")
    assert scheduled(gateway.engine) == before + 1  # the model may see what rules do not
