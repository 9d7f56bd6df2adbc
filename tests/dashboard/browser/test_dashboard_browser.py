"""Memory Studio in a real browser, part 1: login, tabs and the Memories tab.

Debian's headless Chromium, driven by Playwright's sync API, against the real app on a
free loopback port (browser/conftest.py and support.py). Nothing is stubbed. Part 2 (the other
tabs and the screenshots) is test_dashboard_browser_tabs.py.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoryd.engine import MemoryEngine
from memoryd.models import MemoryType, NewMemory
from tests.conftest import ADMIN, add

if not Path("/usr/bin/chromium").exists():
    pytest.skip(
        "Debian's Chromium is not installed (/usr/bin/chromium): apt-get install -y chromium",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, StorageState, expect

from tests.dashboard.browser.support import (
    STACK_TRACE,
    VIEWPORT,
    open_tab,
    row_id,
    rows,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def login_state(browser: Browser, base_url: str) -> StorageState:
    """Log in once through the form (a wrong token first); the tests reuse the cookie."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(f"{base_url}/dashboard?tab=keys")
    expect(page).to_have_url(re.compile(r"/dashboard/login\?tab=keys$"))
    page.get_by_test_id("login-token-input").fill("wrong-token")
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("login-error")).to_have_text("Invalid admin token.")
    page.get_by_test_id("login-token-input").fill(ADMIN)
    page.get_by_test_id("login-submit").click()
    expect(page).to_have_url(re.compile(r"/dashboard\?tab=keys$"))
    expect(page.get_by_test_id("keys-tab-content")).to_be_visible()
    session = {c["name"]: c for c in context.cookies()}["memoryd_session"]
    assert session["httpOnly"]
    assert session["sameSite"] == "Strict"
    assert ADMIN not in page.content()
    assert page.evaluate("() => JSON.stringify(localStorage) + document.cookie") == "{}"
    state = context.storage_state()
    context.close()
    return state


def test_tabs_follow_the_url(page: Page, base_url: str) -> None:
    open_tab(page, base_url, "memories")
    for tab in ("playground", "engine", "keys", "settings", "memories"):
        page.get_by_test_id(f"tab-{tab}").click()
        expect(page).to_have_url(re.compile(rf"\?tab={tab}$"))
        expect(page.get_by_test_id(f"{tab}-tab-content")).to_be_visible()
        others = [t for t in ("memories", "playground", "engine", "keys", "settings") if t != tab]
        for other in others:  # only the active tab is rendered
            expect(page.get_by_test_id(f"{other}-tab-content")).to_have_count(0)
    page.goto(f"{base_url}/dashboard?tab=nonsense")
    expect(page.get_by_test_id("memories-tab-content")).to_be_visible()


