"""Shared by the MCP tests: the SDK's own client over streamable HTTP and over stdio,
with assertions on tool results, and the real app served on a loopback port."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memoryd.app import create_app
from memoryd.engine import MemoryEngine
from memoryd.testing import serve_asgi
from tests.conftest import ADMIN

MEMORYD = Path(sys.executable).with_name("memoryd")
PREFIXED = ("omniroute_memory_search", "omniroute_memory_add", "omniroute_memory_clear")


class Session:
    """A connected SDK client with assertions on tool results."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, result.content
        structured: dict[str, Any] | None = result.structured_content
        assert structured is not None
        return structured

    async def err(self, tool: str, args: dict[str, Any]) -> str:
        result = await self.client.call_tool(tool, args)
        assert result.is_error, result.structured_content
        text = result.content[0].text  # type: ignore[union-attr]
        assert isinstance(text, str)
        return text


Body = Callable[[Session], Awaitable[None]]


def over_http(url: str, token: str, body: Body, *, mode: str = "auto") -> None:
    """``mode="legacy"``: the 2025 initialize handshake and a stateful session; ``auto``
    negotiates the newest protocol."""

    async def main() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client,
        ):
            with anyio.fail_after(30):
                await body(Session(client))

    anyio.run(main)


def over_stdio(data_dir: Path, args: list[str], body: Body, *, errlog: Path) -> None:
    params = StdioServerParameters(
        command=str(MEMORYD), args=["--data-dir", str(data_dir), "mcp", *args]
    )

    async def main() -> None:
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                with anyio.fail_after(30):
                    await body(Session(client))

    try:
        anyio.run(main)
    except BaseException:
        print(errlog.read_text(), file=sys.stderr)  # the server's log, shown on failure
        raise


@dataclass
class Served:
    engine: MemoryEngine
    url: str
    alice: str  # client key secrets; the key ids are "alice" and "bob"
    bob: str


@contextmanager
def served(engine: MemoryEngine) -> Iterator[Served]:
    _, alice = engine.keys.create("Alice", key_id="alice")
    _, bob = engine.keys.create("Bob", key_id="bob")
    with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
        yield Served(engine, url, alice, bob)


def contents(engine: MemoryEngine, owner: str) -> list[str]:
    return sorted(m.content for m in engine.list_memories(owner=owner, limit=200).data)
