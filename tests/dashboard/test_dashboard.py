"""Memory Studio over HTTP: login, the session cookie, CSRF on writes, the tab pages.

The browser-level behaviour is in test_dashboard_browser.py; these tests pin the
security contract without a browser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memoryd.app import create_app
from memoryd.config.upstreams import Provider, save_providers
from memoryd.engine import MemoryEngine
from memoryd.http.session import SessionStore
from tests.conftest import ADMIN, add, make_engine
from tests.embedders import no_source

STATIC = Path(__file__).resolve().parents[2] / "memoryd" / "dashboard" / "static"
TAB_TESTIDS = {
    "memories": [
        "memories-table", "memory-search-input", "memory-type-filter", "memory-owner-filter",
        "add-memory-button", "memory-modal-owner", "memory-modal-type", "memory-modal-key",
        "memory-modal-content", "memory-modal-save", "confirm-delete",
    ],
    "playground": [
        "playground-query-input", "playground-strategy-select", "playground-budget-input",
        "playground-owner-select", "playground-submit",
    ],
    "engine": [
        "engine-status-panel", "reindex-now-button", "reindex-progress", "qdrant-enabled-switch",
        "qdrant-test-connection", "qdrant-search-test", "qdrant-cleanup",
    ],
    "keys": ["key-name-input", "create-key-button", "new-key-secret"],
    "settings": [
        "memory-cost-warning", "providers-table", "provider-name-input", "provider-kind-select",
        "provider-base-url-input", "provider-api-key-input", "provider-role-select",
        "provider-save",
    ],
}  # fmt: skip
UNSAFE_DOM = re.compile(r"\.(inner|outer)HTML\b|insertAdjacentHTML|document\.write|\beval\(")
HEADER_TESTIDS = [f"tab-{t}" for t in TAB_TESTIDS] + ["memory-enabled-toggle"]


@pytest.fixture
def web(engine: MemoryEngine) -> Iterator[TestClient]:
    """A client with no credentials: it holds whatever cookies the server sets."""
    with TestClient(create_app(engine, admin_token=ADMIN)) as http:
        yield http


def login_csrf(web: TestClient) -> str:
    page = web.get("/dashboard/login")
    assert page.status_code == 200
    match = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert match
    return match.group(1)


def log_in(web: TestClient, tab: str = "memories") -> str:
    """Log in through the form; returns the CSRF token the dashboard page carries."""
    csrf = login_csrf(web)
    r = web.post("/dashboard/login", data={"csrf": csrf, "token": ADMIN, "tab": tab})
    assert r.status_code == 200, r.text  # followed the 303 to the dashboard
    match = re.search(r'<meta name="csrf-token" content="([^"]+)">', r.text)
    assert match
    return match.group(1)


def set_cookies(response: Any) -> dict[str, str]:
    return {h.split("=", 1)[0]: h for h in response.headers.get_list("set-cookie")}


def test_pages_need_a_session(web: TestClient) -> None:
    r = web.get("/dashboard?tab=engine", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/dashboard/login?tab=engine"
    r = web.get("/dashboard?tab=<script>", follow_redirects=False)
    assert r.headers["location"] == "/dashboard/login?tab=memories"
    assert web.get("/dashboard/owners").status_code == 401
    assert web.get("/api/memory").status_code == 401


def test_login_form_and_security_headers(web: TestClient) -> None:
    r = web.get("/dashboard/login")
    assert 'data-testid="login-token-input"' in r.text
    assert 'data-testid="login-submit"' in r.text
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["cache-control"] == "no-store"
    cookie = set_cookies(r)["memoryd_login_csrf"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/dashboard" in cookie


def test_wrong_token_is_refused(web: TestClient) -> None:
    csrf = login_csrf(web)
    r = web.post("/dashboard/login", data={"csrf": csrf, "token": "nope"})
    assert r.status_code == 401
    assert "Invalid admin token." in r.text
    assert "memoryd_session" not in set_cookies(r)
    assert web.get("/api/memory").status_code == 401


@pytest.mark.parametrize("csrf", [None, "", "forged"])
def test_login_needs_the_form_token(web: TestClient, csrf: str | None) -> None:
    login_csrf(web)  # the cookie is set; the form field is missing or wrong
    data = {"token": ADMIN} | ({} if csrf is None else {"csrf": csrf})
    r = web.post("/dashboard/login", data=data, follow_redirects=False)
    assert r.status_code == 403
    assert "memoryd_session" not in set_cookies(r)


def test_login_sets_a_strict_http_only_session_cookie(web: TestClient) -> None:
    csrf = login_csrf(web)
    r = web.post(
        "/dashboard/login", data={"csrf": csrf, "token": ADMIN, "tab": "keys"},
        follow_redirects=False,
    )  # fmt: skip
    assert r.status_code == 303
    assert r.headers["location"] == "/dashboard?tab=keys"
    cookie = set_cookies(r)["memoryd_session"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    assert "Secure" not in cookie  # plain http: a Secure cookie would never come back
    assert ADMIN not in cookie
    page = web.get("/dashboard?tab=keys")
    assert page.status_code == 200
    assert ADMIN not in page.text
    assert "localStorage" not in "".join(p.read_text() for p in STATIC.glob("js/*.js"))


def test_https_cookies_are_secure(engine: MemoryEngine) -> None:
    app = create_app(engine, admin_token=ADMIN)
    with TestClient(app, base_url="https://studio.example") as web:
        csrf = login_csrf(web)
        r = web.post(
            "/dashboard/login", data={"csrf": csrf, "token": ADMIN}, follow_redirects=False
        )
        assert "Secure" in set_cookies(r)["memoryd_session"]


@pytest.mark.parametrize("tab", list(TAB_TESTIDS))
def test_every_tab_renders_its_controls(web: TestClient, tab: str) -> None:
    log_in(web)
    r = web.get(f"/dashboard?tab={tab}")
    assert r.status_code == 200
    assert f'data-testid="{tab}-tab-content"' in r.text
    for testid in TAB_TESTIDS[tab] + HEADER_TESTIDS:
        assert f'data-testid="{testid}"' in r.text, testid
    assert f"/dashboard/static/js/{tab}.js" in r.text
    assert 'aria-current="page"' in r.text
    assert web.get(f"/dashboard/static/js/{tab}.js").status_code == 200


def test_static_files_and_no_inner_html(web: TestClient) -> None:
    css = web.get("/dashboard/static/studio.css")
    assert css.status_code == 200
    assert "text/css" in css.headers["content-type"]
    assert web.get("/dashboard/static/js/common.js").status_code == 200
    for script in STATIC.glob("js/*.js"):  # data goes in with textContent only
        assert not UNSAFE_DOM.search(script.read_text()), script.name
        assert len(script.read_text().splitlines()) < 400, script.name


def test_server_rendered_state_is_escaped(web: TestClient, engine: MemoryEngine) -> None:
    add(engine, 'ev"il<b>', "content", key="k")
    engine.settings.update({"enabled": False})
    log_in(web)
    page = web.get("/dashboard?tab=memories").text
    assert 'ev"il<b>' not in page
    assert "ev&#34;il&lt;b&gt;" in page
    assert 'aria-checked="false"' in page
    settings = web.get("/dashboard?tab=settings").text
    assert re.search(r'data-testid="memory-cost-warning"[^>]*hidden', settings)


def initial_state(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="initial-state">(.*?)</script>', page)
    assert match
    state: dict[str, Any] = json.loads(match.group(1))
    return state


def test_settings_tab_lists_providers_with_their_kind(tmp_path: Path) -> None:
    env = {
        "MEMORYD_ANTHROPIC_BASE_URL": "https://api.anthropic.example/v1",
        "MEMORYD_ANTHROPIC_API_KEY": "sk-ant-env-123456789",
    }
    engine = make_engine(tmp_path / "data", env, resolver=no_source)
    claude = Provider("claude", "http://127.0.0.1:9/v1", "sk-stored-123456789", kind="anthropic")
    save_providers(engine.store, [claude, Provider("local", "http://127.0.0.1:8/v1")])
    try:
        with TestClient(create_app(engine, admin_token=ADMIN)) as web:
            log_in(web)
            page = web.get("/dashboard?tab=settings").text
            assert web.get("/dashboard/static/js/providers.js").status_code == 200
            assert "initial-state" in (memories := web.get("/dashboard?tab=memories").text)
    finally:
        engine.close()
    select = re.search(r'data-testid="provider-kind-select"[^>]*>(.*?)</select>', page, re.S)
    assert select
    assert re.findall(r'<option value="([^"]+)"', select.group(1)) == ["openai", "anthropic"]
    assert "/dashboard/static/js/providers.js" in page
    state = initial_state(page)
    kinds = {p["name"]: p["kind"] for p in state["providers"]}
    assert kinds == {"anthropic": "anthropic", "claude": "anthropic", "local": "openai"}
    assert state["storedProviders"] == ["claude", "local"]  # the env one is not written back
    assert "sk-stored-123456789" not in page
    assert "sk-ant-env-123456789" not in page
    assert "providers" not in initial_state(memories)
    assert "providers.js" not in memories


def test_owners_lists_memory_owners_and_live_keys(web: TestClient, engine: MemoryEngine) -> None:
    add(engine, "alice", "hello", key="k")
    _record, _ = engine.keys.create("laptop", key_id="bob")
    gone, _ = engine.keys.create("old", key_id="carol")
    engine.keys.revoke(gone.id)
    log_in(web)
    # revoked keys are no owner to pick, but their memories still show their name
    assert web.get("/dashboard/owners").json() == {
        "owners": ["alice", "bob"],
        "ownerNames": {"bob": "laptop", "carol": "old"},
    }


def test_api_accepts_the_session_with_csrf_on_writes(web: TestClient) -> None:
    csrf = log_in(web)
    assert web.get("/api/memory").status_code == 200
    body = {"apiKeyId": "alice", "key": "k", "content": "hello"}
    for headers in ({}, {"x-csrf-token": "forged"}, {"x-csrf-token": ""}):
        r = web.post("/api/memory", json=body, headers=headers)
        assert r.status_code == 403
        assert r.json()["error"]["code"] == "forbidden"
        assert "CSRF" in r.json()["error"]["message"]
    r = web.post("/api/memory", json=body, headers={"x-csrf-token": csrf})
    assert r.status_code == 201
    memory_id = r.json()["id"]
    path = f"/api/memory/{memory_id}"
    assert web.put(path, json={"content": "changed"}).status_code == 403
    assert web.put(path, json={"content": "changed"}, headers={"x-csrf-token": csrf}).is_success
    assert web.delete(path).status_code == 403
    assert web.delete(path, headers={"x-csrf-token": csrf}).json() == {"deleted": True}
    key = web.post("/api/keys", json={"name": "k"}, headers={"x-csrf-token": csrf}).json()
    assert web.patch(f"/api/keys/{key['id']}", json={"memoryEnabled": False}).status_code == 403
    r = web.patch(
        f"/api/keys/{key['id']}", json={"memoryEnabled": False}, headers={"x-csrf-token": csrf}
    )
    assert r.json()["key"]["memoryEnabled"] is False


def test_bearer_token_still_rules_when_present(web: TestClient) -> None:
    log_in(web)
    r = web.get("/api/memory", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401  # a bad Bearer is not rescued by the cookie
    r = web.get("/api/memory", headers={"Authorization": "Basic abc"})
    assert r.status_code == 401
    r = web.post(
        "/api/memory",
        json={"apiKeyId": "a", "key": "k", "content": "c"},
        headers={"Authorization": f"Bearer {ADMIN}"},
    )
    assert r.status_code == 201  # Bearer callers need no CSRF token


def test_unknown_session_is_401(web: TestClient) -> None:
    web.cookies.set("memoryd_session", "made-up")
    r = web.get("/api/memory")
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"
    assert "log in again" in r.json()["error"]["message"]
    r = web.get("/dashboard", follow_redirects=False)
    assert r.headers["location"].startswith("/dashboard/login")


def test_logout_needs_csrf_and_ends_the_session(web: TestClient) -> None:
    csrf = log_in(web)
    cookie = web.cookies.get("memoryd_session")
    assert web.post("/dashboard/logout", data={"csrf": "forged"}).status_code == 403
    assert web.get("/api/memory").status_code == 200
    r = web.post("/dashboard/logout", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/dashboard/login"
    assert 'memoryd_session=""' in set_cookies(r)["memoryd_session"]
    web.cookies.set("memoryd_session", cookie or "")
    assert web.get("/api/memory").status_code == 401  # gone server-side, not just client-side


def test_login_page_redirects_when_logged_in(web: TestClient) -> None:
    log_in(web)
    r = web.get("/dashboard/login?tab=playground", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/dashboard?tab=playground"


def test_sessions_expire_and_are_bounded() -> None:
    now = [1000.0]
    store = SessionStore(idle_timeout_s=60, max_age_s=300, max_sessions=3, clock=lambda: now[0])
    first = store.create()
    assert store.get(first.id) is first
    now[0] += 59
    assert store.get(first.id) is first  # use restarts the idle timer
    now[0] += 61
    assert store.get(first.id) is None
    kept = store.create()
    for _ in range(4):
        now[0] += 50
        assert store.get(kept.id) is kept
    now[0] += 100
    assert store.get(kept.id) is None  # max age, however busy
    ids = [store.create().id for _ in range(5)]
    assert len(store) == 3
    assert store.get(ids[0]) is None
    assert store.get(ids[-1]) is not None
    assert store.get(None) is None
    assert store.get("") is None


def test_oversized_login_form_is_refused(web: TestClient) -> None:
    csrf = login_csrf(web)
    r = web.post("/dashboard/login", data={"csrf": csrf, "token": ADMIN, "pad": "x" * 20_000})
    assert r.status_code == 403


def test_servers_sharing_a_store_share_sessions_and_logouts(tmp_path: Path, pg_url: str) -> None:
    """Behind one address (``serve --workers``, replicas on PostgreSQL) a browser's
    requests land on any server: each accepts the session another opened, with its
    CSRF token, and a logout on one ends it on all."""
    from tests.conftest import make_engine
    from tests.embedders import no_source

    env = {"MEMORYD_DATABASE_URL": pg_url}
    first = make_engine(tmp_path / "a", env, resolver=no_source)
    second = make_engine(tmp_path / "b", env, resolver=no_source)
    try:
        with (
            TestClient(create_app(first, admin_token=ADMIN)) as a,
            TestClient(create_app(second, admin_token=ADMIN)) as b,
        ):
            csrf = log_in(a)
            cookie = a.cookies.get("memoryd_session") or ""
            b.cookies.set("memoryd_session", cookie)
            assert b.get("/dashboard", follow_redirects=False).status_code == 200
            body = {"apiKeyId": "alice", "key": "k", "content": "hello"}
            assert b.post("/api/memory", json=body).status_code == 403  # CSRF still needed
            assert b.post("/api/memory", json=body, headers={"x-csrf-token": csrf}).is_success
            forged = cookie[:-4] + ("0000" if not cookie.endswith("0000") else "1111")
            b.cookies.set("memoryd_session", forged)
            assert b.get("/api/memory").status_code == 401  # the signature is checked
            b.cookies.set("memoryd_session", cookie)
            assert a.post("/dashboard/logout", data={"csrf": csrf}).status_code == 200
            assert b.get("/api/memory").status_code == 401  # ended on B too
        with TestClient(create_app(second, admin_token="another-admin-token-xyz")) as c:
            c.cookies.set("memoryd_session", cookie)
            assert c.get("/api/memory").status_code == 401  # another token, another key
    finally:
        first.close()
        second.close()


def test_a_server_alone_keeps_sessions_to_itself(engine: MemoryEngine) -> None:
    """On SQLite one server owns the store: its sessions are not signed for others, so
    a restart (a new app) logs everyone out, the safe failure."""
    with TestClient(create_app(engine, admin_token=ADMIN)) as first:
        log_in(first)
        cookie = first.cookies.get("memoryd_session") or ""
    with TestClient(create_app(engine, admin_token=ADMIN)) as again:
        again.cookies.set("memoryd_session", cookie)
        assert again.get("/api/memory").status_code == 401