def test_add_edit_delete_a_memory(page: Page, base_url: str, engine: MemoryEngine) -> None:
    add(engine, "alice", "Alice lives in Lisbon", key="city")
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("alice")
    expect(rows(page)).to_have_count(1)

    page.get_by_test_id("add-memory-button").click()
    expect(page.get_by_test_id("memory-modal-owner")).to_have_value("alice")
    page.get_by_test_id("memory-modal-cancel").click()
    expect(page.get_by_test_id("memory-modal")).to_be_hidden()
    page.get_by_test_id("add-memory-button").click()
    page.get_by_test_id("memory-modal-save").click()  # empty: checked before any request
    expect(page.get_by_test_id("memory-modal-error")).to_contain_text("Content is required")
    # a new memory needs no key: the server derives it from the content
    page.get_by_test_id("memory-modal-content").fill("Standups are at nine")
    page.get_by_test_id("memory-modal-save").click()
    expect(page.get_by_test_id("memory-modal")).to_be_hidden()
    expect(rows(page)).to_have_count(2)
    page.get_by_test_id("add-memory-button").click()
    page.get_by_test_id("memory-modal-type").select_option("procedural")
    page.get_by_test_id("memory-modal-key").fill("deploy")
    page.get_by_test_id("memory-modal-content").fill("Deploys happen on Fridays")
    page.get_by_test_id("memory-modal-save").click()
    expect(page.get_by_test_id("memory-modal")).to_be_hidden()
    expect(rows(page)).to_have_count(3)
    memory_id = row_id(page, "deploy")
    expect(page.get_by_test_id(f"memory-row-{memory_id}")).to_contain_text("procedural")

    page.get_by_test_id(f"edit-memory-{memory_id}").click()
    page.get_by_test_id("memory-modal-metadata").fill("{not json")
    page.get_by_test_id("memory-modal-save").click()
    expect(page.get_by_test_id("memory-modal-error")).to_contain_text("not valid JSON")
    page.get_by_test_id("memory-modal-key").fill("city")  # taken: the server says so
    page.get_by_test_id("memory-modal-metadata").fill('{"source": "studio"}')
    page.get_by_test_id("memory-modal-save").click()
    expect(page.get_by_test_id("memory-modal-error")).to_contain_text("already has this key")
    page.get_by_test_id("memory-modal-key").fill("deploy")
    page.get_by_test_id("memory-modal-content").fill("Deploys happen on Tuesdays")
    page.get_by_test_id("memory-modal-save").click()
    expect(page.get_by_test_id(f"memory-row-{memory_id}")).to_contain_text("Tuesdays")
    stored = engine.get(memory_id)
    assert stored is not None
    assert stored.metadata == {"source": "studio"}

    page.get_by_test_id(f"delete-memory-{memory_id}").click()
    page.get_by_test_id("confirm-cancel").click()
    expect(page.get_by_test_id(f"memory-row-{memory_id}")).to_be_visible()
    page.get_by_test_id(f"delete-memory-{memory_id}").click()
    page.get_by_test_id("confirm-delete").click()
    expect(page.get_by_test_id(f"memory-row-{memory_id}")).to_have_count(0)
    expect(rows(page)).to_have_count(2)
    assert engine.get(memory_id) is None


def test_search_filter_and_paginate(page: Page, base_url: str, engine: MemoryEngine) -> None:
    for i in range(25):
        kind = MemoryType.PROCEDURAL if i % 5 == 0 else MemoryType.FACTUAL
        word = "zebra" if i in (3, 17) else "plain"
        add(
            engine, "paula", f"Fact number {i} about a {word} topic", key=f"fact-{i:02d}", type=kind
        )
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("paula")
    info = page.get_by_test_id("memories-page-info")
    expect(info).to_have_text("Page 1 of 2 (25 total)")
    expect(rows(page)).to_have_count(20)
    expect(page.get_by_test_id("stat-total")).to_have_text("25")
    page.get_by_test_id("memories-next").click()
    expect(info).to_have_text("Page 2 of 2 (25 total)")
    expect(rows(page)).to_have_count(5)
    expect(page.get_by_test_id("memories-next")).to_be_disabled()
    page.get_by_test_id("memories-prev").click()
    expect(info).to_have_text("Page 1 of 2 (25 total)")

    page.get_by_test_id("memory-search-input").press_sequentially("zebra", delay=20)
    expect(rows(page)).to_have_count(2)
    expect(info).to_have_text("Page 1 of 1 (2 total)")
    page.get_by_test_id("memory-search-input").fill("")
    page.get_by_test_id("memory-type-filter").select_option("procedural")
    expect(rows(page)).to_have_count(5)
    for text in rows(page).all_inner_texts():
        assert "procedural" in text


