"""Source resolution (``auto``: docs/design/vectors.md#choosing-a-source), signatures,
errors, registry and the provider listing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memoryd.config.settings import MemorySettings
from memoryd.embedding import (
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    ProviderConfig,
    available_sources,
    create,
    list_embedding_providers,
    local_model_files,
    register,
    resolve_source,
    sanitize_message,
    unregister,
)
from tests.embedding.test_embedding_static import make_tiny_model

INSTALLED = local_model_files() is not None
OPENAI = ProviderConfig("openai", "https://api.openai.com/v1", "sk-x")


def settings(**changes: object) -> MemorySettings:
    base: dict[str, object] = {"transformers_enabled": False, "static_enabled": False}
    return MemorySettings(**(base | changes))  # type: ignore[arg-type]


@pytest.fixture
def ctx(tmp_path: Path) -> EmbeddingContext:
    """No providers, an empty data dir (no static model)."""
    return EmbeddingContext(data_dir=tmp_path / "empty")


@pytest.fixture
def with_static(tmp_path: Path) -> EmbeddingContext:
    make_tiny_model(tmp_path / "data" / "models" / "static", name="tiny-static")
    return EmbeddingContext(data_dir=tmp_path / "data")


# -- auto ------------------------------------------------------------------------------


def test_auto_with_nothing_is_no_source(ctx: EmbeddingContext) -> None:
    resolution = resolve_source(settings(), ctx)
    assert resolution.source is None
    assert "no embedding source" in resolution.reason
    assert resolution.signature == "null:null:null"


def test_auto_prefers_a_keyed_remote_provider(with_static: EmbeddingContext) -> None:
    ctx = EmbeddingContext(data_dir=with_static.data_dir, providers={"openai": OPENAI})
    resolution = resolve_source(
        settings(embedding_provider_model="openai/text-embedding-3-small", static_enabled=True),
        ctx,
    )
    assert (resolution.source, resolution.model) == ("remote", "openai/text-embedding-3-small")
    # the width comes from the provider's first answer, not from the model's name
    assert resolution.dimensions is None
    assert resolution.signature == "remote:openai/text-embedding-3-small:null"
    assert "openai" in resolution.reason
    assert "dim=unknown, will probe at embed time" in resolution.reason


@pytest.mark.parametrize(
    "providers",
    [{}, {"openai": ProviderConfig("openai", "https://api.openai.com/v1", None)}],
)
def test_auto_skips_a_provider_without_key(
    with_static: EmbeddingContext, providers: dict[str, ProviderConfig]
) -> None:
    ctx = EmbeddingContext(data_dir=with_static.data_dir, providers=providers)
    chosen = settings(embedding_provider_model="openai/text-embedding-3-small", static_enabled=True)
    assert resolve_source(chosen, ctx).source == "static"
    assert resolve_source(settings(embedding_provider_model="openai/x"), ctx).source is None


def test_remote_of_an_unknown_model_probes_its_width() -> None:
    local = ProviderConfig("local", "http://127.0.0.1:9/v1", "k")
    ctx = EmbeddingContext(providers={"local": local})
    resolution = resolve_source(settings(embedding_provider_model="local/nomic-embed"), ctx)
    assert (resolution.source, resolution.dimensions) == ("remote", None)
    assert resolution.signature == "remote:local/nomic-embed:null"
    assert "probe" in resolution.reason


def test_auto_static_when_enabled_and_present(with_static: EmbeddingContext) -> None:
    resolution = resolve_source(
        settings(static_enabled=True, transformers_enabled=True), with_static
    )
    assert (resolution.source, resolution.model, resolution.dimensions) == (
        "static",
        "tiny-static",
        4,
    )
    assert resolution.signature == "static:tiny-static:4"
    assert resolve_source(settings(static_enabled=False), with_static).source is None


def test_auto_static_enabled_but_absent_falls_through(ctx: EmbeddingContext) -> None:
    assert resolve_source(settings(static_enabled=True), ctx).source is None


def test_static_model_dir_from_the_environment(tmp_path: Path) -> None:
    make_tiny_model(tmp_path / "elsewhere")
    ctx = EmbeddingContext(env={"MEMORY_STATIC_MODEL": str(tmp_path / "elsewhere")})
    resolution = resolve_source(settings(static_enabled=True), ctx)
    assert (resolution.source, resolution.model) == ("static", "elsewhere")
    data_env = EmbeddingContext(env={"MEMORYD_DATA_DIR": str(tmp_path / "d")})
    make_tiny_model(tmp_path / "d" / "models" / "static")
    assert resolve_source(settings(static_enabled=True), data_env).source == "static"


@pytest.mark.skipif(not INSTALLED, reason="pip install 'memoryd[local]'")
def test_auto_transformers_when_enabled_and_installed(ctx: EmbeddingContext) -> None:
    resolution = resolve_source(settings(transformers_enabled=True), ctx)
    assert resolution.to_dict() == {
        "source": "transformers",
        "model": "all-MiniLM-L6-v2",
        "dimensions": 384,
        "signature": "transformers:all-MiniLM-L6-v2:384",
        "reason": resolution.reason,
    }
    assert resolution.reason.startswith("auto:")


def test_transformers_not_installed(tmp_path: Path) -> None:
    ctx = EmbeddingContext(env={"MEMORY_TRANSFORMERS_MODEL_DIR": str(tmp_path)})
    for source in ("auto", "transformers"):
        resolution = resolve_source(
            settings(embedding_source=source, transformers_enabled=True), ctx
        )
        assert resolution.source is None
    assert "pip install 'memoryd[local]'" in resolution.reason


# -- explicit sources ------------------------------------------------------------------


def test_explicit_remote(ctx: EmbeddingContext) -> None:
    no_model = resolve_source(settings(embedding_source="remote"), ctx)
    assert no_model.source is None
    assert "no_key" in no_model.reason
    assert "configured" in no_model.reason
    keyed = EmbeddingContext(providers={"openai": OPENAI})
    chosen = settings(embedding_source="remote", embedding_provider_model="openai/m")
    resolution = resolve_source(chosen, keyed)
    assert (resolution.source, resolution.model) == ("remote", "openai/m")
    assert "no_key" in resolve_source(chosen, ctx).reason


def test_explicit_static(with_static: EmbeddingContext, ctx: EmbeddingContext) -> None:
    enabled = settings(embedding_source="static", static_enabled=True)
    assert resolve_source(enabled, with_static).source == "static"
    disabled = resolve_source(settings(embedding_source="static"), with_static)
    assert disabled.source is None
    assert "disabled" in disabled.reason
    absent = resolve_source(enabled, ctx)
    assert absent.source is None
    assert "build-static" in absent.reason


def test_explicit_static_does_not_fall_back(with_static: EmbeddingContext) -> None:
    only = settings(embedding_source="transformers", static_enabled=True)
    assert resolve_source(only, with_static).source is None


@pytest.mark.skipif(not INSTALLED, reason="pip install 'memoryd[local]'")
def test_explicit_transformers(ctx: EmbeddingContext) -> None:
    enabled = settings(embedding_source="transformers", transformers_enabled=True)
    assert resolve_source(enabled, ctx).source == "transformers"
    disabled = resolve_source(settings(embedding_source="transformers"), ctx)
    assert disabled.source is None
    assert "disabled" in disabled.reason


def test_resolution_is_deterministic(with_static: EmbeddingContext) -> None:
    chosen = settings(static_enabled=True)
    assert resolve_source(chosen, with_static) == resolve_source(chosen, with_static)
    signature = resolve_source(chosen, with_static).signature
    assert "static" in signature
    assert ":" in signature
    assert all(resolve_source(settings(), with_static).reason for _ in range(2))


# -- errors, registry ------------------------------------------------------------------


def test_error_messages_are_sanitized() -> None:
    message = 'boom at /srv/app/x.py:12:3 in File "/srv/app/y.py", line 9, in run\nTraceback'
    error = EmbeddingError("request_failed", message, source="remote", model="p/m")
    assert "/srv" not in error.message
    assert "\n" not in error.message
    assert error.message.startswith("boom")
    assert error.to_dict() == {
        "source": "remote",
        "model": "p/m",
        "reason": "request_failed",
        "message": error.message,
    }
    assert len(sanitize_message("x" * 1000)) <= 300
    assert sanitize_message("") == "embedding failed"


class BagOfOnes:
    name = "ones"
    model = "m"

    @property
    def dimensions(self) -> int:
        return 2

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return np.full((len(texts), 2), 2**-0.5, dtype=np.float32)

    def embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_batch([text])[0]
        return vector


def test_registry_round_trip(ctx: EmbeddingContext) -> None:
    assert {"remote", "static", "transformers"} <= set(available_sources())
    register("ones", lambda resolution, context: BagOfOnes())
    try:
        assert "ones" in available_sources()
        made = create(EmbeddingResolution("ones", "m", 2, "test"), ctx)
        assert made.embed("x").tolist() == pytest.approx([2**-0.5, 2**-0.5])
    finally:
        unregister("ones")
    assert "ones" not in available_sources()


@pytest.mark.parametrize("source", ["nope", None])
def test_create_of_an_unknown_source_is_model_load_failed(
    ctx: EmbeddingContext, source: str | None
) -> None:
    with pytest.raises(EmbeddingError) as info:
        create(EmbeddingResolution(source, None, None, "auto: no embedding source available"), ctx)
    assert info.value.reason == "model_load_failed"


def test_importing_the_package_loads_nothing_heavy() -> None:
    code = (
        "import sys, memoryd.embedding; "
        "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'httpx', 'safetensors') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


# -- provider listing ------------------------------------------------------------------


def test_provider_listing_shape(with_static: EmbeddingContext) -> None:
    local = ProviderConfig("local", "http://127.0.0.1:9/v1", None)
    ctx = EmbeddingContext(
        data_dir=with_static.data_dir, providers={"openai": OPENAI, "local": local}
    )
    entries = list_embedding_providers(ctx, settings(embedding_provider_model="local/nomic"))
    by_name = {e["provider"]: e for e in entries}
    assert list(by_name) == ["transformers", "static", "local", "openai"]
    assert by_name["transformers"]["hasKey"] is INSTALLED
    assert by_name["transformers"]["models"] == [
        {
            "id": "transformers/all-MiniLM-L6-v2",
            "name": "all-MiniLM-L6-v2 (local ONNX)",
            "dimensions": 384,
        }
    ]
    assert by_name["static"]["models"][0]["id"] == "static/tiny-static"
    assert by_name["static"]["models"][0]["dimensions"] == 4
    assert by_name["openai"]["hasKey"] is True
    assert {m["id"] for m in by_name["openai"]["models"]} == {
        "openai/text-embedding-3-small",
        "openai/text-embedding-3-large",
        "openai/text-embedding-ada-002",
    }
    assert by_name["local"] == {
        "provider": "local",
        "hasKey": False,
        "models": [{"id": "local/nomic", "name": "nomic", "dimensions": None}],
    }
    for entry in entries:
        for model in entry["models"]:
            assert isinstance(model["id"], str)
            assert model["id"].startswith(entry["provider"] + "/")
            assert isinstance(model["name"], str)
            assert model["name"]
            assert model["dimensions"] is None or model["dimensions"] > 0


def test_provider_listing_without_static(ctx: EmbeddingContext) -> None:
    names = [e["provider"] for e in list_embedding_providers(ctx, settings())]
    assert names == ["transformers"]
