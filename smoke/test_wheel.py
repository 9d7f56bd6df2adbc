"""The installed wheel does what the README promises, on both primary stores."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import re
import sys
import sysconfig
from pathlib import Path
from typing import Any

import httpx
from conftest import ADMIN, MEMORYD, Server, clean_env, locomo_dir, run, wait_for
from openai import OpenAI

import memoryd


def test_memoryd_comes_from_the_installed_wheel() -> None:
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    assert Path(memoryd.__file__).resolve().is_relative_to(site), memoryd.__file__
    dist = importlib.metadata.distribution("memoryd")
    direct = dist.read_text("direct_url.json")
    assert direct is None or '"editable": true' not in direct, "an editable install"
    assert not (Path(memoryd.__file__).parent.parent / "pyproject.toml").exists()
    assert sys.prefix != sys.base_prefix  # a virtualenv of its own


def test_version_is_the_wheels() -> None:
    out = run("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"memoryd, version {importlib.metadata.version('memoryd')}"
    assert memoryd.__version__ == importlib.metadata.version("memoryd")


def test_doctor_passes_on_a_fresh_install(tmp_path: Path, upstream: Any) -> None:
    _, base = upstream
    env = clean_env(
        MEMORYD_UPSTREAM_BASE_URL=base, MEMORYD_UPSTREAM_API_KEY="sk-fake", MEMORYD_PORT="0"
    )
    out = run("--data-dir", str(tmp_path / "data"), "doctor", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(
        run("--data-dir", str(tmp_path / "data"), "doctor", "--json", env=env).stdout
    )
    assert report["ok"] is True
    # The whole product installed: not one warning (no sqlite-vec, no MiniLM, a missing
    # store's migrations would each be one).
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert set(statuses.values()) == {"ok"}, report["checks"]
    for name in ("sqlite-vec", "package", "embedder", "local-model", "upstream:default"):
        assert name in statuses, name
    assert not (tmp_path / "data").exists(), "doctor only looks"


def _chat_and_recall(server: Server, upstream: Any) -> None:
    """A client key, a chat with the official client, the fact extracted in the
    background, and the next request carrying it to the provider."""
    fake, _ = upstream
    with server.admin() as admin:
        created = admin.post("/api/keys", json={"name": "smoke"})
        assert created.status_code == 201, created.text
        key_id, secret = created.json()["id"], created.json()["key"]
        client = OpenAI(base_url=f"{server.url}/v1", api_key=secret, max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "My dog is called Rex. I prefer TypeScript."}],
        )
        assert reply.choices[0].message.content

        def stored() -> list[str]:
            listed = admin.get("/api/memory", params={"apiKeyId": key_id}).json()["data"]
            return [m["content"] for m in listed if "Rex" in m["content"]]

        assert wait_for("the extracted memory", stored)
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "What is my dog called?"}],
        )
        sent = fake.last["messages"]
        system = " ".join(m["content"] for m in sent if m["role"] == "system")
        assert "Rex" in system, sent
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Tell me about Rex."}],
            stream=True,
        )
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def _dashboard(server: Server) -> None:
    """The login page, a session with the admin token, the first page and every asset
    the pages name."""
    with httpx.Client(base_url=server.url, timeout=30, follow_redirects=True) as browser:
        login = browser.get("/dashboard/login")
        assert login.status_code == 200
        csrf = re.search(r'name="csrf" value="([^"]+)"', login.text)
        assert csrf, login.text
        page = browser.post("/dashboard/login", data={"csrf": csrf[1], "token": ADMIN})
        assert page.status_code == 200, page.text
        assert "Memory Studio" in page.text
        pages = [login.text, page.text]
        for tab in ("memories", "playground", "engine", "keys", "settings"):
            got = browser.get("/dashboard", params={"tab": tab})
            assert got.status_code == 200, tab
            pages.append(got.text)
        assets = set(re.findall(r'(?:src|href)="(/dashboard/static/[^"]+)"', "".join(pages)))
        assert len([a for a in assets if ".js" in a]) >= 6, assets
        assert any(".css" in a for a in assets)
        for asset in sorted(assets):
            got = browser.get(asset)
            assert got.status_code == 200, asset
            assert got.content, asset


def test_serves_on_sqlite(serve: Any, upstream: Any, tmp_path: Path) -> None:
    _, base = upstream
    server = serve(
        "--data-dir",
        str(tmp_path / "data"),
        MEMORYD_UPSTREAM_BASE_URL=base,
        MEMORYD_UPSTREAM_API_KEY="sk-fake",
    )
    _chat_and_recall(server, upstream)
    _dashboard(server)
    with server.admin() as admin:
        status = admin.get("/api/memory/engine-status").json()
    assert json.dumps(status).count("sqlite") >= 1
    assert server.stop() == 0
    assert (tmp_path / "data" / "memoryd.db").is_file()


def test_serves_on_postgresql(serve: Any, upstream: Any, tmp_path: Path, pg_url: str) -> None:
    """The path the broken wheel failed: its migrations ship and apply."""
    _, base = upstream
    env = clean_env(MEMORYD_DATABASE_URL=pg_url, MEMORYD_UPSTREAM_BASE_URL=base, MEMORYD_PORT="0")
    doctor = run("--data-dir", str(tmp_path / "data"), "doctor", "--json", env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    statuses = {c["name"]: c["status"] for c in json.loads(doctor.stdout)["checks"]}
    assert set(statuses.values()) == {"ok"}, doctor.stdout
    assert {"pgvector", "migrations"} <= set(statuses)
    server = serve(
        "--data-dir",
        str(tmp_path / "data"),
        "--database-url",
        pg_url,
        MEMORYD_UPSTREAM_BASE_URL=base,
        MEMORYD_UPSTREAM_API_KEY="sk-fake",
    )
    _chat_and_recall(server, upstream)
    _dashboard(server)
    with server.admin() as admin:
        storage = admin.get("/api/memory/engine-status").json()["storage"]
    assert "postgres" in json.dumps(storage).lower(), storage
    assert server.stop() == 0
    assert not (tmp_path / "data" / "memoryd.db").exists()


def test_mcp_over_stdio_with_the_official_client(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    data = str(tmp_path / "data")
    created = run("--data-dir", data, "--json", "keys", "create", "mcp-smoke")
    assert created.returncode == 0, created.stderr
    secret = json.loads(created.stdout)["key"]
    params = StdioServerParameters(
        command=MEMORYD, args=["--data-dir", data, "mcp", "--api-key", secret], env=clean_env()
    )

    async def session() -> tuple[set[str], str, str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = {t.name for t in (await s.list_tools()).tools}
            added = await s.call_tool(
                "memory_add", {"content": "User deploys with Kubernetes", "key": "tool:deploy"}
            )
            found = await s.call_tool("memory_search", {"query": "Kubernetes"})
            return tools, json.dumps(added.structured_content), json.dumps(found.structured_content)

    tools, added, found = asyncio.run(asyncio.wait_for(session(), 300))
    assert {"memory_add", "memory_search", "memory_clear"} <= tools
    assert "Kubernetes" in added
    assert "Kubernetes" in found


def test_eval_locomo_on_one_conversation(tmp_path: Path) -> None:
    """The evaluation harness runs from the wheel, with the MiniLM model the [all] extra
    installs (no hub), and finds most of the evidence (.83 R@10 at the time of writing)."""
    out = run(
        "eval",
        "locomo",
        "--data",
        str(locomo_dir()),
        "--limit-conversations",
        "1",
        "--strategy",
        "hybrid",
        "--json",
        cwd=tmp_path,
        timeout=1800,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["embedder"] == "transformers", result["embedder"]
    assert result["pending_vectors"] == 0
    assert result["questions"]["evaluated"] > 100
    assert result["strategies"]["hybrid"]["recall"]["10"] > 0.6, result["strategies"]