def test_export_then_import(
    page: Page, base_url: str, engine: MemoryEngine, tmp_path: Path
) -> None:
    for i in range(3):
        add(engine, "exporter", f"Exported fact {i}", key=f"exp-{i}")
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("exporter")
    expect(rows(page)).to_have_count(3)
    with page.expect_download() as download:
        page.get_by_test_id("export-memories-button").click()
    target = tmp_path / "export.jsonl"
    download.value.save_as(target)
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert sorted(m["key"] for m in lines) == ["exp-0", "exp-1", "exp-2"]
    assert {m["apiKeyId"] for m in lines} == {"exporter"}

    gone = row_id(page, "exp-1")
    engine.delete(gone)
    page.get_by_test_id("memory-owner-filter").select_option("")
    page.get_by_test_id("memory-owner-filter").select_option("exporter")
    expect(rows(page)).to_have_count(2)
    page.get_by_test_id("import-file-input").set_input_files(str(target))
    result = page.get_by_test_id("import-result")
    expect(result).to_contain_text("Import finished: 1 imported")
    expect(result).to_contain_text("0 errors")
    expect(rows(page)).to_have_count(3)

    target.write_text("not json\n")
    page.get_by_test_id("import-file-input").set_input_files(str(target))
    expect(result).to_contain_text("0 imported, 0 updated, 0 skipped, 1 errors")
    expect(result).to_contain_text("invalid JSON")
    expect(result).to_contain_text("First error (line 1)")
    assert not STACK_TRACE.search(result.inner_text())


