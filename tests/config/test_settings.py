"""Settings (docs/design/interfaces.md#settings) and engine configuration from the
environment.

Ported from the reference memory-settings, memory-settings-default and
memory-settings-extended tests, adapted to memoryd: ``enabled`` defaults to true
(docs/design/interfaces.md#memory-is-on-by-default), values are stored under the
camelCase API names with the prefix ``memory.``, reads normalize and writes are strict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.config.settings import MemorySettings, SettingsService, normalize
from memoryd.engine import MemoryEngine
from memoryd.errors import ValidationError
from tests.conftest import add

ALL_FIELDS = {
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


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def put_raw(engine: MemoryEngine, key: str, raw_value: str) -> None:
    """Write a raw (possibly invalid) JSON text straight into the settings table."""
    engine.store.db.write(
        lambda conn: conn.execute(
            "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, raw_value, "2026-01-01T00:00:00.000Z"),
        )
    )
    engine.settings.invalidate()


def stored_rows(engine: MemoryEngine) -> dict[str, Any]:
    rows = engine.store.db.read().execute("SELECT key, value FROM settings")
    return {k: json.loads(v) for k, v in rows}


# -- defaults ------------------------------------------------------------------------


def test_defaults_of_an_empty_store() -> None:
    settings = normalize({})
    assert settings == MemorySettings()
    assert settings.enabled is True  # docs/design/interfaces.md#memory-is-on-by-default
    assert settings.max_tokens == 2000
    assert settings.retention_days is None  # long-term by default
    assert settings.strategy == "hybrid"
    assert settings.scope == "apiKey"
    assert settings.extract_from == ("user",)
    assert settings.embedding_source == "auto"
    assert settings.embedding_provider_model is None
    assert settings.static_enabled is False
    assert settings.rerank_enabled is False
    assert settings.rerank_provider_model is None
    assert settings.vector_store == "auto"
    assert settings.min_score is None
    assert settings.extraction_mode == "rules"
    assert settings.extraction_provider_model is None
    assert settings.extraction_timeout_ms == 15000
    assert settings.extraction_daily_token_cap == 0


def test_to_dict_has_exactly_the_camel_case_fields() -> None:
    data = MemorySettings().to_dict()
    assert set(data) == ALL_FIELDS
    assert data["extractFrom"] == ["user"]
    assert data["maxTokens"] == 2000
    assert data["minScore"] is None
    json.dumps(data)  # serializable as the API body


def test_fresh_engine_reads_defaults(engine: MemoryEngine) -> None:
    settings = engine.settings.get()
    expected = MemorySettings(transformers_enabled=settings.transformers_enabled)
    assert settings == expected
    assert settings.enabled is True


# -- normalization on read -----------------------------------------------------------


def test_normalize_wrong_types_and_out_of_range_fall_back_or_clamp() -> None:
    settings = normalize(
        {"enabled": "yes", "maxTokens": 20001, "retentionDays": -3, "strategy": "unsupported"}
    )
    assert settings == MemorySettings(max_tokens=16000, retention_days=1)
    assert settings.enabled is True
    assert settings.strategy == "hybrid"


def test_normalize_rounds_numbers() -> None:
    assert normalize({"maxTokens": 2000.6}).max_tokens == 2001
    assert normalize({"maxTokens": -5}).max_tokens == 0
    assert normalize({"retentionDays": 999}).retention_days == 365
    assert normalize({"retentionDays": 14.4}).retention_days == 14
    assert normalize({"retentionDays": 0}).retention_days is None  # 0 = keep


@pytest.mark.parametrize("value", ["4000", True, False, None, [4000], float("nan"), float("inf")])
def test_normalize_non_numbers_give_the_default(value: object) -> None:
    # String numbers are not coerced and booleans are not numbers.
    assert normalize({"maxTokens": value}).max_tokens == 2000
    assert normalize({"retentionDays": value}).retention_days is None


def test_normalize_enabled_false_is_kept() -> None:
    assert normalize({"enabled": False}).enabled is False
    assert normalize({"enabled": 0}).enabled is True  # a number is not a bool


@pytest.mark.parametrize("source", ["remote", "static", "transformers", "auto"])
def test_embedding_source_round_trips(source: str) -> None:
    assert normalize({"embeddingSource": source}).embedding_source == source


def test_unknown_embedding_source_gives_auto() -> None:
    assert normalize({"embeddingSource": "unknown_value"}).embedding_source == "auto"
    assert normalize({"embeddingSource": 3}).embedding_source == "auto"


def test_provider_models() -> None:
    model = "openai/text-embedding-3-small"
    assert normalize({"embeddingProviderModel": model}).embedding_provider_model == model
    assert normalize({"embeddingProviderModel": ""}).embedding_provider_model is None
    assert normalize({"embeddingProviderModel": None}).embedding_provider_model is None
    assert normalize({"embeddingProviderModel": 5}).embedding_provider_model is None
    rerank = normalize({"rerankProviderModel": "cohere/rerank-3"})
    assert rerank.rerank_provider_model == "cohere/rerank-3"


def test_boolean_flags_read_back() -> None:
    settings = normalize(
        {"transformersEnabled": False, "staticEnabled": True, "rerankEnabled": True}
    )
    assert settings.transformers_enabled is False
    assert settings.static_enabled is True
    assert settings.rerank_enabled is True
    assert normalize({"staticEnabled": "true"}).static_enabled is False


@pytest.mark.parametrize("store", ["sqlite-vec", "qdrant", "auto"])
def test_vector_store_round_trips(store: str) -> None:
    assert normalize({"vectorStore": store}).vector_store == store


def test_invalid_vector_store_gives_auto() -> None:
    assert normalize({"vectorStore": "invalid"}).vector_store == "auto"


@pytest.mark.parametrize("scope", ["session", "apiKey", "global"])
def test_scope_round_trips(scope: str) -> None:
    assert normalize({"scope": scope}).scope == scope


def test_invalid_scope_gives_default() -> None:
    assert normalize({"scope": "everyone"}).scope == "apiKey"
    assert normalize({"scope": "apikey"}).scope == "apiKey"


@pytest.mark.parametrize("strategy", ["recent", "semantic", "hybrid"])
def test_strategy_round_trips(strategy: str) -> None:
    assert normalize({"strategy": strategy}).strategy == strategy


def test_extract_from() -> None:
    assert normalize({"extractFrom": ["assistant", "user"]}).extract_from == ("assistant", "user")
    assert normalize({"extractFrom": ["assistant"]}).extract_from == ("assistant",)
    assert normalize({"extractFrom": ["bogus"]}).extract_from == ("user",)
    assert normalize({"extractFrom": ["user", "bogus"]}).extract_from == ("user",)
    assert normalize({"extractFrom": "user"}).extract_from == ("user",)


def test_min_score() -> None:
    assert normalize({"minScore": 1.5}).min_score == 1.0
    assert normalize({"minScore": -1}).min_score == 0.0
    assert normalize({"minScore": 0.25}).min_score == 0.25
    assert normalize({"minScore": "x"}).min_score is None
    assert normalize({"minScore": None}).min_score is None


def test_extraction_fields() -> None:
    assert normalize({"extractionMode": "hybrid"}).extraction_mode == "hybrid"
    assert normalize({"extractionMode": "LLM"}).extraction_mode == "rules"
    model = "openai/gpt-4o-mini"
    assert normalize({"extractionProviderModel": model}).extraction_provider_model == model
    assert normalize({"extractionProviderModel": "x"}).extraction_provider_model is None
    assert normalize({"extractionTimeoutMs": 5}).extraction_timeout_ms == 100
    assert normalize({"extractionTimeoutMs": 1e9}).extraction_timeout_ms == 120_000
    assert normalize({"extractionTimeoutMs": "9"}).extraction_timeout_ms == 15000
    assert normalize({"extractionDailyTokenCap": None}).extraction_daily_token_cap == 0
    assert normalize({"extractionDailyTokenCap": -4}).extraction_daily_token_cap == 0
    assert normalize({"extractionDailyTokenCap": 5e4}).extraction_daily_token_cap == 50_000
    assert normalize({"extractionDailyTokenCap": True}).extraction_daily_token_cap == 0


def test_profile_budget_and_sharing() -> None:
    """The profile's budget, and which keys share their memories."""
    assert MemorySettings().profile_max_tokens == 150
    assert MemorySettings().share_with_end_users == ()
    assert normalize({"profileMaxTokens": 5000}).profile_max_tokens == 2000
    assert normalize({"profileMaxTokens": "x"}).profile_max_tokens == 150
    shared = normalize({"shareWithEndUsers": ["k1", "k1", "k2"]})
    assert shared.share_with_end_users == ("k1", "k2")
    assert shared.shares("k1")
    assert not shared.shares("k3")
    assert normalize({"shareWithEndUsers": ["*"]}).shares("anything")
    assert normalize({"shareWithEndUsers": "k1"}).share_with_end_users == ()
    assert shared.to_dict()["shareWithEndUsers"] == ["k1", "k2"]


