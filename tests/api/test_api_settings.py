"""``/api/settings/memory`` and ``/api/settings/providers`` over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.engine import MemoryEngine
from tests.api.test_api_memory import assert_error


def test_get_memory_settings_has_every_field(client: Any) -> None:
    body = client.get("/api/settings/memory").json()
    assert body["enabled"] is True  # docs/design/interfaces.md#memory-is-on-by-default
    assert body["maxTokens"] == 2000
    assert body["strategy"] == "hybrid"
    assert set(body) == {
        "enabled",
        "maxTokens",
        "retentionDays",
        "strategy",
        "scope",
        "extractFrom",
        "embeddingSource",
        "embeddingProviderModel",
        "transformersEnabled",
        "staticEnabled",
        "rerankEnabled",
        "rerankProviderModel",
        "vectorStore",
        "minScore",
        "relevanceFloor",
        "extractionMode",
        "extractionProviderModel",
        "extractionTimeoutMs",
        "extractionDailyTokenCap",
        "extractionKeyMonthlyTokenCap",
        "quarantineGuarded",
        "profileMaxTokens",
        "shareWithEndUsers",
    }
    assert body["extractionMode"] == "rules"
    assert body["extractionDailyTokenCap"] == 0


def test_put_is_partial_and_returns_normalized_settings(client: Any) -> None:
    put = client.put(
        "/api/settings/memory",
        json={"enabled": False, "maxTokens": 0, "retentionDays": 14, "strategy": "semantic"},
    )
    assert put.status_code == 200
    body = put.json()
    assert (body["enabled"], body["maxTokens"], body["retentionDays"], body["strategy"]) == (
        False,
        0,
        14,
        "semantic",
    )
    assert body["scope"] == "apiKey"  # untouched
    assert client.get("/api/settings/memory").json() == body
    cleared = client.put("/api/settings/memory", json={"embeddingProviderModel": None}).json()
    assert cleared["embeddingProviderModel"] is None
    llm = client.put(
        "/api/settings/memory",
        json={
            "extractionMode": "llm",
            "extractionProviderModel": "local/qwen2.5",
            "extractionTimeoutMs": 5000,
            "extractionDailyTokenCap": None,
        },
    ).json()
    assert (llm["extractionMode"], llm["extractionProviderModel"]) == ("llm", "local/qwen2.5")
    assert (llm["extractionTimeoutMs"], llm["extractionDailyTokenCap"]) == (5000, 0)


@pytest.mark.parametrize(
    "body",
    [
        {"maxTokens": 16001},
        {"maxTokens": -1},
        {"retentionDays": -1},
        {"retentionDays": 366},
        {"strategy": "magic"},
        {"embeddingSource": "magic"},
        {"vectorStore": "faiss"},
        {"minScore": 2},
        {"extractFrom": ["bogus"]},
        {"unknownField": True},
        {"enabled": "yes"},
        {"embeddingProviderModel": "no-slash"},
        {"maxTokens": "4000"},
        {"enabled": None},
        {"extractionMode": "gpt"},
        {"extractionProviderModel": "no-slash"},
        {"extractionTimeoutMs": 50},
        {"extractionDailyTokenCap": -1},
    ],
)
def test_put_rejects_bad_values_and_changes_nothing(client: Any, body: dict[str, Any]) -> None:
    before = client.get("/api/settings/memory").json()
    assert_error(client.put("/api/settings/memory", json=body), 400, "invalid_request")
    assert client.get("/api/settings/memory").json() == before


def test_providers_are_masked_and_keys_kept_or_removed(client: Any) -> None:
    put = client.put(
        "/api/settings/providers",
        json=[
            {
                "name": "openai",
                "baseUrl": "https://api.example.com/v1/",
                "apiKey": "sk-secret-123456",
            },
            {"name": "glm", "baseUrl": "http://127.0.0.1:9000/v1", "systemRole": "user"},
        ],
    )
    assert put.status_code == 200
    listed = {p["name"]: p for p in client.get("/api/settings/providers").json()}
    assert listed["openai"]["baseUrl"] == "https://api.example.com/v1"
    assert listed["openai"]["hasKey"] is True
    assert listed["openai"]["apiKey"] != "sk-secret-123456"
    assert "sk-secret-123456" not in client.get("/api/settings/providers").text
    assert listed["glm"]["systemRole"] == "user"
    # no apiKey: the stored key stays; "" removes it
    kept = client.put(
        "/api/settings/providers",
        json=[{"name": "openai", "baseUrl": "https://api.example.com/v1"}],
    ).json()
    assert kept[0]["hasKey"] is True
    removed = client.put(
        "/api/settings/providers",
        json=[{"name": "openai", "baseUrl": "https://api.example.com/v1", "apiKey": ""}],
    ).json()
    assert removed[0]["hasKey"] is False


def test_providers_read_back_and_written_as_they_are_keep_their_keys(
    client: Any, engine: MemoryEngine
) -> None:
    """GET shows "sk-p…6789" in the field PUT writes: writing the listing back stored the
    masked text as the key, and every upstream call then sent it."""
    secret = "sk-proj-abcdefghijkl6789"
    client.put(
        "/api/settings/providers",
        json=[{"name": "openai", "baseUrl": "https://api.example.com/v1", "apiKey": secret}],
    )
    listing = client.get("/api/settings/providers").json()
    assert listing[0]["apiKey"] == "sk-p…6789"
    assert client.put("/api/settings/providers", json=listing).status_code == 200
    assert engine.providers()["openai"].api_key == secret
    # a masked key that is not the stored one's is refused, and changes nothing
    listing[0]["apiKey"] = "sk-x…0000"
    error = assert_error(client.put("/api/settings/providers", json=listing), 400)
    assert "masked" in error["message"]
    assert engine.providers()["openai"].api_key == secret


@pytest.mark.parametrize(
    "body",
    [
        [{"name": "a", "baseUrl": "ftp://x"}],
        [{"name": "a", "baseUrl": "http://"}],  # was stored as "http:"
        [{"name": "a", "baseUrl": "http://127.0.0.1:99999/v1"}],  # no such port
        [{"name": "", "baseUrl": "http://x"}],
        [{"name": "a b", "baseUrl": "http://x"}],
        [{"name": "a", "baseUrl": "http://x", "systemRole": "root"}],
        [{"name": "a", "baseUrl": "http://x", "kind": "gemini"}],
        [{"name": "a", "baseUrl": "http://x", "kind": None}],
        [{"name": "a", "baseUrl": "http://x"}, {"name": "a", "baseUrl": "http://y"}],
        [{"name": "a", "baseUrl": "http://x", "extra": 1}],
        {"name": "a"},
    ],
)
def test_providers_validation(client: Any, body: Any) -> None:
    assert_error(client.put("/api/settings/providers", json=body), 400)


def test_provider_kind_round_trips(client: Any) -> None:
    put = client.put(
        "/api/settings/providers",
        json=[
            {"name": "claude", "baseUrl": "https://api.anthropic.example/v1", "kind": "anthropic"},
            {"name": "local", "baseUrl": "http://127.0.0.1:8000/v1"},
        ],
    )
    assert put.status_code == 200, put.text
    assert [(p["name"], p["kind"]) for p in put.json()] == [
        ("claude", "anthropic"),
        ("local", "openai"),  # the default
    ]
    listed = client.get("/api/settings/providers").json()
    assert set(listed[0]) == {"name", "baseUrl", "apiKey", "hasKey", "systemRole", "kind"}
    assert {p["name"]: p["kind"] for p in listed} == {"claude": "anthropic", "local": "openai"}
    changed = client.put(
        "/api/settings/providers",
        json=[{"name": "local", "baseUrl": "http://127.0.0.1:8000/v1", "kind": "anthropic"}],
    )
    assert changed.json() == client.get("/api/settings/providers").json()
    assert [(p["name"], p["kind"]) for p in changed.json()] == [("local", "anthropic")]


def test_an_invalid_kind_is_a_400_that_changes_nothing(client: Any) -> None:
    good = [{"name": "claude", "baseUrl": "http://127.0.0.1:9/v1", "kind": "anthropic"}]
    assert client.put("/api/settings/providers", json=good).status_code == 200
    bad = [{"name": "claude", "baseUrl": "http://127.0.0.1:9/v1", "kind": "Anthropic"}]
    error = assert_error(client.put("/api/settings/providers", json=bad), 400, "invalid_request")
    assert "kind" in str(error)
    assert client.get("/api/settings/providers").json()[0]["kind"] == "anthropic"