def test_a_long_end_user_id_leaves_the_row_actions_in_view(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    """A 200-character end user (the most any interface takes) made its column 1,400 px
    wide and pushed Edit and Delete off the screen for every row."""
    long_user = "tenant-" + "x" * 193
    engine.create(NewMemory("wide", "User likes tea", key="tea", user_id=long_user))
    page.set_viewport_size({"width": 1400, "height": 900})
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("wide")
    expect(rows(page)).to_have_count(1)
    cell = page.get_by_test_id("memory-user-cell")
    assert cell.get_attribute("title") == long_user  # the whole id on hover
    box = page.locator("[data-testid^=edit-memory-]").bounding_box()
    assert box is not None
    assert box["x"] + box["width"] <= 1400


def test_compact_old_with_a_dry_run_first(page: Page, base_url: str, engine: MemoryEngine) -> None:
    old = datetime.now(UTC) - timedelta(days=90)
    for i in range(3):
        add(engine, "oldie", f"Old note {i} about the garden", key=f"old-{i}", created_at=old)
    add(engine, "oldie", "A fresh note", key="fresh")
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("oldie")
    expect(rows(page)).to_have_count(4)
    page.get_by_test_id("compact-old-button").click()
    candidates = page.get_by_test_id("compact-candidate")
    expect(candidates).to_have_count(3)
    expect(page.get_by_test_id("compact-summary")).to_contain_text("3 memories")
    assert engine.list_memories(owner="oldie").total == 4  # the dry run changed nothing
    page.get_by_test_id("compact-days-input").fill("365")
    page.get_by_test_id("compact-preview-button").click()
    expect(page.get_by_test_id("compact-summary")).to_contain_text("Nothing to compact")
    expect(page.get_by_test_id("compact-confirm")).to_be_disabled()
    page.get_by_test_id("compact-days-input").fill("30")
    page.get_by_test_id("compact-preview-button").click()
    expect(candidates).to_have_count(3)
    page.get_by_test_id("compact-confirm").click()
    expect(page.get_by_test_id("compact-result")).to_contain_text("Compacted 3 memories")
    page.get_by_test_id("compact-cancel").click()
    expect(rows(page)).to_have_count(2)
    kinds = sorted(m.type.value for m in engine.list_memories(owner="oldie").data)
    assert kinds == ["factual", "semantic"]


def test_compact_says_it_keeps_end_users_apart(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    """The preview promised one summary; the server writes one per end user (and one
    of the shared memories), which the result now lists."""
    old = datetime.now(UTC) - timedelta(days=90)
    for user in ("u1", "u2", ""):
        for i in range(2):
            content = f"Old note {i} of {user or 'the key'}"
            engine.create(
                NewMemory("split", content, key=f"{user}-{i}", user_id=user, created_at=old)
            )
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("split")
    page.get_by_test_id("compact-old-button").click()
    expect(page.get_by_test_id("compact-candidate")).to_have_count(6)
    expect(page.get_by_test_id("compact-summary")).to_contain_text("into 3 summaries")
    page.get_by_test_id("compact-confirm").click()
    expect(page.get_by_test_id("compact-result")).to_contain_text("Compacted 6 memories into 3")


def test_end_user_filter_and_column_and_owner_names(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    """The Memories tab shows each memory's end user, filters by one, and
    names the key that owns it."""
    from memoryd.models import NewMemory

    record, _ = engine.keys.create("shop")
    engine.create(NewMemory(record.id, "Ann likes figs", user_id="ann"))
    engine.create(NewMemory(record.id, "Bo likes jazz", user_id="bo"))
    engine.create(NewMemory(record.id, "Shared store policy"))
    open_tab(page, base_url, "memories")
    # the owner selects name the key, as the table does
    option = page.get_by_test_id("memory-owner-filter").locator(f"option[value='{record.id}']")
    expect(option).to_have_text(f"shop ({record.id})")
    page.get_by_test_id("memory-owner-filter").select_option(record.id)
    expect(rows(page)).to_have_count(3)
    expect(page.get_by_test_id("memory-owner-cell").first).to_contain_text(f"shop ({record.id})")
    users = page.get_by_test_id("memory-user-cell")
    expect(users).to_have_count(3)
    assert sorted(users.all_inner_texts()) == ["ann", "bo", "shared"]
    page.get_by_test_id("memory-user-filter").fill("ann")
    expect(rows(page)).to_have_count(1)
    expect(rows(page).first).to_contain_text("Ann likes figs")

    open_tab(page, base_url, "playground")
    page.get_by_test_id("playground-owner-select").select_option(record.id)
    page.get_by_test_id("playground-user-input").fill("bo")
    page.get_by_test_id("playground-query-input").fill("likes figs jazz store policy")
    page.get_by_test_id("playground-strategy-select").select_option("recent")
    page.get_by_test_id("playground-submit").click()
    hits = page.get_by_test_id("playground-hit")
    # a named end user sees the key's shared memories only when the key shares them
    expect(hits).to_have_count(1)
    shown = " ".join(hits.all_inner_texts())
    assert "Bo likes jazz" in shown
    assert "Shared store policy" not in shown
    assert "Ann likes figs" not in shown


def test_the_profile_panel_pins_edits_and_removes_in_place(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    """The Memories tab shows the selected owner's (end user's) profile; a
    memory is pinned from the table, a line is edited in place and removed."""
    from memoryd.models import NewMemory

    record, _ = engine.keys.create("chef")
    engine.extract_now(record.id, "From now on please keep answers short.", user_id="ann")
    engine.create(NewMemory(record.id, "Ann loves modal jazz", user_id="ann"))
    open_tab(page, base_url, "memories")
    panel = page.get_by_test_id("profile-panel")
    expect(panel).to_be_hidden()  # no owner chosen
    page.get_by_test_id("memory-owner-filter").select_option(record.id)
    page.get_by_test_id("memory-user-filter").fill("ann")
    expect(rows(page)).to_have_count(2)
    expect(panel).to_be_visible()
    lines = panel.locator("li.profile-item")
    expect(lines).to_have_count(1)
    expect(lines.first.locator("input")).to_have_value(
        "User wants the assistant to keep answers short"
    )
    expect(lines.first).to_contain_text("answer_length")

    jazz = row_id(page, "Ann loves modal jazz")
    page.get_by_test_id(f"pin-memory-{jazz}").click()
    expect(page.get_by_test_id(f"unpin-memory-{jazz}")).to_be_visible()
    expect(lines).to_have_count(2)
    expect(lines.first).to_contain_text("pinned")  # pinned lines come first

    box = page.get_by_test_id(f"profile-input-{jazz}")
    box.fill("Ann loves modal jazz and bebop")
    page.get_by_test_id(f"profile-save-{jazz}").click()
    expect(rows(page).filter(has_text="and bebop")).to_have_count(1)
    memory = engine.get(jazz)
    assert memory is not None
    assert memory.content == "Ann loves modal jazz and bebop"

    short = [m.id for m in engine.list_memories(owner=record.id).data if "short" in m.content]
    page.get_by_test_id(f"profile-remove-{short[0]}").click()
    expect(lines).to_have_count(1)
    gone = engine.get(short[0])
    assert gone is not None
    assert gone.metadata.get("pinned") is False
    expect(page.get_by_test_id("profile-budget")).to_contain_text("of 150 tokens")
    assert not STACK_TRACE.search(page.content())


def test_erase_an_end_user_with_confirmation(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    """The Erase action needs the subject's name typed, erases that end user
    only, and shows the receipt."""
    engine.create(NewMemory("erasekey", "Ann works at Zanzibarco", user_id="ann"))
    engine.create(NewMemory("erasekey", "Bob works at Initech", user_id="bob"))
    open_tab(page, base_url, "memories")
    page.get_by_test_id("erase-subject-button").click()  # no owner chosen: it says so
    expect(page.get_by_test_id("memories-message")).to_contain_text("Choose an owner")
    page.get_by_test_id("memory-owner-filter").select_option("erasekey")
    page.get_by_test_id("memory-user-filter").fill("ann")
    page.get_by_test_id("memory-user-filter").press("Enter")
    expect(rows(page)).to_have_count(1)
    page.get_by_test_id("erase-subject-button").click()
    expect(page.get_by_test_id("erase-text")).to_contain_text('end user "ann" of erasekey')
    confirm = page.get_by_test_id("erase-confirm")
    expect(confirm).to_be_disabled()
    page.get_by_test_id("erase-confirm-input").fill("bob")
    expect(confirm).to_be_disabled()
    page.get_by_test_id("erase-confirm-input").fill("ann")
    confirm.click()
    expect(page.get_by_test_id("erase-modal")).to_be_hidden()
    expect(page.get_by_test_id("memories-message")).to_contain_text("Erased 1 memories")
    expect(page.get_by_test_id("memories-message")).to_contain_text("Receipt er_")
    expect(rows(page)).to_have_count(0)
    left = [m.content for m in engine.list_memories(owner="erasekey").data]
    assert left == ["Bob works at Initech"]
    (receipt,) = engine.erasures("erasekey")
    assert receipt.user_id == "ann"


def test_a_memory_says_where_it_came_from(page: Page, base_url: str, engine: MemoryEngine) -> None:
    """The edit dialog shows the request a captured fact was said in and how
    often requests carried it."""
    said = {"via": "gateway", "requestId": "req-4711", "saidAt": "2026-12-01T10:00:00.000Z"}
    add(
        engine,
        "provkey",
        "User works at Zanzibarco",
        key="job",
        metadata={**said, "source": "user"},
    )
    add(engine, "provkey", "User likes tea", key="tea")
    add(engine, "provkey", "User likes jazz", key="jazz", metadata={"via": "mcp"})
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("provkey")
    page.get_by_test_id(f"edit-memory-{row_id(page, 'job')}").click()
    box = page.get_by_test_id("memory-provenance")
    expect(box).to_contain_text("Said by the person in request req-4711")
    expect(box).to_contain_text("Carried in 0 requests")
    page.get_by_test_id("memory-modal-cancel").click()
    page.get_by_test_id(f"edit-memory-{row_id(page, 'tea')}").click()
    expect(box).to_contain_text("Written through the API")
    page.get_by_test_id("memory-modal-cancel").click()
    page.get_by_test_id(f"edit-memory-{row_id(page, 'jazz')}").click()
    expect(box).to_contain_text("Written through MCP")