def test_unknown_stored_keys_are_ignored() -> None:
    assert normalize({"skillsEnabled": True, "memoryEnabled": False}) == MemorySettings()


# -- stored garbage ------------------------------------------------------------------


def test_garbage_in_the_settings_table_reads_as_defaults(engine: MemoryEngine) -> None:
    put_raw(engine, "memory.maxTokens", '"lots"')
    put_raw(engine, "memory.strategy", "not json")
    put_raw(engine, "memory.retentionDays", "NaN")
    put_raw(engine, "memory.scope", "{")
    put_raw(engine, "memory.extractFrom", '{"user": true}')
    put_raw(engine, "memory.minScore", "1e999")
    put_raw(engine, "memory.enabled", "false")  # a valid value next to the garbage
    settings = engine.settings.get()
    assert settings.max_tokens == 2000
    assert settings.strategy == "hybrid"
    assert settings.retention_days is None  # long-term by default
    assert settings.scope == "apiKey"
    assert settings.extract_from == ("user",)
    assert settings.min_score is None
    assert settings.enabled is False


def test_values_are_stored_under_prefixed_camel_case_keys(engine: MemoryEngine) -> None:
    engine.settings.update({"maxTokens": 4096, "strategy": "semantic", "extractFrom": ["user"]})
    rows = stored_rows(engine)
    assert rows["memory.maxTokens"] == 4096
    assert rows["memory.strategy"] == "semantic"
    assert rows["memory.extractFrom"] == ["user"]
    # Only the fields that were sent are written.
    assert set(rows) == {"memory.maxTokens", "memory.strategy", "memory.extractFrom"}


