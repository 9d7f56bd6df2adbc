"""``memoryd mcp --print-config``: a config an MCP client can start as it
is, with the minimal environment clients give a server (no virtualenv on PATH, no
``MEMORYD_DATA_DIR``), run here through the SDK's own stdio client; and the stdio
server refusing a data dir without a database instead of creating an empty one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from memoryd.cli import main
from memoryd.mcp import TOOL_NAMES
from tests.mcp_support import Session

FAKE_SECRET = "mk_" + "x" * 40


def memoryd(
    *args: str, data: Path | None, home: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m memoryd`` with no memoryd variables but ``MEMORYD_DATA_DIR`` (when
    ``data``), and ``home`` as HOME so a default ~/.memoryd would land there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "MEMORY_"))}
    env["HOME"] = str(home)
    if data is not None:
        env["MEMORYD_DATA_DIR"] = str(data)
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        env=env,
        cwd=cwd,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def keyed(tmp_path: Path, home: Path) -> tuple[Path, dict[str, Any]]:
    """A data dir with one key, ``my-app``, made by the CLI; and the key (with secret)."""
    data = tmp_path / "data"
    made = memoryd("--json", "keys", "create", "my-app", data=data, home=home)
    assert made.returncode == 0, made.stderr
    return data, json.loads(made.stdout)


def printed(client: str | None, *args: str, data: Path, home: Path) -> dict[str, Any]:
    flag = ["--print-config"] if client is None else ["--print-config", client]
    done = memoryd("mcp", *flag, *args, data=data, home=home)
    assert done.returncode == 0, done.stderr
    config: dict[str, Any] = json.loads(done.stdout)
    return config


def run_client(server: dict[str, Any], tmp_path: Path, body: Any) -> None:
    """Start ``server`` (a config's entry) as a client does: its command, args and env
    over the SDK's minimal default environment, from an unrelated working directory."""
    assert "MEMORYD_DATA_DIR" not in os.environ
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=server["env"], cwd=elsewhere
    )
    errlog = tmp_path / "server.log"

    async def go() -> None:
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                with anyio.fail_after(60):
                    await body(Session(client))

    try:
        anyio.run(go)
    except BaseException:
        print(errlog.read_text(), file=sys.stderr)
        raise


