"""Qdrant settings: the reference qdrant-wiring normalization cases (adapted: memoryd has
no embeddingModel/vectorSize/hnswEfConstruct, see qdrant_config's docstring), strict
validation on write, the masked key, and the quantization shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memoryd.config.qdrant import (
    DEFAULT_COLLECTION,
    QdrantConfig,
    load,
    normalize,
    quantization_config,
    save,
    search_quantization_params,
    validate_update,
)
from memoryd.engine import MemoryEngine
from memoryd.errors import ValidationError

# -- normalizeQdrantConfig (qdrant-wiring) ---------------------------------------------


def test_empty_settings_give_the_defaults() -> None:
    cfg = normalize({})
    assert cfg == QdrantConfig()
    assert (cfg.enabled, cfg.host, cfg.api_key, cfg.port) == (False, "", None, 6333)
    assert cfg.collection == DEFAULT_COLLECTION == "memoryd_memory"
    assert cfg.quantization == "none"
    assert cfg.path is None
    assert cfg.mode == "none"


def test_host_is_kept_when_disabled() -> None:
    cfg = normalize({"host": "qdrant.example.com", "enabled": False})
    assert cfg.enabled is False
    assert cfg.host == "qdrant.example.com"


def test_every_field_is_echoed() -> None:
    cfg = normalize(
        {
            "enabled": True,
            "host": "qdrant.example.com",
            "port": 6334,
            "apiKey": "secret-key",
            "collection": "my_memory",
            "quantization": "int8",
            "path": "/var/lib/q",
        }
    )
    assert cfg == QdrantConfig(True, "qdrant.example.com", 6334, "secret-key", "my_memory",
                               "/var/lib/q", "int8")  # fmt: skip


def test_string_port_and_blank_key() -> None:
    assert normalize({"port": "6335"}).port == 6335
    assert normalize({"port": "not-a-number"}, {"QDRANT_PORT": "7777"}).port == 6333
    assert normalize({"port": 6334.6}).port == 6335
    assert normalize({"port": 70000}).port == 6333
    assert normalize({"apiKey": "   "}).api_key is None


@pytest.mark.parametrize("value", [None, 0, "", "true", 1, "yes", [True]])
def test_only_boolean_true_enables(value: Any) -> None:
    assert normalize({"enabled": value}).enabled is False
    assert normalize({"enabled": True}).enabled is True


@pytest.mark.parametrize(
    ("stored", "expected"),
    [(None, "none"), ("int8", "int8"), ("binary", "binary"), ("none", "none"),
     ("bogus", "none"), (5, "none")],
)  # fmt: skip
def test_quantization_normalization(stored: Any, expected: str) -> None:
    raw = {} if stored is None else {"quantization": stored}
    assert normalize(raw).quantization == expected


def test_quantization_shapes() -> None:
    assert quantization_config("none") is None
    assert quantization_config("int8") == {
        "scalar": {"type": "int8", "always_ram": True, "quantile": 0.99}
    }
    assert quantization_config("binary") == {"binary": {"always_ram": True}}
    assert search_quantization_params("none") is None
    assert search_quantization_params("int8") == {"quantization": {"rescore": True}}
    assert search_quantization_params("binary") == {
        "quantization": {"rescore": True, "oversampling": 3.0}
    }


def test_environment_fallbacks() -> None:
    env = {"QDRANT_HOST": "env-host", "QDRANT_PORT": "6334", "QDRANT_API_KEY": "env-key",
           "QDRANT_COLLECTION": "env_coll"}  # fmt: skip
    assert normalize({"host": "setting-host"}, env).host == "setting-host"  # setting wins
    from_env = normalize({}, env)
    assert (from_env.host, from_env.port, from_env.api_key, from_env.collection) == (
        "env-host", 6334, "env-key", "env_coll",
    )  # fmt: skip
    assert normalize({"apiKey": "  "}, env).api_key == "env-key"  # blank setting: env
    assert normalize({"port": 6335}, env).port == 6335
    all_env = {"QDRANT_HOST": "h", "QDRANT_PORT": "7777", "QDRANT_API_KEY": "k",
               "QDRANT_COLLECTION": "c"}  # fmt: skip
    cfg = normalize({}, all_env)
    assert (cfg.host, cfg.port, cfg.api_key, cfg.collection) == ("h", 7777, "k", "c")
    assert normalize({}, {"QDRANT_PORT": "junk"}).port == 6333


def test_base_url_gets_a_scheme_and_a_port() -> None:
    assert QdrantConfig(host="qdrant.local").url == "http://qdrant.local:6333"
    assert QdrantConfig(host="qdrant.local", port=7000).url == "http://qdrant.local:7000"
    assert QdrantConfig(host="https://x.cloud:443").url == "https://x.cloud:443"
    assert QdrantConfig(host="https://x.cloud/").url == "https://x.cloud:6333"
    assert QdrantConfig().url is None
    assert QdrantConfig(host="h", path="/p").mode == "local"  # a path wins
    assert QdrantConfig(host="h").mode == "server"


def test_public_shape_masks_the_key() -> None:
    shown = QdrantConfig(enabled=True, host="h", api_key="sk-verysecretvalue1234").public()
    assert set(shown) == {"enabled", "host", "port", "collection", "path", "quantization",
                          "embeddingModel", "hasApiKey", "apiKeyMasked"}  # fmt: skip
    assert shown["hasApiKey"] is True
    assert shown["apiKeyMasked"] == "sk-v…1234"
    assert "sk-verysecretvalue1234" not in str(shown)
    assert QdrantConfig().public()["apiKeyMasked"] is None


# -- strict writes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"port": 0},
        {"port": 65536},
        {"port": "6333"},
        {"port": True},
        {"collection": ""},
        {"collection": "a/b"},
        {"quantization": "fp16"},
        {"enabled": "true"},
        {"host": "ftp://h"},
        {"host": "bad host"},
        {"host": "h:99999"},
        {"apiKey": 5},
        {"path": 3},
        {"embeddingModel": 5},
        {"embeddingModel": "bad\nmodel"},
        {"vectorSize": 1536},
    ],
)
def test_invalid_updates_name_the_field(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as info:
        validate_update(bad)
    assert info.value.details[0]["field"] == next(iter(bad))


def test_valid_update_and_removal_values() -> None:
    out = validate_update({"enabled": True, "host": " qdrant.local ", "port": 6334,
                           "collection": "c1", "quantization": "binary", "apiKey": "",
                           "path": ""})  # fmt: skip
    assert out == {"enabled": True, "host": "qdrant.local", "port": 6334, "collection": "c1",
                   "quantization": "binary", "apiKey": None, "path": None}  # fmt: skip


def test_save_and_load_round_trip_and_removal(engine: MemoryEngine) -> None:
    save(engine.store, validate_update({"host": "h1", "apiKey": "key-123456789", "port": 7000}))
    cfg = load(engine.store)
    assert (cfg.host, cfg.api_key, cfg.port) == ("h1", "key-123456789", 7000)
    save(engine.store, validate_update({"apiKey": ""}))
    assert load(engine.store).api_key is None
    assert load(engine.store, {"QDRANT_API_KEY": "from-env"}).api_key == "from-env"


# -- the local-mode path (fuzzer find, ec434f6) ------------------------------------------


def _bad_paths(root: Path) -> list[str]:
    """Paths local mode must refuse: relative ones, and absolute ones whose parent does
    not exist (the fuzzer's values used to become directories on disk)."""
    return [
        "qdrant-data",
        "./q",
        "../q",
        "nested/dir/q",
        "~/q",  # not expanded: relative
        str(root / "missing" / "q"),
        str(root / "missing" / "deeper" / "q"),
        str(root / "missing" / ".." / "missing2" / "q"),  # normalized, still no parent
        "/q-at-the-filesystem-root",
        f"{root}/q\nx",
    ]


def _tree(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def test_local_path_must_be_absolute_with_an_existing_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a relative path would land
    before = _tree(tmp_path)
    for path in _bad_paths(tmp_path):
        with pytest.raises(ValidationError) as info:
            validate_update({"path": path})
        assert info.value.details[0]["field"] == "path", path
        message = info.value.details[0]["message"]
        assert "absolute" in message or "parent directory" in message, (path, message)
    assert _tree(tmp_path) == before  # nothing was created
    assert not Path("/q-at-the-filesystem-root").exists()
    # an absolute path under an existing directory is accepted (normalized), not created
    assert validate_update({"path": f"{tmp_path}/./q/"}) == {"path": str(tmp_path / "q")}
    assert _tree(tmp_path) == before


def test_bad_local_path_through_the_settings_route_is_a_400(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cwd"  # apart from the engine's data directory, which is live
    root.mkdir()
    monkeypatch.chdir(root)
    before = _tree(root)
    for path in _bad_paths(root):
        response = client.put("/api/settings/qdrant", json={"enabled": True, "path": path})
        assert response.status_code == 400, (path, response.text)
        error = response.json()["error"]
        assert error["details"][0]["field"] == "path", path
        assert "path" in error["message"], error
    assert _tree(root) == before  # nothing was created
    shown = client.get("/api/settings/qdrant").json()
    assert shown["path"] is None  # and nothing was stored
    assert shown["enabled"] is False