def test_raw_stored_value_under_prefixed_key_is_read(engine: MemoryEngine) -> None:
    put_raw(engine, "memory.maxTokens", "3200")
    put_raw(engine, "maxTokens", "100")  # no prefix: not a memory setting
    assert engine.settings.get().max_tokens == 3200


# -- strict writes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("maxTokens", 16001),
        ("maxTokens", -1),
        ("maxTokens", "4000"),
        ("maxTokens", True),
        ("retentionDays", -1),
        ("retentionDays", 366),
        ("retentionDays", "30"),
        ("strategy", "magic"),
        ("scope", "everyone"),
        ("embeddingSource", "magic"),
        ("embeddingProviderModel", "no-slash"),
        ("rerankProviderModel", 7),
        ("vectorStore", "pinecone"),
        ("minScore", 2),
        ("minScore", "0.5"),
        ("extractFrom", ["bogus"]),
        ("extractFrom", "user"),
        ("enabled", "yes"),
        ("staticEnabled", 1),
        ("extractionMode", "magic"),
        ("extractionMode", None),
        ("extractionProviderModel", "no-slash"),
        ("extractionTimeoutMs", 99),
        ("extractionTimeoutMs", 120_001),
        ("extractionTimeoutMs", "1000"),
        ("extractionTimeoutMs", None),
        ("extractionDailyTokenCap", -1),
        ("extractionDailyTokenCap", "5"),
        ("extractionDailyTokenCap", 10**10),
        ("profileMaxTokens", -1),
        ("profileMaxTokens", 2001),
        ("profileMaxTokens", "150"),
        ("shareWithEndUsers", "*"),
        ("shareWithEndUsers", [""]),
        ("shareWithEndUsers", [3]),
        ("shareWithEndUsers", None),
    ],
)
def test_update_rejects_invalid_values(engine: MemoryEngine, field: str, value: object) -> None:
    with pytest.raises(ValidationError) as info:
        engine.settings.update({field: value})
    assert any(d.get("field") == field for d in info.value.details)
    assert info.value.status == 400
    assert stored_rows(engine) == {}


