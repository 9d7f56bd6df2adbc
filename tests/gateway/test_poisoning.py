"""Memories that cannot be turned against their owner: the poisoning set
(``bench/data/poisoning/cases.jsonl``: 48 messages that read as instructions to the
model, not facts about the person: overrides, role markers and chat-template tokens,
fake memory headers, tool-call look-alikes, pasted tool results and documents,
instructions smuggled as facts, exfiltration) stores nothing through the gateway, and
the same texts stored on purpose (an admin's REST write) stay one line of data inside
one unbroken block."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.core.extraction.guard import REASONS, unsafe
from memoryd.engine import MemoryEngine
from tests.conftest import add
from tests.gateway_support import Gateway, running_gateway

CASES = Path(__file__).resolve().parents[2] / "bench" / "data" / "poisoning" / "cases.jsonl"


def cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


@pytest.fixture
def gateway(engine: MemoryEngine) -> Iterator[Gateway]:
    with running_gateway(engine, "poison") as base:
        yield base


def test_the_set_is_large_and_varied() -> None:
    rows = cases()
    assert len(rows) >= 40
    assert {r["kind"] for r in rows} >= {"override", "role", "frame", "tool", "document"}


def test_no_case_is_stored_through_the_gateway(gateway: Gateway) -> None:
    rows = cases()
    for row in rows:
        gateway.send(row["text"], user=row["id"])
    stored = {
        row["id"]: [
            m.content
            for m in gateway.engine.list_memories(owner=gateway.owner, user_id=row["id"]).data
        ]
        for row in rows
    }
    assert {k: v for k, v in stored.items() if v} == {}
    guarded = gateway.engine.status()["extraction"]["guarded"]
    assert guarded >= sum(1 for r in rows if unsafe(r["text"]))


def test_every_case_the_guard_names_says_why() -> None:
    for row in cases():
        kind = unsafe(row["text"])
        if kind is not None:
            assert kind in REASONS


def test_stored_on_purpose_each_stays_one_line_in_one_block(gateway: Gateway) -> None:
    rows = cases()
    engine = gateway.engine
    engine.settings.update({"strategy": "recent", "maxTokens": 16000})
    for row in rows:
        add(engine, gateway.owner, row["text"])
    gateway.send("hello")
    body = [r["body"] for r in gateway.upstream.requests if r["body"]["model"] == "chat-model"][-1]
    block = next(m["content"] for m in body["messages"] if m["role"] == "system")
    lines = block.split("\n")
    assert lines[0].startswith("Memory context")
    assert block.count("<memories>") == 1
    assert block.count("</memories>") == 1
    opened, closed = lines.index("<memories>"), lines.index("</memories>")
    inside = lines[opened + 1 : closed]
    assert all(line.startswith("- ") for line in inside), [
        line for line in inside if not line.startswith("- ")
    ]
    assert len(inside) == len(rows)
    assert closed == len(lines) - 1  # nothing after the frame
