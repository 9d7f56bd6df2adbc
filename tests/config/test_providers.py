"""Upstream providers (``config/upstreams.py``): kinds, the environment's providers,
old stored lists, and ``default_for``. On a real store; REST is in test_api_settings.py,
the CLI in test_cli.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.config.upstreams import (
    PROVIDER_KINDS,
    Provider,
    default_for,
    load_providers,
    save_providers,
    stored_providers,
)
from memoryd.engine import MemoryEngine
from memoryd.models import utcnow
from tests.conftest import make_engine
from tests.embedders import no_source

ANTHROPIC_ENV = {
    "MEMORYD_ANTHROPIC_BASE_URL": "https://api.anthropic.example/v1/",
    "MEMORYD_ANTHROPIC_API_KEY": "sk-ant-123456789",
}


@pytest.fixture
def env_engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    env = {"MEMORYD_UPSTREAM_BASE_URL": "http://127.0.0.1:9/v1", **ANTHROPIC_ENV}
    engine = make_engine(tmp_path / "data", env, resolver=no_source)
    try:
        yield engine
    finally:
        engine.close()


def write_raw(engine: MemoryEngine, value: object) -> None:
    engine.store.write(lambda tx: tx.write_settings({"providers": value}, utcnow()))


def test_kinds_and_positional_construction() -> None:
    assert PROVIDER_KINDS == ("openai", "anthropic")
    provider = Provider("p", "http://x/v1", "sk-1")
    assert (provider.system_role, provider.kind) == ("auto", "openai")
    assert provider.to_dict()["kind"] == "openai"
    assert Provider("a", "http://x", None, "user", "anthropic").to_dict()["kind"] == "anthropic"


def test_the_environment_gives_an_anthropic_provider(env_engine: MemoryEngine) -> None:
    providers = env_engine.providers()
    assert list(providers) == ["default", "anthropic"]
    assert providers["default"].kind == "openai"
    anthropic = providers["anthropic"]
    assert anthropic == Provider(
        "anthropic", "https://api.anthropic.example/v1", "sk-ant-123456789", kind="anthropic"
    )
    assert anthropic.to_dict()["apiKey"] != "sk-ant-123456789"  # masked
    assert stored_providers(env_engine.store) == []  # the env ones are not stored


def test_a_stored_provider_overrides_the_environment_one(env_engine: MemoryEngine) -> None:
    mine = Provider("anthropic", "http://127.0.0.1:7/v1", None, kind="openai")
    save_providers(env_engine.store, [mine])
    assert env_engine.providers()["anthropic"] == mine


def test_the_cache_is_keyed_by_the_anthropic_variables(engine: MemoryEngine) -> None:
    assert load_providers(engine.store, {}) == {}
    seen = load_providers(engine.store, ANTHROPIC_ENV)  # within the cache's TTL
    assert seen["anthropic"].kind == "anthropic"
    keyless = load_providers(engine.store, {**ANTHROPIC_ENV, "MEMORYD_ANTHROPIC_API_KEY": ""})
    assert keyless["anthropic"].api_key is None
    assert "anthropic" not in load_providers(engine.store, {"MEMORYD_ANTHROPIC_API_KEY": "k"})


def test_kind_round_trips_through_the_store(engine: MemoryEngine) -> None:
    saved = [
        Provider("claude", "https://api.anthropic.example/v1", "sk-a", kind="anthropic"),
        Provider("local", "http://127.0.0.1:8000/v1"),
    ]
    save_providers(engine.store, saved)
    assert stored_providers(engine.store) == saved
    raw = engine.store.read().setting("providers")
    assert [item["kind"] for item in raw] == ["anthropic", "openai"]


def test_old_stored_providers_without_a_kind_are_openai(engine: MemoryEngine) -> None:
    write_raw(
        engine,
        [
            {"name": "old", "baseUrl": "http://127.0.0.1:8000/v1", "apiKey": "sk-old"},
            {"name": "odd", "baseUrl": "http://127.0.0.1:8001/v1", "kind": "gemini"},
            {"name": "num", "baseUrl": "http://127.0.0.1:8002/v1", "kind": 3},
            {"name": "ant", "baseUrl": "http://127.0.0.1:8003/v1", "kind": "anthropic"},
        ],
    )
    kinds = {p.name: p.kind for p in stored_providers(engine.store)}
    assert kinds == {"old": "openai", "odd": "openai", "num": "openai", "ant": "anthropic"}
    assert stored_providers(engine.store)[0].api_key == "sk-old"


def test_default_for_prefers_default_then_the_first_of_the_kind() -> None:
    default = Provider("default", "http://d/v1")
    claude = Provider("claude", "http://c/v1", kind="anthropic")
    other = Provider("other", "http://o/v1", kind="anthropic")
    local = Provider("local", "http://l/v1")
    providers = {"local": local, "claude": claude, "default": default, "other": other}
    assert default_for(providers, "openai") is default  # "default" wins over order
    assert default_for(providers, "anthropic") is claude  # first of the kind
    assert default_for({"local": local, "claude": claude}, "openai") is local
    anthropic_default = Provider("default", "http://d/v1", kind="anthropic")
    mixed = {"other": other, "default": anthropic_default, "local": local}
    assert default_for(mixed, "anthropic") is anthropic_default
    assert default_for(mixed, "openai") is local  # "default" is of the other kind
    assert default_for({"local": local}, "anthropic") is None
    assert default_for({}, "openai") is None
