"""What a key costs: ``GET /api/keys/{id}/usage``, through the gateway with
the official ``openai`` client: the memory its requests carried (this server), its LLM
extraction this month (the store's figure, every server's) and the monthly cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.engine import llm_budget
from memoryd.models import NewMemory
from tests.embedders import no_source
from tests.gateway_support import Gateway, gateway_on


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with gateway_on(tmp_path / "data", "costly", no_source) as base:
        yield base


def test_a_keys_usage_counts_what_it_carried_and_spent(gateway: Gateway) -> None:
    engine, owner = gateway.engine, gateway.owner
    engine.create(NewMemory(owner, "User's favourite cheese is gruyere"))
    other, _ = engine.keys.create("other")
    gateway.send("Which cheese should I buy, given my favourite cheese?")
    assert gateway.injected() == ["User's favourite cheese is gruyere"]
    llm_budget.add(engine.store, owner, 1234)
    engine.store.flush()
    engine.settings.update({"extractionKeyMonthlyTokenCap": 50_000})

    usage = gateway.api("GET", f"/api/keys/{owner}/usage")
    assert usage.status_code == 200, usage.text
    body = usage.json()
    assert body["keyId"] == owner
    month = body["thisMonth"]
    assert (month["llmExtractionTokens"], month["llmExtractionRequests"]) == (1234, 1)
    assert month["llmExtractionMonthlyCap"] == 50_000
    assert month["month"] == llm_budget.this_month()
    since = body["sinceStart"]
    assert since["injectedRequests"] == 1
    assert since["injectedTokens"] > 0

    theirs = gateway.api("GET", f"/api/keys/{other.id}/usage").json()
    assert theirs["thisMonth"]["llmExtractionTokens"] == 0
    assert theirs["sinceStart"]["injectedRequests"] == 0
    missing = gateway.api("GET", "/api/keys/key_nope/usage")
    assert missing.status_code == 404
    assert "no API key" in missing.json()["error"]["message"]
