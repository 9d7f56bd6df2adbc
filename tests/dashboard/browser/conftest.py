"""The dashboard in a real headless Chromium: one served Memory Studio per test module
(module scope), a browser per module, and a logged-in page per test. Each module says
how it logs in (its ``login_state`` fixture)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, StorageState

from memoryd.engine import MemoryEngine
from tests.dashboard.browser.support import chromium, logged_in_page, studio_server


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryEngine, str]]:
    with studio_server(tmp_path_factory.mktemp("studio") / "data") as served:
        yield served


@pytest.fixture(scope="module")
def engine(studio: tuple[MemoryEngine, str]) -> MemoryEngine:
    return studio[0]


@pytest.fixture(scope="module")
def base_url(studio: tuple[MemoryEngine, str]) -> str:
    return studio[1]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser, login_state: StorageState) -> Iterator[Page]:
    with logged_in_page(browser, login_state) as tab:
        yield tab
