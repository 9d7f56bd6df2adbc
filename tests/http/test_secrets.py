"""Secrets: the admin token, client keys, provider and Qdrant API keys
never show up where they should not.

The main test runs ``memoryd serve`` as a real process with JSON logs at debug level
in front of a fake upstream, drives every kind of request at it (good and bad
credentials, errors, the gateway, MCP, the dashboard), and then checks every response
body and header, ``/metrics``, the export, every settings/status GET, everything the
upstream received, and the whole captured log. The keys table and the database file
are checked for hashes only, the token file for mode 0600.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import apsw
import httpx
import pytest

from memoryd.core.masking import mask_secret
from memoryd.testing import FakeUpstream, serve_asgi
from tests.serve_support import MEMORYD, start_serve

TOKEN_LINE = re.compile(r"admin token \(saved to (\S+)\): (\S+)\n")

# Chosen so that no redaction pattern (mk_…, sk-…, Bearer …) would hide them by shape:
# if they are absent from the log, it is because nothing logged them.
UPSTREAM_ENV_KEY = "upstreamEnvKey0123456789QWERTY"
PROVIDER_KEY = "providerKey9876543210ZYXWV"
QDRANT_KEY = "qdrantKeyAbCdEfGh123456789"

pytestmark = pytest.mark.skipif(not MEMORYD.exists(), reason="console script not installed")


class Recorder:
    """Every response the test received, to search for secrets afterwards."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=20)
        self.responses: list[httpx.Response] = []

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def __call__(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.http.request(method, path, **kwargs)
        self.responses.append(response)
        return response

    def texts(self) -> Iterator[tuple[str, str]]:
        for r in self.responses:
            headers = "\n".join(f"{k}: {v}" for k, v in r.headers.multi_items())
            yield (
                f"{r.request.method} {r.request.url.path} -> {r.status_code}",
                (headers + "\n" + r.text),
            )


def assert_absent(secrets: dict[str, str], where: str, text: str) -> None:
    for name, secret in secrets.items():
        assert secret not in text, f"{name} leaked in {where}"


@pytest.fixture
def upstream() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream()
    with serve_asgi(fake.app) as url:
        yield fake, url


def start_server(
    data: Path, log: Path, sink: IO[bytes], upstream_url: str
) -> tuple[subprocess.Popen[bytes], str]:
    env = {
        "MEMORYD_LOG_FORMAT": "json",
        "MEMORYD_UPSTREAM_BASE_URL": f"{upstream_url}/v1",
        "MEMORYD_UPSTREAM_API_KEY": UPSTREAM_ENV_KEY,
        "MEMORYD_MAX_BODY_BYTES": "65536",
        "MEMORYD_AUTH_FAILURES_PER_MIN": "1000",  # it tries every wrong credential
    }
    return start_serve(data, log, sink, env, "--log-level", "debug", ready_s=30)


def exercise(rec: Recorder, admin: str) -> dict[str, str]:
    """Drive every kind of request; return the secrets that must never show up again."""
    auth = {"Authorization": f"Bearer {admin}"}
    created = rec("POST", "/api/keys", headers=auth, json={"name": "alice"})
    assert created.status_code == 201
    key, key_id = created.json()["key"], created.json()["id"]
    rec.responses.remove(created)  # the one answer that carries the secret, by design
    doomed = rec.http.post("/api/keys", headers=auth, json={"name": "doomed"}).json()
    assert rec("DELETE", f"/api/keys/{doomed['id']}", headers=auth).status_code == 200

    wrong_admin = admin[:-3] + ("xyz" if not admin.endswith("xyz") else "abc")
    wrong_key = key[:-4] + "ZZZZ"
    client = {"Authorization": f"Bearer {key}"}
    chat = {"model": "m", "messages": [{"role": "user", "content": "I prefer green tea."}]}

    # -- configuration with secrets in it
    providers = [{"name": "prov", "baseUrl": "http://127.0.0.1:9/v1", "apiKey": PROVIDER_KEY}]
    assert rec("PUT", "/api/settings/providers", headers=auth, json=providers).status_code == 200
    qdrant = {"host": "127.0.0.1", "port": 9, "apiKey": QDRANT_KEY}
    assert rec("PUT", "/api/settings/qdrant", headers=auth, json=qdrant).status_code == 200
    bad_qdrant = {"host": "127.0.0.1", "port": 70000, "apiKey": QDRANT_KEY}
    assert rec("PUT", "/api/settings/qdrant", headers=auth, json=bad_qdrant).status_code == 400
    bad_provider = [{"name": "p", "baseUrl": "x", "apiKey": PROVIDER_KEY, "systemRole": "?"}]
    assert rec("PUT", "/api/settings/providers", headers=auth, json=bad_provider).status_code == 400

    # -- wrong credentials everywhere
    for bad in (wrong_admin, key, doomed["key"], "Bearer"):
        headers = {"Authorization": f"Bearer {bad}"}
        assert rec("GET", "/api/memory/engine-status", headers=headers).status_code == 401
        assert rec("POST", "/api/memory", headers=headers, json={}).status_code == 401
    for bad in (wrong_key, doomed["key"], admin, wrong_admin):
        headers = {"Authorization": f"Bearer {bad}"}
        assert rec("POST", "/v1/chat/completions", headers=headers, json=chat).status_code == 401
        assert rec("GET", "/v1/models", headers=headers).status_code == 401
        if bad != admin:  # the admin token is a valid MCP credential
            assert rec("POST", "/mcp", headers=headers, json={}).status_code == 401
    assert rec("GET", f"/api/memory?token={wrong_admin}", headers={"x-api-key": key}).status_code
    assert rec("GET", "/api/keys", headers={"Authorization": f"Basic {admin}"}).status_code == 401
    login_page = rec("GET", "/dashboard/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', login_page.text)
    assert csrf is not None
    bad_login = rec(
        "POST",
        "/dashboard/login",
        data={"token": wrong_admin, "csrf": csrf[1], "tab": "memories"},
    )  # the client kept the login form's cookie
    assert bad_login.status_code == 401

    # -- good requests, and failing ones with good credentials
    assert rec("POST", "/v1/chat/completions", headers=client, json=chat).status_code == 200
    streamed = rec("POST", "/v1/chat/completions", headers=client, json={**chat, "stream": True})
    assert streamed.status_code == 200
    prov = {**chat, "model": "prov/m"}  # a provider that is down: 502
    assert rec("POST", "/v1/chat/completions", headers=client, json=prov).status_code == 502
    assert rec("POST", "/v1/chat/completions", headers=client, content=b"{").status_code == 400
    huge = {**chat, "pad": "x" * 70_000}
    assert rec("POST", "/v1/chat/completions", headers=client, json=huge).status_code == 413
    assert rec("GET", "/v1/models", headers=client).status_code == 200
    memory = {"apiKeyId": key_id, "key": "k", "content": "likes tea"}
    assert rec("POST", "/api/memory", headers=auth, json=memory).status_code == 201
    assert rec("GET", "/api/memory/nope", headers=auth).status_code == 404
    assert rec("POST", "/api/memory", headers=auth, json={"apiKeyId": ""}).status_code == 400
    assert rec("POST", "/api/memory/health", headers=auth).status_code == 405
    for path in (
        "/api/settings/providers",
        "/api/settings/qdrant",
        "/api/settings/memory",
        "/api/settings/qdrant/health",
        "/api/settings/qdrant/embedding-models",
        "/api/memory/engine-status",
        "/api/memory/embedding-providers",
        "/api/memory/health",
        "/api/keys",
        f"/api/memory?apiKeyId={key_id}",
        f"/api/memory/export?apiKeyId={key_id}",
        "/openapi.json",
        "/healthz",
        "/metrics",
    ):
        assert rec("GET", path, headers=auth).status_code == 200, path
    listed = rec.http.get("/api/settings/providers", headers=auth).json()
    shown = {p["name"]: p for p in listed}
    assert shown["prov"]["hasKey"] is True
    assert shown["prov"]["apiKey"] == mask_secret(PROVIDER_KEY)
    assert shown["default"]["apiKey"] == mask_secret(UPSTREAM_ENV_KEY)
    qshown = rec.http.get("/api/settings/qdrant", headers=auth).json()
    assert qshown["hasApiKey"] is True
    assert "apiKey" not in qshown
    return {
        "admin token": admin,
        "client key": key,
        "revoked client key": doomed["key"],
        "mistyped admin token": wrong_admin,
        "mistyped client key": wrong_key,
        "provider key": PROVIDER_KEY,
        "qdrant key": QDRANT_KEY,
        "upstream key": UPSTREAM_ENV_KEY,
        "client key hash": hashlib.sha256(key.encode()).hexdigest(),
    }


def test_no_secret_in_logs_answers_metrics_exports_or_settings(
    tmp_path: Path, upstream: tuple[FakeUpstream, str]
) -> None:
    fake, upstream_url = upstream
    data, log = tmp_path / "data", tmp_path / "server.log"
    with log.open("wb") as sink:
        proc, url = start_server(data, log, sink, upstream_url)
        try:
            token_file = data / "admin_token"
            admin = token_file.read_text().strip()
            with Recorder(url) as rec:
                secrets = exercise(rec, admin)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
    assert proc.returncode == 0

    # answers: bodies and headers, including /metrics, the export and every settings GET
    for where, text in rec.texts():
        assert_absent(secrets, where, text)

    # the upstream got its own key, never memoryd's credentials
    assert fake.requests
    for request in fake.requests:
        assert request["headers"].get("authorization") == f"Bearer {UPSTREAM_ENV_KEY}"
        dump = json.dumps(request)
        assert_absent({k: v for k, v in secrets.items() if v != UPSTREAM_ENV_KEY}, "upstream", dump)

    # the log: JSON lines at debug level; the token only on its one first-start print
    text = log.read_text(encoding="utf-8")
    printed = TOKEN_LINE.findall(text)
    assert printed == [(str(token_file), admin)]
    text = TOKEN_LINE.sub("", text)
    lines = [line for line in text.splitlines() if line.startswith("{")]
    assert len(lines) > 40  # an access line per request, at least
    assert any(json.loads(line).get("status") == 401 for line in lines)
    assert_absent(secrets, "the server log", text)

    # the token file is private; the key table holds hashes only
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    conn = apsw.Connection(str(data / "memoryd.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = list(conn.execute("SELECT id, name, key_hash, prefix FROM api_keys"))
        columns = [c[1] for c in conn.execute("PRAGMA table_info(api_keys)")]
    finally:
        conn.close()
    client_secrets = [secrets["client key"], secrets["revoked client key"]]
    assert sorted(r[2] for r in rows) == sorted(
        hashlib.sha256(s.encode()).hexdigest() for s in client_secrets
    )
    for _, _, key_hash, prefix in rows:
        assert re.fullmatch(r"[0-9a-f]{64}", key_hash)
        assert len(prefix) <= 8
    assert set(columns) == {
        "id", "name", "key_hash", "prefix", "created_at", "revoked_at", "memory_enabled",
    }  # fmt: skip
    for path in data.glob("memoryd.db*"):
        raw = path.read_bytes()
        for secret in [*client_secrets, admin]:
            assert secret.encode() not in raw, f"a secret is stored in {path.name}"


def test_masking_never_shows_most_of_a_short_key() -> None:
    """Regression: ``abcdefghi`` used to be shown as ``abcd…fghi``, 8 of its 9 characters."""
    assert mask_secret(None) is None
    assert mask_secret("") is None
    for length in range(1, 64):
        secret = "".join(chr(ord("a") + i % 26) for i in range(length))
        shown = mask_secret(secret)
        assert shown is not None
        visible = len(shown.replace("…", ""))
        assert visible * 2 <= length or visible == 0, (secret, shown)
        assert length - visible >= min(length, 12), (secret, shown)
        assert secret not in shown
    assert mask_secret("sk-verysecretvalue1234") == "sk-v…1234"  # long keys stay recognisable


def test_masked_paths_are_remembered_and_forgotten_when_a_secret_arrives() -> None:
    """The access line masks each path once; a secret registered later is masked in a
    path already seen, and a flood of unique paths is masked but not remembered."""
    from memoryd.http import observability as obs

    secret = "late-registered-secret-1234"
    path = f"/api/things/{secret}"
    assert obs._masked_path(path) == path  # not a secret yet
    assert obs._masked_path("/v1/x/sk-abcdefghijkl") == "/v1/x/***"  # the patterns apply
    obs.register_secret(secret)
    assert secret not in obs._masked_path(path)
    for i in range(obs.MAX_MASKED_PATHS + 10):
        assert obs._masked_path(f"/flood/{i}/sk-abcdef{i:06d}") == f"/flood/{i}/***"
    assert len(obs._masked_paths) <= obs.MAX_MASKED_PATHS
