"""The first hour: what a new user meets when starting memoryd, each fixed
thing tested the way the user meets it: ``memoryd serve`` as a process (the banner,
``--demo``, a misspelt variable, an unwritable data dir), ``memoryd status`` beside a
running server, and the errors the official ``openai`` client and a plain REST call
get for the usual mistakes (the admin token or a provider's key sent to ``/v1``, a
dead upstream, a JSON body without its content type)."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from memoryd.config.upstreams import Provider, save_providers
from memoryd.core.masking import redacted_url
from tests.conftest import ADMIN
from tests.embedders import no_source
from tests.gateway_support import Gateway, gateway_on
from tests.server.test_server import MEMORYD, _clean_env, spawn
from tests.vectors.test_qdrant_tier import closed_port

__all__ = ["spawn"]  # the fixture, shared with tests/server/test_server.py

pytestmark = pytest.mark.skipif(not MEMORYD.exists(), reason="console script not installed")


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_clean_env(),
    )


def test_the_demo_the_banner_a_misspelt_variable_and_status(spawn: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = spawn("--demo", MEMORYD_UPSTREAM_BASEURL="https://api.example/v1")
    url = server.wait_ready()
    said = server.stderr
    assert f"  dashboard  {url}/dashboard" in said
    assert "  upstream   the demo provider" in said
    assert f"  next       memoryd keys create my-app, then point an OpenAI client at {url}/v1" in (
        said
    )
    assert "MEMORYD_UPSTREAM_BASEURL (did you mean MEMORYD_UPSTREAM_BASE_URL?)" in said

    created = cli(data, "keys", "create", "my-app")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.splitlines()[1]
    with openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0) as client:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "My dog is called Rex."}]
        )
        # extraction runs in the background: on a busy machine it may finish after the
        # first listing, so list until it shows (a few seconds at most when quiet)
        deadline = time.monotonic() + 90
        while True:
            asked = cli(data, "memory", "list", "-k", "my-app")
            if "User's dog is called Rex" in asked.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert "User's dog is called Rex" in asked.stdout, asked.stdout + asked.stderr
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "What is my dog called?"}]
        )
    answer = reply.choices[0].message.content or ""
    assert "memoryd demo provider" in answer
    assert "- User's dog is called Rex" in answer

    status = cli(data, "status")  # finds the server through its pid file's lock
    assert status.returncode == 0, status.stderr
    line = next(x for x in status.stdout.splitlines() if x.startswith("extraction"))
    assert line.split()[1:3] == ["1", "stored,"], line  # the server's count, not this CLI's
    assert f"the server at {url}" in line


def test_the_banner_says_when_no_upstream_is_set(spawn: Any) -> None:
    server = spawn()
    server.wait_ready()
    assert "  upstream   none: set MEMORYD_UPSTREAM_BASE_URL" in server.stderr
    assert "or try memoryd serve --demo" in server.stderr


def test_an_unwritable_data_dir_is_one_line_with_the_fix(tmp_path: Path) -> None:
    """``/proc`` exists and takes no new file, even for root (CI runs as root, for whom
    a chmod-ed directory is still writable)."""
    if not Path("/proc").is_dir():
        pytest.skip("needs Linux's /proc")
    done = subprocess.run(
        [str(MEMORYD), "serve", "--data-dir", "/proc", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_clean_env(),
    )
    assert done.returncode == 1
    errors = [x for x in done.stderr.splitlines() if not x.startswith("{")]  # JSON logs
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("error: the data dir /proc is not writable")
    assert "--data-dir or MEMORYD_DATA_DIR" in errors[0]
    assert "Traceback" not in done.stderr


def test_status_without_a_server_says_so_instead_of_zero(tmp_path: Path) -> None:
    data = tmp_path / "quiet"
    assert cli(data, "keys", "create", "my-app").returncode == 0
    nobody = f"http://127.0.0.1:{closed_port()}"
    status = cli(data, "status", "--server", nobody)
    assert status.returncode == 0, status.stderr
    line = next(x for x in status.stdout.splitlines() if x.startswith("extraction"))
    assert f"no server answering at {nobody}" in line
    assert "0 stored" not in line
    alone = cli(data, "status")  # no server holds the data dir: nothing is asked
    line = next(x for x in alone.stdout.splitlines() if x.startswith("extraction"))
    assert "no server running on this data dir" in line


def test_the_banner_names_a_saved_provider_that_overrides_the_demo() -> None:
    from memoryd.welcome import banner

    demo = "http://127.0.0.1:5/v1"
    shown = banner("http://h:1", demo, keys=0, demo=demo, data="/d")
    assert "the demo provider" in shown[2]
    saved = banner("http://h:1", "https://u:pw@api.example/v1", keys=1, demo=demo, data="/d")
    assert "https://api.example/v1: a saved provider named default" in saved[2]
    assert "pw" not in saved[2]
    assert "memoryd keys list" in saved[-1]


def test_print_config_leaves_the_database_password_out() -> None:
    from memoryd.cli.mcp import without_password

    url = "postgresql://memoryd:s3cret@db.internal:5432/memoryd?sslmode=require"
    assert without_password(url) == (
        "postgresql://memoryd:PASSWORD@db.internal:5432/memoryd?sslmode=require"
    )
    assert without_password("postgresql://db/memoryd") == "postgresql://db/memoryd"


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with gateway_on(tmp_path / "data", "first", no_source) as base:
        yield base


def _refusal(gateway: Gateway, credential: str) -> str:
    with (
        openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=credential, max_retries=0) as c,
        pytest.raises(openai.AuthenticationError) as caught,
    ):
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    return str(caught.value.message)


def test_a_wrong_credential_at_v1_says_which_one_it_takes(gateway: Gateway) -> None:
    admin = _refusal(gateway, ADMIN)
    assert "admin token" in admin
    assert "memoryd keys create" in admin
    provider = _refusal(gateway, "sk-proj-" + "x" * 40)
    assert "provider's key" in provider
    assert "MEMORYD_UPSTREAM_API_KEY" in provider
    gone = _refusal(gateway, "mk_" + "y" * 40)
    assert "revoked" in gone
    assert "sk-proj" not in provider  # the key is never echoed back


def test_a_dead_upstream_is_named_in_the_log_at_warning(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    save_providers(gateway.engine.store, [Provider("default", dead, "secret")])
    caplog.set_level(logging.INFO, logger="memoryd")
    with (
        openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.key, max_retries=0) as c,
        pytest.raises(openai.APIStatusError) as caught,
    ):
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 502
    assert "server's log names its URL" in caught.value.message
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"upstream default at {dead} is unreachable" in m for m in warned), warned
    # a URL in a log line never carries its credentials or query
    assert redacted_url("https://u:pw@api.example:8443/v1?key=pw") == "https://api.example:8443/v1"


def test_a_json_body_without_its_content_type_says_so(gateway: Gateway) -> None:
    response = httpx.post(
        f"{gateway.url}/api/memory",
        content=b'{"apiKeyId": "k", "content": "hi"}',
        headers={"authorization": f"Bearer {ADMIN}"},
        timeout=30,
    )
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "Content-Type: application/json" in message
    assert "valid dictionary" not in message
