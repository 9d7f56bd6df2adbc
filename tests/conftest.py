"""Shared fixtures: a real engine on a real SQLite file in a temporary data dir."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.embedding.service import Resolver
from memoryd.engine import MemoryEngine
from memoryd.models import Memory, MemoryType, NewMemory, to_iso


def make_engine(
    data_dir: Path,
    env: Mapping[str, str] | None = None,
    *,
    resolver: Resolver | None,
    start_indexing: bool = True,
) -> MemoryEngine:
    """The one way a test builds an engine by hand: a real SQLite file in ``data_dir``,
    configured from ``env`` (the data dir added) as ``memoryd serve`` would be, with
    ``resolver`` choosing the embedder (``embedders.no_source``: keyword only)."""
    full = {"MEMORYD_DATA_DIR": str(data_dir), **(env or {})}
    return build_engine(
        EngineConfig.from_env(full, data_dir=data_dir),
        full,
        embedding_resolver=resolver,
        start_indexing=start_indexing,
    )


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    """Keyword-only: no embedding source (the vector tier has its own fixtures)."""
    from tests.embedders import no_source

    data = tmp_path / "data"
    eng = make_engine(data, resolver=no_source)
    try:
        yield eng
    finally:
        eng.close()


@pytest.fixture
def semantic_engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    """The vector tier on, with the deterministic hash embedder (tests/embedders.py)."""
    from tests.embedders import fixed_resolver

    data = tmp_path / "sdata"
    eng = make_engine(data, resolver=fixed_resolver("hash", 64))
    try:
        yield eng
    finally:
        eng.close()


def add(
    engine: MemoryEngine,
    owner: str,
    content: str,
    *,
    key: str | None = None,
    type: MemoryType = MemoryType.FACTUAL,
    session_id: str = "",
    metadata: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    created_at: datetime | None = None,
) -> Memory:
    """Create a memory; ``created_at`` backdates it (written straight to the row)."""
    memory, _ = engine.create(
        NewMemory(
            api_key_id=owner,
            content=content,
            key=key,
            type=type,
            session_id=session_id,
            metadata=metadata,
            expires_at=expires_at,
        )
    )
    if created_at is not None:
        stamp = to_iso(created_at)
        engine.store.db.write(
            lambda conn: conn.execute(
                "UPDATE memories SET created_at = ?, updated_at = ? WHERE id = ?",
                (stamp, stamp, memory.id),
            )
        )
        engine.cache.invalidate(memory.id)
        fresh = engine.get(memory.id)
        assert fresh is not None
        return fresh
    return memory


ADMIN = "test-admin-token"


@pytest.fixture
def client(engine: MemoryEngine) -> Iterator[Any]:
    """The real app in process over ASGI, authenticated with the admin token."""
    from fastapi.testclient import TestClient

    from memoryd.api import create_app

    app = create_app(engine, admin_token=ADMIN)
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        yield http