@pytest.fixture
def client_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """The parent a client is: no memoryd variables, and a HOME of its own."""
    for name in list(os.environ):
        if name.startswith(("MEMORYD_", "MEMORY_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))


def test_each_clients_format_with_absolute_paths(
    keyed: tuple[Path, dict[str, Any]], home: Path
) -> None:
    data, key = keyed
    claude = printed("claude", "--api-key", key["key"], data=data, home=home)
    cursor = printed("cursor", "--api-key", key["key"], data=data, home=home)
    vscode = printed("vscode", "--api-key", key["key"], data=data, home=home)
    assert printed(None, "--api-key", key["key"], data=data, home=home) == claude

    server = claude["mcpServers"]["memoryd"]
    assert list(claude) == ["mcpServers"]
    assert cursor == claude  # Cursor's .cursor/mcp.json has Claude Desktop's shape
    assert list(vscode) == ["servers"]
    assert vscode["servers"]["memoryd"] == {"type": "stdio", **server}

    command = Path(server["command"])
    assert command.is_absolute()
    assert command.is_file()
    assert os.access(command, os.X_OK)
    assert command in (Path(sys.executable).with_name("memoryd"), Path(sys.executable))
    data_dir = os.path.abspath(data)
    assert server["args"][-3:] == ["--data-dir", data_dir, "mcp"]
    assert server["env"] == {"MEMORYD_DATA_DIR": data_dir, "MEMORYD_API_KEY": key["key"]}


def test_the_printed_config_works_in_a_client_with_a_minimal_environment(
    keyed: tuple[Path, dict[str, Any]], home: Path, tmp_path: Path, client_env: None
) -> None:
    data, key = keyed
    server = printed("claude", "--api-key", key["key"], data=data, home=home)["mcpServers"]
    assert set(server) == {"memoryd"}

    async def body(s: Session) -> None:
        assert {t.name for t in (await s.client.list_tools()).tools} == set(TOOL_NAMES)
        new = {"content": "I deploy with Nomad", "key": "tool:deploy"}
        assert (await s.ok("memory_add", new))["memory"]["apiKeyId"] == key["id"]

    run_client(server["memoryd"], tmp_path, body)
    listed = memoryd("--json", "memory", "list", "-k", key["id"], data=data, home=home)
    assert [m["content"] for m in json.loads(listed.stdout)["data"]] == ["I deploy with Nomad"]
    assert not (home / ".memoryd").exists()


def test_without_a_console_script_the_config_runs_the_interpreter(
    keyed: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    client_env: None,
) -> None:
    data, key = keyed
    import sysconfig

    empty = tmp_path / "no-scripts"
    empty.mkdir()
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(empty))
    done = CliRunner().invoke(
        main, ["--data-dir", str(data), "mcp", "--print-config", "--api-key", key["key"]]
    )
    assert done.exit_code == 0, done.output
    server = json.loads(done.output)["mcpServers"]["memoryd"]
    assert server["command"] == os.path.abspath(sys.executable)
    assert server["args"][:2] == ["-m", "memoryd"]

    async def body(s: Session) -> None:
        assert {t.name for t in (await s.client.list_tools()).tools} == set(TOOL_NAMES)
        assert (await s.ok("memory_search", {"query": "anything"}))["count"] == 0

    run_client(server, tmp_path, body)


def test_without_a_key_a_placeholder_and_a_hint(tmp_path: Path, home: Path) -> None:
    data = tmp_path / "fresh"
    done = memoryd("mcp", "--print-config", "vscode", data=data, home=home)
    assert done.returncode == 0, done.stderr
    server = json.loads(done.stdout)["servers"]["memoryd"]
    assert server["env"]["MEMORYD_API_KEY"] == "mk_your_client_key"
    assert done.stderr.count("\n") == 1
    assert f"memoryd --data-dir {data} keys create NAME" in done.stderr
    assert ".vscode/mcp.json" in done.stderr
    assert not data.exists()  # printing a config creates nothing

    admin = memoryd("mcp", "--print-config", "--admin", data=data, home=home)
    assert admin.returncode == 1  # an admin config for a data dir that holds nothing
    assert "no memoryd database" in admin.stderr


def test_a_bad_key_prints_no_config(keyed: tuple[Path, dict[str, Any]], home: Path) -> None:
    data, key = keyed
    done = memoryd("mcp", "--print-config", "--api-key", FAKE_SECRET, data=data, home=home)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "invalid or revoked API key" in done.stderr
    assert memoryd("keys", "revoke", "my-app", data=data, home=home).returncode == 0
    revoked = memoryd("mcp", "--print-config", "--api-key", key["key"], data=data, home=home)
    assert revoked.returncode == 1
    assert "invalid or revoked API key" in revoked.stderr


def test_the_stdio_server_refuses_a_data_dir_without_a_database(tmp_path: Path, home: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = tmp_path / "missing"
    cases = [
        (missing, ["--api-key", FAKE_SECRET], missing),
        (empty, ["--api-key", FAKE_SECRET], empty),
        (empty, ["--admin"], empty),
        (None, ["--api-key", FAKE_SECRET], home / ".memoryd"),  # the default data dir
    ]
    for data, args, where in cases:
        done = memoryd("mcp", *args, data=data, home=home, cwd=tmp_path)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stdout == ""
        error = done.stderr
        assert error.startswith("error: no memoryd database at ")
        assert error.count("\n") == 1
        assert str(where / "memoryd.db") in error
        assert f"memoryd --data-dir {where} keys create NAME" in error
        assert "--data-dir" in error
        assert "MEMORYD_DATA_DIR" in error
    assert not missing.exists()
    assert list(empty.iterdir()) == []
    assert list(home.iterdir()) == []
    # the other commands still make the data dir they are pointed at
    made = memoryd("keys", "create", "my-app", data=missing, home=home)
    assert made.returncode == 0, made.stderr
    assert (missing / "memoryd.db").is_file()
