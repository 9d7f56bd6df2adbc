"""A newcomer following only the README, from the installed wheel: the demo
server, a key made by name, the README's own Python snippet run as written against it,
memory coming back in the next answer, the dashboard, the quick start's printed output
line for line, and an MCP client started from the config ``--print-config`` prints,
with nothing else in its environment."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from pathlib import Path
from typing import Any

import httpx
from conftest import run, wait_for
from openai import OpenAI

README = (Path(__file__).parent / "README.md").read_text(encoding="utf-8")


def block_after(marker: str) -> str:
    rest = README[README.index(marker) :]
    found = re.search(r"```[a-z]*\n(.*?)```", rest, re.S)
    assert found is not None, marker
    return found[1]


def test_the_readme_quick_start_from_the_wheel(serve: Any, tmp_path: Path) -> None:
    data = str(tmp_path / "newcomer")
    server = serve("--demo", "--data-dir", data)
    assert f"dashboard  {server.url}/dashboard" in server.log()
    created = run("--data-dir", data, "keys", "create", "my-app")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.splitlines()[1]

    snippet = block_after("```python\nfrom openai import OpenAI")
    snippet = snippet.replace("http://127.0.0.1:20128", server.url).replace("mk_...", secret)
    exec(compile(snippet, "README.md", "exec"), {})  # the README's code, as written

    def stored() -> bool:
        listed = run("--data-dir", data, "memory", "list", "-k", "my-app")
        return "User's dog is called Rex" in listed.stdout

    assert wait_for("the quick start's memories", stored)
    client = OpenAI(base_url=f"{server.url}/v1", api_key=secret, max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "What is my dog called?"}]
    )
    assert "- User's dog is called Rex" in (reply.choices[0].message.content or "")
    assert httpx.get(f"{server.url}/dashboard/login", timeout=30).status_code == 200

    command, *shown = block_after("What memoryd stored from that one message").rstrip().split("\n")
    fresh = str(tmp_path / "remember")
    assert run("--data-dir", fresh, "keys", "create", "my-app").returncode == 0
    printed = run("--data-dir", fresh, *shlex.split(command)[2:])
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.rstrip("\n").split("\n") == shown


def test_the_printed_mcp_config_works_as_pasted(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    data = str(tmp_path / "mcp")
    created = run("--data-dir", data, "keys", "create", "laptop")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.splitlines()[1]
    printed = run("--data-dir", data, "mcp", "--print-config", "claude", "--api-key", secret)
    assert printed.returncode == 0, printed.stderr
    entry = json.loads(printed.stdout)["mcpServers"]["memoryd"]
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={"PATH": "/usr/bin:/bin", **entry.get("env", {})},  # a client's bare environment
        cwd=str(tmp_path),
    )

    async def session() -> str:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            await s.call_tool("memory_add", {"content": "User deploys with Nomad"})
            found = await s.call_tool("memory_search", {"query": "Nomad"})
            return json.dumps(found.structured_content)

    assert "Nomad" in asyncio.run(asyncio.wait_for(session(), 300))