def test_update_rejects_unknown_fields(engine: MemoryEngine) -> None:
    with pytest.raises(ValidationError) as info:
        engine.settings.update({"maxTokens": 100, "skillsEnabled": True})
    assert [d["field"] for d in info.value.details] == ["skillsEnabled"]
    assert "skillsEnabled" in info.value.message
    assert stored_rows(engine) == {}  # the valid maxTokens was not written either


def test_rejected_update_writes_nothing(engine: MemoryEngine) -> None:
    engine.settings.update({"maxTokens": 1234})
    before = stored_rows(engine)
    with pytest.raises(ValidationError):
        engine.settings.update({"maxTokens": 999, "retentionDays": 400})
    assert stored_rows(engine) == before
    assert engine.settings.get().max_tokens == 1234


def test_update_accepts_a_full_valid_payload(engine: MemoryEngine) -> None:
    payload = {
        "enabled": False,
        "maxTokens": 4096.4,
        "retentionDays": 21,
        "strategy": "recent",
        "scope": "session",
        "extractFrom": ["user", "assistant", "user"],
        "embeddingSource": "static",
        "embeddingProviderModel": "openai/text-embedding-3-small",
        "transformersEnabled": False,
        "staticEnabled": True,
        "rerankEnabled": True,
        "rerankProviderModel": "cohere/rerank-3",
        "vectorStore": "qdrant",
        "minScore": 0.3,
        "extractionMode": "hybrid",
        "extractionProviderModel": "local/qwen2.5-7b-instruct",
        "extractionTimeoutMs": 8000,
        "extractionDailyTokenCap": 200_000,
    }
    result = engine.settings.update(payload)
    expected = MemorySettings(
        enabled=False,
        max_tokens=4096,
        retention_days=21,
        strategy="recent",
        scope="session",
        extract_from=("user", "assistant"),
        embedding_source="static",
        embedding_provider_model="openai/text-embedding-3-small",
        transformers_enabled=False,
        static_enabled=True,
        rerank_enabled=True,
        rerank_provider_model="cohere/rerank-3",
        vector_store="qdrant",
        min_score=0.3,
        extraction_mode="hybrid",
        extraction_provider_model="local/qwen2.5-7b-instruct",
        extraction_timeout_ms=8000,
        extraction_daily_token_cap=200_000,
    )
    assert result == expected
    assert engine.settings.get() == expected
    # Another service on the same file reads the same normalized values.
    assert SettingsService(engine.store).get() == expected


def test_update_with_empty_provider_model_clears_it(engine: MemoryEngine) -> None:
    engine.settings.update({"embeddingProviderModel": "openai/text-embedding-3-small"})
    assert engine.settings.update({"embeddingProviderModel": ""}).embedding_provider_model is None
    engine.settings.update({"rerankProviderModel": "cohere/rerank-3"})
    assert engine.settings.update({"rerankProviderModel": None}).rerank_provider_model is None
    assert engine.settings.update({"minScore": None}).min_score is None


def test_partial_update_keeps_other_fields(engine: MemoryEngine) -> None:
    engine.settings.update({"maxTokens": 500, "strategy": "semantic"})
    settings = engine.settings.update({"retentionDays": 7})
    assert (settings.max_tokens, settings.strategy, settings.retention_days) == (500, "semantic", 7)


def test_update_accepts_boundaries(engine: MemoryEngine) -> None:
    assert engine.settings.update({"maxTokens": 0}).max_tokens == 0
    assert engine.settings.update({"maxTokens": 16000}).max_tokens == 16000
    assert engine.settings.update({"retentionDays": 1}).retention_days == 1
    assert engine.settings.update({"retentionDays": 365}).retention_days == 365
    assert engine.settings.update({"minScore": 0}).min_score == 0.0
    assert engine.settings.update({"minScore": 1}).min_score == 1.0
    assert engine.settings.update({"extractionTimeoutMs": 100}).extraction_timeout_ms == 100
    assert engine.settings.update({"extractionTimeoutMs": 120_000}).extraction_timeout_ms == 120_000
    cap = engine.settings.update({"extractionDailyTokenCap": 0}).extraction_daily_token_cap
    assert cap == 0
    assert engine.settings.update({"extractionDailyTokenCap": None}).extraction_daily_token_cap == 0


