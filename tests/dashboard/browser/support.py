"""Shared pieces of the Memory Studio browser tests (test_dashboard_browser*.py).

A real app on a free loopback port (uvicorn, a temp data dir, the deterministic hash
embedder so semantic retrieval and reindexing do real work) and Debian's Chromium
driven by Playwright's sync API. Nothing is stubbed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, Locator, Page, StorageState, expect, sync_playwright

from memoryd.app import create_app
from memoryd.engine import MemoryEngine
from tests.conftest import ADMIN, make_engine

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
VIEWPORT: Any = {"width": 1280, "height": 800}
STACK_TRACE = re.compile(r"Traceback|\sat\s/|File \"")
SKIP_REASON = "Debian's Chromium is not installed (/usr/bin/chromium): apt-get install -y chromium"


@contextmanager
def studio_server(data: Path) -> Iterator[tuple[MemoryEngine, str]]:
    """``(engine, base_url)`` of a real memoryd app served on 127.0.0.1."""
    from tests.embedders import fixed_resolver
    from tests.fakes import serve_asgi

    engine = make_engine(data, resolver=fixed_resolver("hash", 64))
    try:
        with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
            yield engine, url
    finally:
        engine.close()


@contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def log_in(page: Page, base_url: str, tab: str = "memories") -> None:
    """Through the login form, as a person would."""
    page.goto(f"{base_url}/dashboard/login?tab={tab}")
    page.get_by_test_id("login-token-input").fill(ADMIN)
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id(f"{tab}-tab-content")).to_be_visible()


def session_state(browser: Browser, base_url: str) -> StorageState:
    """A logged-in storage state (the session cookie) for new contexts to reuse."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        log_in(context.new_page(), base_url)
        state = context.storage_state()
        return state
    finally:
        context.close()


@contextmanager
def logged_in_page(browser: Browser, state: StorageState) -> Iterator[Page]:
    """A fresh context with the session; fails the test on any JavaScript error."""
    context = browser.new_context(viewport=VIEWPORT, storage_state=state)
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert errors == [], f"JavaScript errors in the page: {errors}"


def api(base_url: str, method: str, path: str, **kw: Any) -> Any:
    """The management API with the Bearer token, to check what the page did."""
    headers = {"Authorization": f"Bearer {ADMIN}"}
    response = httpx.request(method, f"{base_url}{path}", headers=headers, timeout=10, **kw)
    response.raise_for_status()
    return response.json()


def open_tab(page: Page, base_url: str, tab: str) -> None:
    page.goto(f"{base_url}/dashboard?tab={tab}")
    expect(page.get_by_test_id(f"{tab}-tab-content")).to_be_visible()


def rows(page: Page) -> Locator:
    return page.get_by_test_id("memories-table").locator("tbody tr")


def row_id(page: Page, key: str) -> str:
    row = rows(page).filter(has_text=key)
    expect(row).to_have_count(1)
    memory_id = row.get_attribute("data-id")
    assert memory_id
    return memory_id
