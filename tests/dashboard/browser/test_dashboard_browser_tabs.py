"""Memory Studio in a real browser, part 2: Playground, Engine, Keys, Settings, a
narrow window, logout, and a screenshot of every tab (docs/screenshots/<tab>.png).

Same setup as part 1 (test_dashboard_browser.py, browser/conftest.py and support.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest

from memoryd.engine import MemoryEngine
from memoryd.models import MemoryType
from tests.conftest import ADMIN, add

if not Path("/usr/bin/chromium").exists():
    pytest.skip(
        "Debian's Chromium is not installed (/usr/bin/chromium): apt-get install -y chromium",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, StorageState, expect

from tests.dashboard.browser.support import (
    SHOTS,
    STACK_TRACE,
    api,
    log_in,
    open_tab,
    rows,
    session_state,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def login_state(browser: Browser, base_url: str) -> StorageState:
    return session_state(browser, base_url)


def test_playground_ranks_with_tiers(page: Page, base_url: str, engine: MemoryEngine) -> None:
    add(engine, "player", "I prefer dark mode in every editor", key="theme")
    add(engine, "player", "My favourite language is Rust", key="language")
    add(engine, "player", "The dog is called Pixel", key="dog")
    engine.drain(10)
    open_tab(page, base_url, "playground")
    expect(page.get_by_test_id("playground-submit")).to_be_disabled()
    page.get_by_test_id("playground-query-input").fill("dark mode editor")
    page.get_by_test_id("playground-strategy-select").select_option("hybrid")
    page.get_by_test_id("playground-budget-input").fill("1500")
    page.get_by_test_id("playground-owner-select").select_option("player")
    page.get_by_test_id("playground-submit").click()
    hits = page.get_by_test_id("playground-hit")
    expect(hits).to_have_count(1)  # the other two are below the relevance floor
    expect(hits.first).to_contain_text("dark mode")
    dropped = page.get_by_test_id("playground-dropped-hit")
    expect(dropped).to_have_count(2)
    expect(dropped.first).to_contain_text("not close enough in meaning")
    expect(dropped.first).to_contain_text("the relevance floor is 0.2")
    reason = hits.first.get_by_test_id("playground-hit-reason")
    expect(reason).to_contain_text("close in meaning to the question")
    expect(hits.first).to_have_attribute("data-tier", "hybrid")
    assert hits.first.get_attribute("data-rank") == "1"
    for tier in [h.get_attribute("data-tier") for h in hits.all()]:
        assert tier in {"fts5", "vector", "hybrid", "qdrant", "recent", "asked"}
    expect(hits.first).to_contain_text("score")
    expect(hits.first).to_contain_text("vec")
    expect(page.get_by_test_id("playground-total-tokens")).to_have_text(
        re.compile(r"^\d+ / 1500 tokens$")
    )
    resolution = page.get_by_test_id("playground-resolution")
    expect(resolution).to_contain_text("hash-64")
    expect(resolution.locator('[data-field="strategyUsed"]')).to_have_text("hybrid")

    page.get_by_test_id("playground-strategy-select").select_option("recent")
    page.get_by_test_id("playground-query-input").press("Enter")
    # recent: the newest, whatever the query says, as the gateway sends them
    expect(hits).to_have_count(3)
    expect(hits.first).to_have_attribute("data-tier", "recent")
    expect(hits.first).to_contain_text("The dog is called Pixel")
    page.get_by_test_id("playground-budget-input").fill("0")
    page.get_by_test_id("playground-submit").click()
    expect(page.get_by_test_id("playground-error")).to_contain_text("budget")


def test_reindex_progress_reaches_the_end(page: Page, base_url: str, engine: MemoryEngine) -> None:
    for i in range(150):
        add(engine, "indexer", f"Memory {i} to embed again", key=f"ix-{i}")
    engine.drain(20)
    open_tab(page, base_url, "engine")
    panel = page.get_by_test_id("engine-status-panel")
    expect(panel).to_contain_text("Engine status")
    expect(page.get_by_test_id("status-chip-embedding")).to_have_attribute("data-state", "ok")
    expect(page.get_by_test_id("status-chip-keyword")).to_contain_text("FTS5")
    page.get_by_test_id("reindex-force").check()
    page.get_by_test_id("reindex-now-button").click()
    progress = page.get_by_test_id("reindex-progress")
    expect(progress).to_have_attribute("data-state", "done", timeout=30_000)
    expect(progress).to_have_attribute("aria-valuenow", "100")
    expect(page.get_by_test_id("reindex-progress-text")).to_contain_text("nothing pending")
    assert api(base_url, "GET", "/api/memory/engine-status")["reindex"]["pending"] == 0

    page.get_by_test_id("transformers-enabled-toggle").click()
    expect(page.get_by_test_id("embedding-message")).to_contain_text("Transformers")
    wanted = page.get_by_test_id("transformers-enabled-toggle").get_attribute("aria-checked")
    stored = api(base_url, "GET", "/api/settings/memory")["transformersEnabled"]
    assert str(stored).lower() == wanted
    api(base_url, "PUT", "/api/settings/memory", json={"transformersEnabled": wanted != "true"})


def test_qdrant_card_reports_errors_without_stack_traces(
    page: Page, base_url: str, tmp_path: Path
) -> None:
    open_tab(page, base_url, "engine")
    card = page.get_by_test_id("qdrant-config-card")
    expect(page.get_by_test_id("qdrant-enabled-switch")).to_be_visible()
    message = page.get_by_test_id("qdrant-message")
    probe = httpx.get(
        f"{base_url}/api/settings/qdrant", headers={"Authorization": f"Bearer {ADMIN}"}
    )
    if probe.status_code == 404:  # this build has no Qdrant routes: the card says so
        expect(message).to_contain_text("Qdrant settings unavailable")
        page.get_by_test_id("qdrant-test-connection").click()
        expect(message).to_contain_text("Connection test failed")
        page.get_by_test_id("qdrant-cleanup").click()
        expect(message).to_contain_text("Cleanup failed")
        page.get_by_test_id("qdrant-enabled-switch").click()
        expect(message).to_contain_text("Could not save Qdrant settings")
        expect(page.get_by_test_id("qdrant-status-badge")).to_have_text("unavailable")
    else:  # local (embedded) mode on a temp path, then a connection test
        page.get_by_test_id("qdrant-path").fill(str(tmp_path / "qdrant"))
        page.get_by_test_id("qdrant-save").click()
        expect(message).to_contain_text(re.compile("saved|Could not save"))
        switch = page.get_by_test_id("qdrant-enabled-switch")
        switch.click()
        expect(message).to_contain_text(re.compile("Qdrant enabled|Could not save"))
        page.get_by_test_id("qdrant-test-connection").click()
        expect(message).to_contain_text("Conn")
        if switch.get_attribute("aria-checked") == "true":
            switch.click()
            expect(switch).to_have_attribute("aria-checked", "false")
    assert not STACK_TRACE.search(card.inner_text())


def test_create_toggle_and_revoke_a_key(page: Page, base_url: str, engine: MemoryEngine) -> None:
    open_tab(page, base_url, "keys")
    page.get_by_test_id("key-name-input").fill("ci laptop")
    page.get_by_test_id("create-key-button").click()
    secret = page.get_by_test_id("new-key-secret")
    expect(secret).to_be_visible()
    value = secret.inner_text().strip()
    key = engine.keys.authenticate(value)
    assert key is not None
    assert key.name == "ci laptop"
    expect(page.get_by_test_id(f"key-row-{key.id}")).to_contain_text("active")
    assert value not in page.get_by_test_id("keys-table").inner_text()
    page.get_by_test_id("copy-key-secret").click()
    expect(page.get_by_test_id("toast")).to_be_visible()

    page.get_by_test_id(f"key-memory-toggle-{key.id}").select_option("false")
    expect(page.get_by_test_id("toast")).to_contain_text("Memory for ci laptop: off")
    fresh = engine.keys.get(key.id)
    assert fresh is not None
    assert fresh.memory_enabled is False

    # revoking cannot be undone: asked first, and Cancel leaves the key working
    page.get_by_test_id(f"revoke-key-{key.id}").click()
    expect(page.get_by_test_id("revoke-modal")).to_be_visible()
    expect(page.get_by_test_id("revoke-text")).to_contain_text("ci laptop")
    page.get_by_test_id("revoke-cancel").click()
    expect(page.get_by_test_id("revoke-modal")).to_be_hidden()
    expect(page.get_by_test_id(f"key-status-{key.id}")).to_contain_text("active")
    assert engine.keys.authenticate(value) is not None
    page.get_by_test_id(f"revoke-key-{key.id}").click()
    page.get_by_test_id("revoke-confirm").click()
    expect(page.get_by_test_id(f"key-status-{key.id}")).to_contain_text("revoked")
    expect(page.get_by_test_id(f"revoke-key-{key.id}")).to_have_count(0)
    assert engine.keys.authenticate(value) is None
    page.reload()
    expect(page.get_by_test_id("new-key-secret")).to_be_hidden()  # shown once only
    expect(page.get_by_test_id(f"key-row-{key.id}")).to_contain_text("revoked")


def test_a_key_shows_what_it_keeps_against_its_quotas(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    """The Keys tab shows each key's stored memories and bytes beside its
    quotas (``MEMORYD_KEY_MAX_MEMORIES``, ``MEMORYD_KEY_MAX_BYTES``)."""
    record, _ = engine.keys.create("quota shown")
    add(engine, record.id, "User likes green tea")
    add(engine, record.id, "User lives in Oslo")
    open_tab(page, base_url, "keys")
    cell = page.get_by_test_id(f"key-storage-{record.id}")
    limits = engine.config.quotas
    expect(cell).to_contain_text(f"2 of {limits.memories} memories")
    expect(cell).to_contain_text("MB")  # "0.0 KB of 256.0 MB": the byte quota, readable
    assert not STACK_TRACE.search(cell.inner_text())


def test_settings_persist_and_show_the_token_cost(page: Page, base_url: str) -> None:
    open_tab(page, base_url, "settings")
    toggle = page.get_by_test_id("memory-enabled-toggle")
    warning = page.get_by_test_id("memory-cost-warning")
    expect(toggle).to_have_attribute("aria-checked", "true")
    expect(warning).to_be_visible()
    toggle.click()
    expect(toggle).to_have_attribute("aria-checked", "false")
    expect(warning).to_be_hidden()
    assert api(base_url, "GET", "/api/settings/memory")["enabled"] is False
    page.reload()
    expect(toggle).to_have_attribute("aria-checked", "false")  # rendered by the server
    toggle.click()
    expect(toggle).to_have_attribute("aria-checked", "true")
    expect(warning).to_be_visible()
    assert api(base_url, "GET", "/api/settings/memory")["enabled"] is True

    page.get_by_test_id("settings-max-tokens").fill("99999")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-error")).to_contain_text("Max tokens")
    assert api(base_url, "GET", "/api/settings/memory")["maxTokens"] == 2000
    page.get_by_test_id("settings-max-tokens").fill("1200")
    page.get_by_test_id("settings-retention-days").fill("45")
    page.get_by_test_id("settings-strategy").select_option("recent")
    page.get_by_test_id("settings-extract-assistant").check()
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-message")).to_have_text("Settings saved.")
    expect(page.get_by_test_id("memory-cost-tokens")).to_have_text("1200")
    saved = api(base_url, "GET", "/api/settings/memory")
    assert (saved["maxTokens"], saved["retentionDays"], saved["strategy"]) == (1200, 45, "recent")
    assert saved["extractFrom"] == ["user", "assistant"]
    page.reload()
    expect(page.get_by_test_id("settings-retention-days")).to_have_value("45")
    defaults = {
        "strategy": "hybrid",
        "maxTokens": 2000,
        "retentionDays": None,
        "extractFrom": ["user"],
    }
    api(base_url, "PUT", "/api/settings/memory", json=defaults)


def test_extraction_settings_round_trip(page: Page, base_url: str) -> None:
    open_tab(page, base_url, "settings")
    expect(page.get_by_test_id("settings-extraction-mode")).to_have_value("rules")
    page.get_by_test_id("settings-extraction-mode").select_option("llm")
    page.get_by_test_id("settings-extraction-model").fill("no-slash")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-error")).to_contain_text("provider/model")
    assert api(base_url, "GET", "/api/settings/memory")["extractionMode"] == "rules"
    page.get_by_test_id("settings-extraction-model").fill("local/qwen2.5")
    page.get_by_test_id("settings-extraction-timeout").fill("5000")
    page.get_by_test_id("settings-extraction-cap").fill("50000")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-message")).to_have_text("Settings saved.")
    saved = api(base_url, "GET", "/api/settings/memory")
    assert (saved["extractionMode"], saved["extractionProviderModel"]) == ("llm", "local/qwen2.5")
    assert (saved["extractionTimeoutMs"], saved["extractionDailyTokenCap"]) == (5000, 50000)
    page.reload()
    expect(page.get_by_test_id("settings-extraction-cap")).to_have_value("50000")
    expect(page.get_by_test_id("settings-extraction-mode")).to_have_value("llm")
    defaults = {
        "extractionMode": "rules",
        "extractionProviderModel": None,
        "extractionTimeoutMs": 15000,
        "extractionDailyTokenCap": 0,
    }
    api(base_url, "PUT", "/api/settings/memory", json=defaults)


def test_providers_add_edit_and_remove_with_a_kind(page: Page, base_url: str) -> None:
    open_tab(page, base_url, "settings")
    expect(page.get_by_test_id("providers-empty")).to_be_visible()
    expect(page.get_by_test_id("provider-kind-select")).to_have_value("openai")
    page.get_by_test_id("provider-name-input").fill("claude")
    page.get_by_test_id("provider-kind-select").select_option("anthropic")
    page.get_by_test_id("provider-base-url-input").fill("https://api.anthropic.example/v1/")
    page.get_by_test_id("provider-api-key-input").fill("sk-ant-secret-123456")
    page.get_by_test_id("provider-save").click()
    expect(page.get_by_test_id("provider-kind-claude")).to_have_text("anthropic")
    expect(page.get_by_test_id("providers-empty")).to_be_hidden()
    assert "sk-ant-secret-123456" not in page.get_by_test_id("providers-table").inner_text()
    [saved] = api(base_url, "GET", "/api/settings/providers")
    assert (saved["kind"], saved["baseUrl"], saved["hasKey"]) == (
        "anthropic",
        "https://api.anthropic.example/v1",
        True,
    )

    page.get_by_test_id("provider-name-input").fill("local")  # the default kind
    page.get_by_test_id("provider-base-url-input").fill("http://127.0.0.1:8000/v1")
    page.get_by_test_id("provider-save").click()
    expect(page.get_by_test_id("provider-kind-local")).to_have_text("openai")

    page.get_by_test_id("provider-edit-claude").click()
    expect(page.get_by_test_id("provider-name-input")).to_be_disabled()
    expect(page.get_by_test_id("provider-kind-select")).to_have_value("anthropic")
    page.get_by_test_id("provider-kind-select").select_option("openai")
    page.get_by_test_id("provider-role-select").select_option("user")
    page.get_by_test_id("provider-save").click()
    expect(page.get_by_test_id("provider-kind-claude")).to_have_text("openai")
    by_name = {p["name"]: p for p in api(base_url, "GET", "/api/settings/providers")}
    assert list(by_name) == ["claude", "local"]  # an edit keeps the order
    claude = by_name["claude"]
    assert (claude["kind"], claude["systemRole"], claude["hasKey"]) == ("openai", "user", True)

    page.get_by_test_id("provider-name-input").fill("a b")
    page.get_by_test_id("provider-base-url-input").fill("ftp://nope")
    page.get_by_test_id("provider-save").click()
    expect(page.get_by_test_id("providers-error")).to_contain_text("Name must be")
    expect(page.get_by_test_id("providers-error")).to_contain_text("Base URL")

    page.reload()  # rendered from the server's state
    expect(page.get_by_test_id("provider-kind-claude")).to_have_text("openai")
    expect(page.get_by_test_id("provider-kind-local")).to_have_text("openai")
    page.get_by_test_id("provider-remove-claude").click()
    expect(page.get_by_test_id("provider-row-claude")).to_have_count(0)
    assert [p["name"] for p in api(base_url, "GET", "/api/settings/providers")] == ["local"]
    api(base_url, "PUT", "/api/settings/providers", json=[])


def test_narrow_window_and_logout(browser: Browser, base_url: str) -> None:
    """Its own session (logging out must not end the one the other tests share)."""
    context = browser.new_context(viewport={"width": 420, "height": 800})
    page = context.new_page()
    try:
        log_in(page, base_url)
        for tab in ("memories", "engine", "settings"):
            open_tab(page, base_url, tab)
            overflow = page.evaluate("() => document.body.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{tab} scrolls sideways at 420 px"
        page.get_by_test_id("logout-button").click()
        expect(page).to_have_url(re.compile(r"/dashboard/login$"))
        assert page.request.get(f"{base_url}/api/memory").status == 401
    finally:
        context.close()


DEMO = [
    (MemoryType.FACTUAL, "editor.theme", "User prefers dark mode in every editor", ""),
    (MemoryType.FACTUAL, "language", "User's favourite language is Rust", ""),
    (MemoryType.PROCEDURAL, "deploy", "Deploys go out on Tuesdays after the review", ""),
    (MemoryType.EPISODIC, "trip", "Asked about trains from Lisbon to Porto", "s-42"),
    (MemoryType.SEMANTIC, "summary", "Works on a Python service with PostgreSQL", ""),
]


def test_screenshots_of_every_tab(
    page: Page, base_url: str, engine: MemoryEngine, tmp_path: Path
) -> None:
    # docs/screenshots is rewritten only on request, so a test run leaves the tree clean
    shots = SHOTS if os.environ.get("MEMORYD_UPDATE_SCREENSHOTS") == "1" else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    for kind, key, content, session in DEMO:
        add(engine, "demo", content, key=key, type=kind, session_id=session)
    api(base_url, "POST", "/api/keys", json={"name": "laptop", "id": "demo"})
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("demo")
    expect(rows(page)).to_have_count(len(DEMO))
    expect(page.get_by_test_id("memory-health-dot")).to_have_attribute("data-state", "ok")
    page.screenshot(path=str(shots / "memories.png"), animations="disabled")
    open_tab(page, base_url, "playground")
    page.get_by_test_id("playground-query-input").fill("which editor theme?")
    page.get_by_test_id("playground-owner-select").select_option("demo")
    page.get_by_test_id("playground-submit").click()
    expect(page.get_by_test_id("playground-hit").first).to_be_visible()
    page.screenshot(path=str(shots / "playground.png"), animations="disabled")
    open_tab(page, base_url, "engine")
    expect(page.get_by_test_id("status-chip-keyword")).to_have_attribute("data-state", "ok")
    page.screenshot(path=str(shots / "engine.png"), animations="disabled")
    open_tab(page, base_url, "keys")
    expect(page.get_by_test_id("keys-table").locator("tbody tr").first).to_be_visible()
    page.screenshot(path=str(shots / "keys.png"), animations="disabled")
    open_tab(page, base_url, "settings")
    page.screenshot(path=str(shots / "settings.png"), animations="disabled")
    for tab in ("memories", "playground", "engine", "keys", "settings"):
        assert (shots / f"{tab}.png").stat().st_size < 400_000