def test_update_rejects_a_non_object(engine: MemoryEngine) -> None:
    with pytest.raises(ValidationError):
        engine.settings.update(["maxTokens", 5])  # type: ignore[arg-type]


# -- cache ---------------------------------------------------------------------------


def test_update_invalidates_the_cache_immediately(tmp_path: Path) -> None:
    clock = FakeClock()
    with build_engine(EngineConfig.from_env({}, data_dir=tmp_path)) as eng:
        service = SettingsService(eng.store, ttl_s=60.0, clock=clock)
        assert service.get().max_tokens == 2000
        service.update({"maxTokens": 777})
        assert service.get().max_tokens == 777  # no time passed, yet fresh


def test_other_process_writes_are_seen_after_the_ttl(tmp_path: Path) -> None:
    clock = FakeClock()
    config = EngineConfig.from_env({}, data_dir=tmp_path)
    with build_engine(config) as first, build_engine(config) as second:
        reader = SettingsService(first.store, ttl_s=2.0, clock=clock)
        assert reader.get().max_tokens == 2000
        second.settings.update({"maxTokens": 3000, "strategy": "recent"})
        clock.now += 1.0
        assert reader.get().max_tokens == 2000  # still cached within the TTL
        clock.now += 1.5
        fresh = reader.get()
        assert (fresh.max_tokens, fresh.strategy) == (3000, "recent")


def test_invalidate_forces_a_reread(engine: MemoryEngine) -> None:
    clock = FakeClock()
    service = SettingsService(engine.store, ttl_s=60.0, clock=clock)
    assert service.get().retention_days is None
    put_raw(engine, "memory.retentionDays", "90")
    assert service.get().retention_days is None
    service.invalidate()
    assert service.get().retention_days == 90


# -- derived views -------------------------------------------------------------------


def test_retrieval_strategy_maps_recent_to_exact() -> None:
    assert MemorySettings(strategy="recent").retrieval_strategy == "exact"
    assert MemorySettings(strategy="semantic").retrieval_strategy == "semantic"
    assert MemorySettings(strategy="hybrid").retrieval_strategy == "hybrid"


def test_stored_recent_strategy_reaches_retrieval_as_exact(engine: MemoryEngine) -> None:
    assert engine.settings.update({"strategy": "recent"}).retrieval_strategy == "exact"


def test_with_overrides_does_not_change_stored_settings(engine: MemoryEngine) -> None:
    engine.settings.update({"maxTokens": 1500})
    view = engine.settings.with_overrides(enabled=False)
    assert view.enabled is False
    assert view.max_tokens == 1500
    assert engine.settings.get().enabled is True
    engine.settings.invalidate()
    assert engine.settings.get().enabled is True
    assert "memory.enabled" not in stored_rows(engine)


def test_max_tokens_zero_disables_injection(engine: MemoryEngine) -> None:
    add(engine, "owner-1", "I prefer dark mode in the editor")
    assert engine.retrieve("owner-1", strategy="exact")
    engine.settings.update({"maxTokens": 0})
    assert engine.retrieve("owner-1", strategy="exact") == []


# -- engine configuration from the environment ---------------------------------------


