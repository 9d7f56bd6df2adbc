"""Capture through the real gateway: the official `openai` client -> memoryd
on loopback -> a fake upstream on loopback that also plays the extraction model.

What a user sees: a fact stated in a longer message is remembered and brought back;
a new value replaces the old one in what is injected, while the old one stays in the
export as history; a message without facts stores nothing; with extractionMode "llm"
the model's ADD / UPDATE / DELETE are applied and a timeout, invalid JSON or a 500
falls back to the rules.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from memoryd.engine import MemoryEngine
from tests.gateway_support import Gateway as BaseGateway
from tests.gateway_support import running_gateway

EXTRACTOR = "extract-1"
LYON = "User moved to Lyon last month and lives there now"


class Gateway(BaseGateway):
    def chat(self, text: str) -> str | None:
        reply = self.send(text)
        content: str | None = reply.choices[0].message.content
        return content

    def block(self) -> str:
        """The memory lines the last chat call carried upstream, as one text."""
        return "\n".join(self.injected())

    def current(self) -> list[str]:
        return sorted(m.content for m in self.engine.list_memories(owner=self.owner).data)


@pytest.fixture
def gateway(engine: MemoryEngine) -> Iterator[Gateway]:
    engine.settings.update({"strategy": "hybrid"})
    with running_gateway(engine, "capture") as base:
        yield Gateway(**vars(base))


# -- rules (the default) ---------------------------------------------------------------


def test_a_statement_inside_a_longer_message_is_remembered_and_brought_back(
    gateway: Gateway,
) -> None:
    gateway.chat(
        "Quick one before my trip: I'm allergic to penicillin and my cat is named Luna. "
        "What should I pack in a first-aid kit for two weeks in Peru?"
    )
    assert gateway.current() == ["User is allergic to penicillin", "User's cat is named Luna"]
    gateway.chat("Which antibiotics are safe for me given my penicillin allergy?")
    assert "User is allergic to penicillin" in gateway.block()


def test_after_a_move_where_do_i_live_brings_the_new_home(gateway: Gateway) -> None:
    """The move was stored as "User moved to Porto last month", and "Where do I live?"
    then found nothing: no shared word, similarity under the relevance floor."""
    gateway.chat("I live in Lisbon.")
    gateway.chat("I moved to Porto last month.")
    gateway.chat("Where do I live? Suggest a restaurant in my city.")
    assert "Porto" in gateway.block()
    assert "Lisbon" not in gateway.block()


def test_leaving_a_place_retires_the_home_there_and_only_there(gateway: Gateway) -> None:
    gateway.chat("I live in Berlin.")
    gateway.chat("I don't live in Berlin anymore.")
    assert gateway.current() == ["User no longer lives in Berlin"]
    gateway.chat("I live in Porto now.")
    gateway.chat("I moved out of Lisbon years ago.")  # Porto stays where the user lives
    assert gateway.current() == [
        "User lives in Porto",
        "User no longer lives in Berlin",
        "User no longer lives in Lisbon",
    ]
    gateway.chat("Actually I live in Berlin again.")  # back: "no longer" is history
    assert gateway.current() == ["User lives in Berlin", "User no longer lives in Lisbon"]


def test_a_new_value_replaces_the_old_one_and_the_old_one_is_history(gateway: Gateway) -> None:
    gateway.chat("I live in Madrid. Any tips for the summer heat?")
    gateway.chat("Big news: I moved to Lyon last month! Where can I buy a fan?")
    assert gateway.current() == [LYON]

    gateway.chat("Where do I live, Madrid or Lyon?")
    block = gateway.block()
    assert "Lyon" in block
    assert "Madrid" not in block
    preview = gateway.api(
        "POST",
        "/api/memory/retrieve-preview",
        json={"apiKeyId": gateway.owner, "query": "Madrid Lyon live"},
    ).json()
    assert [m["content"] for m in preview["memories"]] == [LYON]

    exported = {row["content"]: row for row in gateway.export()}
    old, new = (
        exported["User lives in Madrid"],
        exported[LYON],
    )
    assert old["supersededBy"] == new["id"]
    assert old["supersededAt"] is not None
    assert new["supersededAt"] is None
    assert old["metadata"]["slot"] == new["metadata"]["slot"] == "home_location"

    listed = gateway.api("GET", "/api/memory", params={"apiKeyId": gateway.owner}).json()
    assert [m["content"] for m in listed["data"]] == [LYON]
    history = gateway.api(
        "GET", "/api/memory", params={"apiKeyId": gateway.owner, "includeSuperseded": "true"}
    ).json()
    assert sorted(m["content"] for m in history["data"]) == sorted(exported)


def test_a_preference_change_and_a_negation_replace_what_they_contradict(
    gateway: Gateway,
) -> None:
    gateway.chat("I prefer TypeScript for side projects.")
    gateway.chat("Actually, I prefer JavaScript now.")
    gateway.chat("I love mushrooms.")
    gateway.chat("I don't like mushrooms anymore, they upset my stomach.")
    mushrooms, language = gateway.current()
    assert mushrooms.startswith("User does not like mushrooms")
    assert language == "User prefers JavaScript"


def test_a_repeated_statement_refreshes_the_memory_instead_of_copying_it(
    gateway: Gateway,
) -> None:
    gateway.chat("I live in Madrid.")
    first = gateway.engine.list_memories(owner=gateway.owner).data[0]
    time.sleep(0.01)
    gateway.chat("As I said, I live in Madrid!")
    (again,) = gateway.engine.list_memories(owner=gateway.owner, history=True).data
    assert again.id == first.id
    assert again.updated_at > first.updated_at


def test_history_survives_an_export_and_import(gateway: Gateway, engine: MemoryEngine) -> None:
    gateway.chat("I use Vim for everything.")
    gateway.chat("I've switched to Emacs.")
    lines = "\n".join(json.dumps(row) for row in gateway.export())
    response = gateway.api(
        "POST",
        "/api/memory/import",
        params={"apiKeyId": "restored"},
        content=lines.encode(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert response.status_code == 200, response.text
    current = [m.content for m in engine.list_memories(owner="restored").data]
    history = engine.list_memories(owner="restored", history=True).data
    assert current == ["User has switched to Emacs"]
    assert {m.content: m.superseded_at is not None for m in history} == {
        "User has switched to Emacs": False,
        "User uses Vim for everything": True,
    }


@pytest.mark.parametrize(
    "text",
    [
        "What do I usually enjoy doing on weekends, hiking or cycling?",
        "Translate 'I love you' into French.",
        "Write a short story in which the narrator says: I hate spinach.",
        "If I were rich, I would live in Monaco.",
        "My friend keeps saying she is allergic to cats.",
        "Thanks, that works!",
    ],
)
def test_a_message_without_facts_stores_nothing(gateway: Gateway, text: str) -> None:
    gateway.chat(text)
    assert gateway.current() == []


def test_assistant_text_is_not_a_source_by_default(gateway: Gateway) -> None:
    gateway.upstream.reply = "I live in Paris and I'm allergic to peanuts."
    gateway.chat("Tell me about yourself.")
    assert gateway.current() == []


# -- LLM-assisted extraction (opt-in) -----------------------------------------------------


def model_answer(*ops: dict[str, Any]) -> tuple[int, Any]:
    content = json.dumps({"operations": list(ops)})
    return 200, {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": EXTRACTOR,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


@pytest.fixture
def llm(gateway: Gateway) -> Gateway:
    gateway.engine.settings.update(
        {
            "extractionMode": "llm",
            "extractionProviderModel": f"default/{EXTRACTOR}",
            "extractionTimeoutMs": 1000,
        }
    )
    return gateway


def test_llm_mode_applies_add_update_and_delete(llm: Gateway) -> None:
    llm.upstream.responders[EXTRACTOR] = lambda body: model_answer(
        {"op": "ADD", "content": "User lives in Oslo", "slot": "home_location"},
        {"op": "ADD", "content": "User has a dog named Rex", "slot": "pet:dog:name"},
    )
    llm.chat("I live in Oslo with my dog Rex.")
    assert llm.current() == ["User has a dog named Rex", "User lives in Oslo"]
    ids = {m.content: m.id for m in llm.engine.list_memories(owner=llm.owner).data}

    llm.upstream.responders[EXTRACTOR] = lambda body: model_answer(
        {"op": "UPDATE", "id": ids["User lives in Oslo"], "content": "User lives in Bergen"},
        {"op": "DELETE", "id": ids["User has a dog named Rex"]},
    )
    llm.chat("We moved to Bergen, and sadly Rex passed away last week.")
    assert llm.current() == ["User lives in Bergen"]
    history = {row["content"]: row for row in llm.export()}
    assert history["User lives in Oslo"]["supersededBy"] == history["User lives in Bergen"]["id"]
    assert history["User has a dog named Rex"]["supersededAt"] is not None
    assert history["User has a dog named Rex"]["supersededBy"] is None
    calls = llm.engine.status()["extraction"]["llm"]
    assert calls["ok"] == 2


def _slow(body: dict[str, Any]) -> tuple[int, Any]:
    time.sleep(3)  # over the 1 s extraction timeout
    return model_answer()


@pytest.mark.parametrize(
    ("case", "respond", "reason"),
    [
        ("timeout", _slow, "timeout"),
        (
            "invalid JSON",
            lambda body: (200, {"choices": [{"message": {"content": "{not json"}}]}),
            "invalid",
        ),
        ("a 500", lambda body: (500, {"error": {"message": "boom"}}), "upstream"),
    ],
)
def test_llm_mode_falls_back_to_the_rules(
    llm: Gateway, case: str, respond: Any, reason: str
) -> None:
    llm.upstream.responders[EXTRACTOR] = respond
    assert (
        llm.chat("Quick one: I'm allergic to shellfish. Any good paella swaps?") == "Sure, noted."
    )
    assert llm.current() == ["User is allergic to shellfish"], case
    assert llm.engine.status()["extraction"]["llm"]["fallbacks"][reason] == 1
