"""The MCP tools over stdio: the SDK's own client against a real `memoryd mcp`
subprocess on a temporary data dir (docs/design/interfaces.md#mcp)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.engine import MemoryEngine
from memoryd.mcp import TOOL_NAMES
from tests.conftest import add, make_engine
from tests.embedders import no_source
from tests.mcp_support import MEMORYD, Session, contents, over_stdio


@pytest.fixture
def data_dir(tmp_path: Path) -> tuple[Path, str]:
    """A data dir with keys alice and bob, one memory of bob's, keyword-only search."""
    data = tmp_path / "stdio"
    engine = make_engine(data, resolver=no_source)
    try:
        engine.settings.update({"transformersEnabled": False, "strategy": "hybrid"})
        _, secret = engine.keys.create("Alice", key_id="alice")
        engine.keys.create("Bob", key_id="bob")
        add(engine, "bob", "Bob deploys with Kubernetes")
    finally:
        engine.close()
    return data, secret


def reopen(data: Path) -> MemoryEngine:
    config = EngineConfig.from_env({}, data_dir=data)
    return build_engine(config, {"MEMORYD_DATA_DIR": str(data)}, embedding_resolver=no_source)


def test_stdio_with_a_client_key(data_dir: tuple[Path, str], tmp_path: Path) -> None:
    data, secret = data_dir

    async def body(s: Session) -> None:
        assert {t.name for t in (await s.client.list_tools()).tools} == set(TOOL_NAMES)
        new = {"type": "factual", "key": "pref:os", "content": "Alice runs Kubernetes on Linux"}
        assert (await s.ok("omniroute_memory_add", new))["memory"]["apiKeyId"] == "alice"
        found = await s.ok("memory_search", {"query": "Kubernetes"})
        assert [m["apiKeyId"] for m in found["memories"]] == ["alice"]
        assert "own memories" in await s.err("memory_search", {"apiKeyId": "bob"})
        assert "own memories" in await s.err("memory_clear", {"apiKeyId": "bob"})
        assert "olderThan" in await s.err("memory_clear", {"olderThan": "soon"})
        await s.ok("memory_add", {**new, "key": "pref:editor", "content": "Alice uses vim"})
        assert await s.ok("memory_clear", {"olderThan": "2999-01-01"}) == {"deletedCount": 2}

    over_stdio(data, ["--api-key", secret], body, errlog=tmp_path / "err.log")
    with reopen(data) as engine:
        assert contents(engine, "alice") == []
        assert contents(engine, "bob") == ["Bob deploys with Kubernetes"]


def test_stdio_as_admin(data_dir: tuple[Path, str], tmp_path: Path) -> None:
    data, _ = data_dir

    async def body(s: Session) -> None:
        assert "apiKeyId: required" in await s.err("memory_search", {"query": "Kubernetes"})
        found = await s.ok("omniroute_memory_search", {"apiKeyId": "bob", "query": "Kubernetes"})
        assert found["count"] == 1
        new = {"apiKeyId": "bob", "type": "procedural", "key": "how:deploy", "content": "kubectl"}
        await s.ok("memory_add", new)
        cleared = await s.ok("memory_clear", {"apiKeyId": "bob", "type": "procedural"})
        assert cleared == {"deletedCount": 1}

    over_stdio(data, ["--admin"], body, errlog=tmp_path / "err.log")
    with reopen(data) as engine:
        assert contents(engine, "bob") == ["Bob deploys with Kubernetes"]


def test_stdio_refuses_to_start_without_a_valid_credential(data_dir: tuple[Path, str]) -> None:
    data, secret = data_dir
    for args in (["--api-key", "mk_" + "x" * 40], [], ["--admin", "--api-key", secret]):
        proc = subprocess.run(
            [str(MEMORYD), "--data-dir", str(data), "mcp", *args],
            input="",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 1, args
        assert proc.stdout == ""
        assert proc.stderr.startswith("error: "), proc.stderr
