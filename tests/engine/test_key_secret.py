"""A client's existing secret: a team moving from OmniRoute keeps the keys its
clients hold. ``POST /api/keys {"secret"}`` and ``memoryd keys create --secret``: stored
hashed, checked (length, characters, not the admin token, not another key's), never
logged, and the secret then authenticates at ``/v1`` for the official ``openai`` client.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from memoryd.engine import MemoryEngine
from tests.cli.test_cli_keys_by_name import memoryd, ok, refused
from tests.conftest import ADMIN, make_engine
from tests.embedders import no_source
from tests.gateway_support import running_gateway

#: What an OmniRoute client already has in its config.
OLD = "sk-omniroute-3f9a1c77e2b84d0a9c61"


def create(client: Any, **body: Any) -> Any:
    return client.post("/api/keys", json={"name": "moved", **body})


def test_a_given_secret_is_stored_hashed_and_authenticates(
    client: Any, engine: MemoryEngine
) -> None:
    response = create(client, secret=OLD)
    assert response.status_code == 201, response.text
    made = response.json()
    assert made["key"] == OLD
    assert made["prefix"] == OLD[:8]
    key = engine.keys.authenticate(OLD)
    assert key is not None
    assert key.id == made["id"]
    row = engine.store.read().key_by_hash(hashlib.sha256(OLD.encode()).hexdigest())
    assert row is not None
    assert row.id == made["id"]
    listed = client.get("/api/keys").text
    assert OLD not in listed


def test_a_short_chosen_secret_shows_at_most_a_quarter_of_itself(client: Any) -> None:
    secret = "Zq7!pW2#mK9$vR4&"  # 16 chars: the shortest accepted
    made = create(client, secret=secret).json()
    assert made["prefix"] == secret[:4]
    assert client.get(f"/api/keys/{made['id']}").json()["key"]["prefix"] == secret[:4]


@pytest.mark.parametrize(
    ("secret", "says"),
    [
        ("short-secret-15", "too short to be safe: at least 16 characters"),
        ("has a space in it, sadly", "printable ASCII without spaces"),
        ("tab\tinside-the-secret-value", "printable ASCII without spaces"),
        ("newline-in-the\nsecret-value", "printable ASCII without spaces"),
        ("nön-ascii-secret-value-1234", "printable ASCII without spaces"),
        ("x" * 257, "at most 256 characters"),
    ],
)
def test_an_unsafe_secret_is_a_clear_400_that_does_not_repeat_it(
    client: Any, engine: MemoryEngine, secret: str, says: str
) -> None:
    response = create(client, secret=secret)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert says in error["message"]
    assert error["details"][0]["field"] == "secret"
    assert secret not in response.text
    assert engine.keys.list() == []


def test_a_secret_that_is_not_a_string_is_a_400(client: Any) -> None:
    response = create(client, secret=1234567890123456789)
    assert response.status_code == 400
    assert response.json()["error"]["details"] == [
        {"field": "secret", "message": "Input should be a valid string"}
    ]


def test_a_secret_in_use_is_a_409_that_names_no_key(client: Any, engine: MemoryEngine) -> None:
    first = create(client, name="the-first-one", id="first-key", secret=OLD).json()
    again = create(client, name="second", secret=OLD)
    assert again.status_code == 409, again.text
    error = again.json()["error"]
    assert error["details"] == [{"field": "secret", "message": "already in use"}]
    for hint in ("first-key", "the-first-one", first["prefix"], OLD):
        assert hint not in again.text
    assert [k.id for k in engine.keys.list()] == ["first-key"]
    # A revoked key keeps its secret: it cannot be handed to another key either.
    assert client.delete("/api/keys/first-key").status_code == 200
    assert create(client, name="third", secret=OLD).status_code == 409


def test_the_admin_token_is_not_a_client_secret(client: Any, engine: MemoryEngine) -> None:
    """``/mcp`` takes the admin token before client keys: such a key would be the admin."""
    response = create(client, secret=ADMIN)
    assert response.status_code == 400
    assert response.json()["error"]["details"] == [
        {"field": "secret", "message": "must not be the admin token"}
    ]
    assert engine.keys.list() == []


def test_the_secret_works_at_v1_and_is_never_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = make_engine(tmp_path / "data", resolver=no_source)
    caplog.set_level(logging.DEBUG)
    try:
        with running_gateway(engine) as gw:
            made = gw.api("POST", "/api/keys", json={"name": "moved", "secret": OLD})
            assert made.status_code == 201, made.text
            taken = gw.api("POST", "/api/keys", json={"name": "again", "secret": OLD})
            assert taken.status_code == 409
            with openai.OpenAI(base_url=f"{gw.url}/v1", api_key=OLD, max_retries=0) as c:
                reply = c.chat.completions.create(
                    model="chat-model",
                    messages=[{"role": "user", "content": "I prefer green tea."}],
                )
            assert reply.choices[0].message.content
            assert engine.drain(timeout=30)
            stored = gw.api("GET", "/api/memory", params={"apiKeyId": made.json()["id"]})
            assert "green tea" in stored.text
            # the upstream gets the provider's key, never the client's secret
            assert all(OLD not in str(r["headers"]) for r in gw.upstream.requests)
            wrong = httpx.post(
                f"{gw.url}/v1/chat/completions",
                headers={"authorization": f"Bearer {OLD[:-1]}X"},
                json={"model": "chat-model", "messages": [{"role": "user", "content": "hi"}]},
            )
            assert wrong.status_code == 401
    finally:
        engine.close()
    assert caplog.records, "the server logged nothing: the check below would prove nothing"
    assert OLD not in caplog.text
    assert OLD not in "".join(str(r.__dict__) for r in caplog.records)


def test_the_cli_takes_a_secret_and_reads_it_from_stdin(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shown = memoryd(data, "keys", "create", "moved", "--secret", OLD)
    assert shown.returncode == 0, shown.stderr
    assert OLD not in shown.stdout  # the caller has it: not printed again
    assert OLD[:8] in shown.stdout
    piped = ok(data, "keys", "create", "piped", "--secret", "-", stdin=OLD.upper() + "\n")
    assert piped["key"] == OLD.upper()
    engine = make_engine(data, resolver=no_source)
    try:
        assert engine.keys.authenticate(OLD) is not None
        found = engine.keys.authenticate(OLD.upper())
        assert found is not None
        assert found.id == piped["id"]
    finally:
        engine.close()
    said = refused(data, "keys", "create", "weak", "--secret", "too-short")
    assert "secret: is too short to be safe" in said
    assert "too-short" not in said
    assert "already in use" in refused(data, "keys", "create", "dup", "--secret", OLD)
