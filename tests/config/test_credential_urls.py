"""A provider base URL with ``user:password@``: REST and the CLI refuse it
with a message that says why, and one that reaches the gateway anyway (the environment,
or a row an older version stored) is a 502 that names the problem, never a 500.
Real HTTP over loopback, the official ``openai`` client, a fake provider on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner

from memoryd.cli import main
from memoryd.config.upstreams import Provider, save_providers
from memoryd.engine import MemoryEngine
from tests.gateway_support import running_gateway

CREDENTIALED = "http://alice:s3cret-word@127.0.0.1:8000/v1"


def test_rest_refuses_a_url_with_credentials(client: Any) -> None:
    answer = client.put(
        "/api/settings/providers", json=[{"name": "p", "baseUrl": CREDENTIALED, "apiKey": "k"}]
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert "credentials" in error["message"]
    assert "apiKey" in error["message"]
    assert "s3cret" not in answer.text  # the password is not echoed back
    listed = client.get("/api/settings/providers").json()
    assert all("alice" not in p["baseUrl"] for p in listed)  # nothing was saved


def test_the_cli_refuses_it(tmp_path: Path) -> None:
    refused = CliRunner().invoke(
        main, ["--data-dir", str(tmp_path / "d"), "providers", "add", "p", CREDENTIALED]
    )
    assert refused.exit_code == 1
    assert "credentials" in refused.output


def test_one_that_reaches_the_gateway_is_a_clear_502(
    engine: MemoryEngine, caplog: pytest.LogCaptureFixture
) -> None:
    with running_gateway(engine, "creds") as gateway:
        # as an older version stored it (the API refuses it now)
        save_providers(engine.store, [Provider("default", CREDENTIALED, "secret")])
        with (
            openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.key, max_retries=0) as c,
            pytest.raises(openai.APIStatusError) as caught,
        ):
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 502
    assert "credentials in its base URL" in caught.value.message
    assert "s3cret" not in caught.value.message  # nor the log line (it names the host)
    assert "s3cret" not in caplog.text
