"""Typed decay (docs/design/storage.md#lifecycle): ported from the reference TV6 cases."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memoryd.core.decay import (
    DEFAULT_ACCESS_IMMUNITY_THRESHOLD,
    DEFAULT_TTL_DAYS_BY_TYPE,
    SWEEP_SCAN_CAP,
    DecayConfig,
    decay_config_from_env,
    decay_deadline,
    is_access_immune,
    is_decayed,
    is_type_immune,
)
from memoryd.models import Memory, MemoryType

CREATED = datetime(2026, 1, 1, tzinfo=UTC)
ENABLED = DecayConfig(enabled=True)


def memory(
    type_: MemoryType = MemoryType.EPISODIC,
    created_at: datetime = CREATED,
    access_count: int = 0,
    last_accessed_at: datetime | None = None,
) -> Memory:
    return Memory(
        id="m1",
        api_key_id="k",
        session_id="",
        type=type_,
        key="key",
        content="content",
        metadata={},
        created_at=created_at,
        updated_at=created_at,
        access_count=access_count,
        last_accessed_at=last_accessed_at,
    )


def test_defaults() -> None:
    assert dict(DEFAULT_TTL_DAYS_BY_TYPE) == {
        "episodic": 30,
        "factual": None,
        "procedural": None,
        "semantic": None,
    }
    assert DEFAULT_ACCESS_IMMUNITY_THRESHOLD == 3
    assert SWEEP_SCAN_CAP == 5000
    config = DecayConfig()
    assert config.enabled is False
    assert config.access_immunity_threshold == 3
    assert config.sweep_interval_s == 0
    assert config.ttl_days_by_type["episodic"] == 30


def test_type_immunity() -> None:
    assert is_type_immune("episodic", ENABLED) is False
    assert is_type_immune(MemoryType.EPISODIC, ENABLED) is False
    for type_ in ("factual", "procedural", "semantic"):
        assert is_type_immune(type_, ENABLED) is True
    assert is_type_immune("unknown-type", ENABLED) is True


@pytest.mark.parametrize(("count", "immune"), [(0, False), (2, False), (3, True), (99, True)])
def test_access_immunity(count: int, immune: bool) -> None:
    assert is_access_immune(count, ENABLED) is immune


def test_access_immunity_disabled_by_zero_threshold() -> None:
    config = DecayConfig(enabled=True, access_immunity_threshold=0)
    assert is_access_immune(0, config) is False
    assert is_access_immune(1000, config) is False


def test_episodic_decays_after_ttl() -> None:
    m = memory()
    assert decay_deadline(m, ENABLED) == CREATED + timedelta(days=30)
    assert is_decayed(m, ENABLED, CREATED + timedelta(days=10)) is False
    assert is_decayed(m, ENABLED, CREATED + timedelta(days=30)) is False  # strictly after
    assert is_decayed(m, ENABLED, CREATED + timedelta(days=30, seconds=1)) is True
    assert is_decayed(m, ENABLED, CREATED + timedelta(days=31)) is True


def test_access_restarts_the_clock() -> None:
    accessed = CREATED + timedelta(days=100)
    m = memory(last_accessed_at=accessed, access_count=1)
    assert decay_deadline(m, ENABLED) == accessed + timedelta(days=30)
    assert is_decayed(m, ENABLED, accessed + timedelta(days=5)) is False
    assert is_decayed(m, ENABLED, accessed + timedelta(days=31)) is True


def test_factual_never_decays() -> None:
    m = memory(type_=MemoryType.FACTUAL, created_at=datetime(2020, 1, 1, tzinfo=UTC))
    assert decay_deadline(m, ENABLED) is None
    assert is_decayed(m, ENABLED, datetime(2030, 1, 1, tzinfo=UTC)) is False


def test_frequently_accessed_memory_is_kept() -> None:
    m = memory(access_count=3)
    assert is_decayed(m, ENABLED, CREATED + timedelta(days=3650)) is False
    assert is_decayed(replace(m, access_count=2), ENABLED, CREATED + timedelta(days=3650)) is True


def test_disabled_config_never_decays() -> None:
    assert is_decayed(memory(), DecayConfig(), CREATED + timedelta(days=3650)) is False


def test_custom_ttls() -> None:
    config = DecayConfig(enabled=True, ttl_days_by_type={"episodic": 1, "semantic": 2})
    assert is_decayed(memory(), config, CREATED + timedelta(days=2)) is True
    semantic = memory(type_=MemoryType.SEMANTIC)
    assert decay_deadline(semantic, config) == CREATED + timedelta(days=2)
    assert is_type_immune("factual", config) is True  # missing from the mapping


def test_from_env_defaults() -> None:
    config = decay_config_from_env({})
    assert config.enabled is False
    assert config.access_immunity_threshold == 3
    assert config.ttl_days_by_type["episodic"] == 30
    assert config.ttl_days_by_type["factual"] is None
    assert config.sweep_interval_s == 0


@pytest.mark.parametrize(("raw", "enabled"), [("true", True), ("TRUE", True), (" True ", True)])
def test_from_env_enabled(raw: str, enabled: bool) -> None:
    assert decay_config_from_env({"MEMORY_TYPED_DECAY_ENABLED": raw}).enabled is enabled


@pytest.mark.parametrize("raw", ["false", "1", "yes", "", "on"])
def test_from_env_not_enabled(raw: str) -> None:
    assert decay_config_from_env({"MEMORY_TYPED_DECAY_ENABLED": raw}).enabled is False


def test_from_env_zero_days_means_immune() -> None:
    config = decay_config_from_env(
        {"MEMORY_TYPED_DECAY_ENABLED": "true", "MEMORY_TYPED_DECAY_EPISODIC_DAYS": "0"}
    )
    assert config.ttl_days_by_type["episodic"] is None
    assert is_type_immune("episodic", config) is True


def test_from_env_values() -> None:
    config = decay_config_from_env(
        {
            "MEMORY_TYPED_DECAY_EPISODIC_DAYS": "7",
            "MEMORY_TYPED_DECAY_ACCESS_IMMUNITY": "10",
            "MEMORY_TYPED_DECAY_SWEEP_INTERVAL": "3600",
        }
    )
    assert config.ttl_days_by_type["episodic"] == 7
    assert config.access_immunity_threshold == 10
    assert config.sweep_interval_s == 3600


def test_from_env_floors_floats() -> None:
    config = decay_config_from_env(
        {
            "MEMORY_TYPED_DECAY_EPISODIC_DAYS": "7.9",
            "MEMORY_TYPED_DECAY_ACCESS_IMMUNITY": " 4.2 ",
            "MEMORY_TYPED_DECAY_SWEEP_INTERVAL": "60.5",
        }
    )
    assert config.ttl_days_by_type["episodic"] == 7
    assert config.access_immunity_threshold == 4
    assert config.sweep_interval_s == 60


@pytest.mark.parametrize("bad", ["abc", "-1", "-0.5", "", "nan", "inf", "1e999", "7days"])
def test_from_env_invalid_values_use_defaults(bad: str) -> None:
    config = decay_config_from_env(
        {
            "MEMORY_TYPED_DECAY_EPISODIC_DAYS": bad,
            "MEMORY_TYPED_DECAY_ACCESS_IMMUNITY": bad,
            "MEMORY_TYPED_DECAY_SWEEP_INTERVAL": bad,
        }
    )
    assert config.ttl_days_by_type["episodic"] == 30
    assert config.access_immunity_threshold == 3
    assert config.sweep_interval_s == 0


def test_from_env_does_not_mutate_defaults() -> None:
    decay_config_from_env({"MEMORY_TYPED_DECAY_EPISODIC_DAYS": "0"})
    assert DEFAULT_TTL_DAYS_BY_TYPE["episodic"] == 30


def test_the_server_sweeps_decayed_memories_on_its_interval(tmp_path: object) -> None:
    """MEMORY_TYPED_DECAY_SWEEP_INTERVAL drives a real background sweep while the app
    runs (the setting was once parsed and never used)."""
    import time
    from pathlib import Path

    from memoryd.app import create_app
    from tests.conftest import ADMIN, add, make_engine
    from tests.embedders import no_source
    from tests.fakes import serve_asgi

    data = Path(str(tmp_path)) / "data"
    env = {
        "MEMORYD_DATA_DIR": str(data),
        "MEMORY_TYPED_DECAY_ENABLED": "true",
        "MEMORY_TYPED_DECAY_SWEEP_INTERVAL": "1",
    }
    engine = make_engine(data, env, resolver=no_source)
    try:
        old = datetime.now(UTC) - timedelta(days=400)
        add(engine, "k", "went to a concert", type=MemoryType.EPISODIC, created_at=old)
        kept = add(engine, "k", "User lives in Oslo", type=MemoryType.FACTUAL, created_at=old)
        with serve_asgi(create_app(engine, admin_token=ADMIN)):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if [m.id for m in engine.list_memories(owner="k").data] == [kept.id]:
                    break
                time.sleep(0.2)
        assert [m.id for m in engine.list_memories(owner="k").data] == [kept.id]
    finally:
        engine.close()