def test_config_defaults(tmp_path: Path) -> None:
    config = EngineConfig.from_env({}, data_dir=tmp_path)
    assert config.data_dir == tmp_path
    assert config.db_path == tmp_path / "memoryd.db"
    assert config.rrf_k == 60
    assert config.vec_top_k == 40
    assert config.vec_quantization == "none"
    assert config.decay.enabled is False
    # the hybrid pipeline chosen by leave-one-conversation-out
    assert config.fusion == "zscore"
    assert (config.rrf_fts_weight, config.rrf_vector_weight) == (1.0, 0.7)
    assert (config.context_field_weight, config.context_vector_weight) == (0.2, 0.0)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"MEMORY_FUSION": "rrf"}, ("rrf", 0.2, 0.0)),
        ({"MEMORY_FUSION": "SCORE"}, ("score", 0.2, 0.0)),
        ({"MEMORY_FUSION": "borda"}, ("zscore", 0.2, 0.0)),  # unknown: the default
        (
            {"MEMORY_CONTEXT_FIELD_WEIGHT": "3", "MEMORY_CONTEXT_VECTOR_WEIGHT": "-1"},
            ("zscore", 1.0, 0.0),
        ),
        (
            {"MEMORY_CONTEXT_FIELD_WEIGHT": "x", "MEMORY_CONTEXT_VECTOR_WEIGHT": "2"},
            ("zscore", 0.2, 2.0),
        ),
    ],
)
def test_fusion_and_context_weights_from_the_environment(
    tmp_path: Path, env: dict[str, str], expected: tuple[str, float, float]
) -> None:
    config = EngineConfig.from_env(env, data_dir=tmp_path)
    assert (config.fusion, config.context_field_weight, config.context_vector_weight) == expected


def test_config_reads_tuning_variables(tmp_path: Path) -> None:
    config = EngineConfig.from_env(
        {"MEMORY_RRF_K": "30", "MEMORY_VEC_TOP_K": "50", "MEMORY_VEC_QUANTIZATION": "int8"},
        data_dir=tmp_path,
    )
    assert (config.rrf_k, config.vec_top_k, config.vec_quantization) == (30, 50, "int8")


@pytest.mark.parametrize(("raw", "expected"), [("0", 1), ("-3", 1), ("500", 100), ("100", 100)])
def test_vec_top_k_is_clamped(tmp_path: Path, raw: str, expected: int) -> None:
    config = EngineConfig.from_env({"MEMORY_VEC_TOP_K": raw}, data_dir=tmp_path)
    assert config.vec_top_k == expected


@pytest.mark.parametrize(
    ("raw", "expected"), [("int8", "int8"), ("none", "none"), ("bf16", "none")]
)
def test_vec_quantization(tmp_path: Path, raw: str, expected: str) -> None:
    config = EngineConfig.from_env({"MEMORY_VEC_QUANTIZATION": raw}, data_dir=tmp_path)
    assert config.vec_quantization == expected


@pytest.mark.parametrize("raw", ["", "abc", "nan", "inf", "-inf", "1e400"])
def test_invalid_numbers_give_defaults(tmp_path: Path, raw: str) -> None:
    env = {
        "MEMORY_RRF_K": raw,
        "MEMORY_VEC_TOP_K": raw,
        "MEMORY_RRF_FTS_WEIGHT": raw,
        "MEMORY_RRF_VECTOR_WEIGHT": raw,
        "MEMORY_EMBEDDING_CACHE_MAX": raw,
    }
    config = EngineConfig.from_env(env, data_dir=tmp_path)
    assert config.rrf_k == 60
    assert config.vec_top_k == 40
    assert config.rrf_fts_weight == 1.0
    assert config.rrf_vector_weight == 0.7
    assert config.embedding_cache_max == 1000


def test_data_dir_from_env_when_not_passed(tmp_path: Path) -> None:
    config = EngineConfig.from_env({"MEMORYD_DATA_DIR": str(tmp_path / "from-env")})
    assert config.data_dir == tmp_path / "from-env"
    explicit = EngineConfig.from_env(
        {"MEMORYD_DATA_DIR": str(tmp_path / "from-env")}, data_dir=tmp_path / "explicit"
    )
    assert explicit.data_dir == tmp_path / "explicit"


def test_data_dir_defaults_to_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert EngineConfig.from_env({}).data_dir == tmp_path / ".memoryd"
    assert EngineConfig.from_env({"MEMORYD_DATA_DIR": "  "}).data_dir == tmp_path / ".memoryd"


def test_typed_decay_config_from_env(tmp_path: Path) -> None:
    config = EngineConfig.from_env(
        {"MEMORY_TYPED_DECAY_ENABLED": "true", "MEMORY_TYPED_DECAY_EPISODIC_DAYS": "7"},
        data_dir=tmp_path,
    )
    assert config.decay.enabled is True
    assert config.decay.ttl_days_by_type["episodic"] == 7
