"""Memory Studio in a real browser, part 3: a memory's history (what it
replaced, what replaced it), the end user in the edit dialog, and stat cards that say
what they count.

Same setup as parts 1 and 2 (browser/conftest.py and support.py): the real app on a loopback port,
Debian's headless Chromium, nothing stubbed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memoryd.engine import MemoryEngine
from memoryd.models import Memory, NewMemory, Reconcile
from tests.conftest import add

if not Path("/usr/bin/chromium").exists():
    pytest.skip(
        "Debian's Chromium is not installed (/usr/bin/chromium): apt-get install -y chromium",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Locator, Page, StorageState, expect

from tests.dashboard.browser.support import (
    api,
    open_tab,
    row_id,
    rows,
    session_state,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def login_state(browser: Browser, base_url: str) -> StorageState:
    return session_state(browser, base_url)


def moves(engine: MemoryEngine, owner: str, user: str, cities: list[str]) -> list[Memory]:
    """Each city replaces the one before (the slot "home"), a day apart; as stored now."""
    start = datetime.now(UTC) - timedelta(days=len(cities))
    for i, city in enumerate(cities):
        new = NewMemory(
            owner,
            f"User lives in {city}",
            key=f"home-{city.lower()}",
            metadata={"slot": "home"},
            created_at=start + timedelta(days=i),
            user_id=user,
        )
        engine.reconcile([Reconcile(owner, new, supersedes=("home",) if i else ())])
    stored = engine.list_memories(owner=owner, user_id=user, history=True, limit=200).data
    by_content = {m.content: m for m in stored}
    return [by_content[f"User lives in {city}"] for city in cities]


def when(value: datetime | None) -> str:
    """A date as the page shows it (Studio.fmtTime of the API's ISO string)."""
    assert value is not None
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def history_items(within: Locator) -> Locator:
    return within.get_by_test_id("history-item")


def expect_chain(within: Locator, chain: list[tuple[str, Memory]]) -> None:
    """The items, oldest first: (relation, memory) with its content and dates."""
    items = history_items(within)
    expect(items).to_have_count(len(chain))
    for i, (relation, memory) in enumerate(chain):
        item = items.nth(i)
        expect(item).to_have_attribute("data-relation", relation)
        expect(item).to_have_attribute("data-id", memory.id)
        expect(item.get_by_test_id("history-content")).to_have_text(memory.content)
        dates = item.get_by_test_id("history-dates")
        expect(dates).to_contain_text(f"created {when(memory.created_at)}")
        if memory.superseded_at is None:
            expect(dates).to_contain_text("current")
        else:
            expect(dates).to_contain_text(f"replaced {when(memory.superseded_at)}")


def test_a_memory_shows_what_it_replaced_and_what_replaced_it(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    berlin, lisbon, porto = moves(engine, "histkey", "ann", ["Berlin", "Lisbon", "Porto"])
    assert berlin.superseded_by == lisbon.id
    assert lisbon.superseded_by == porto.id
    (oslo,) = moves(engine, "histkey", "bob", ["Oslo"])  # another end user's home: not ann's
    add(engine, "histkey", "Standups are at nine", key="standup")
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("histkey")
    expect(rows(page)).to_have_count(3)  # the current ones: Porto, Oslo, the standup

    # from the row: what Porto replaced, oldest first, each with its content and dates
    page.get_by_test_id(f"history-memory-{porto.id}").click()
    dialog = page.get_by_test_id("history-modal")
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("history-key")).to_have_text(porto.key)
    expect(dialog.get_by_test_id("history-summary")).to_have_text(
        "It replaced 2 earlier memories; nothing has replaced it: it is current."
    )
    expect_chain(dialog, [("earlier", berlin), ("earlier", lisbon), ("self", porto)])
    expect(dialog).not_to_contain_text(oslo.content)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # a memory with no history says so, with no list
    page.get_by_test_id(f"history-memory-{row_id(page, 'standup')}").click()
    expect(dialog.get_by_test_id("history-summary")).to_have_text(
        "It replaced no earlier memory; nothing has replaced it: it is current."
    )
    expect(dialog.get_by_test_id("history-list")).to_have_count(0)
    page.get_by_test_id("history-close").click()
    expect(dialog).to_be_hidden()

    # the replaced ones are listed on request, marked, and their history runs forward
    page.get_by_test_id("memory-history-filter").check()
    expect(rows(page)).to_have_count(5)

    def badge(memory: Memory) -> Locator:
        return page.get_by_test_id(f"memory-row-{memory.id}").get_by_test_id(
            "memory-replaced-badge"
        )

    expect(badge(berlin)).to_have_text("replaced")
    expect(badge(porto)).to_have_count(0)
    page.get_by_test_id(f"history-memory-{lisbon.id}").click()
    expect(dialog.get_by_test_id("history-summary")).to_have_text(
        f"It replaced 1 earlier memory; a newer memory replaced it {when(lisbon.superseded_at)}."
    )
    expect_chain(dialog, [("earlier", berlin), ("self", lisbon), ("later", porto)])
    page.get_by_test_id("history-close").click()

    # in the edit dialog: what replaced the oldest, and what replaced that in turn
    page.get_by_test_id(f"edit-memory-{berlin.id}").click()
    inline = page.get_by_test_id("memory-history")
    expect(inline).to_be_visible()
    expect(inline.get_by_test_id("history-summary")).to_have_text(
        f"It replaced no earlier memory; a newer memory replaced it {when(berlin.superseded_at)}."
    )
    expect_chain(inline, [("self", berlin), ("later", lisbon), ("later", porto)])
    page.get_by_test_id("memory-modal-cancel").click()
    page.get_by_test_id("add-memory-button").click()  # a new memory has no history
    expect(inline).to_be_hidden()
    expect(history_items(inline)).to_have_count(0)
    page.get_by_test_id("memory-modal-cancel").click()

    # a memory that replaced it was deleted since: said, not an error
    assert engine.delete(porto.id)
    page.get_by_test_id(f"history-memory-{lisbon.id}").click()
    items = history_items(dialog)
    expect(items).to_have_count(3)
    expect(items.nth(2)).to_have_attribute("data-relation", "later")
    expect(items.nth(2)).to_contain_text(f"Memory {porto.id}: deleted or erased since.")


def test_a_retracted_memory_says_nothing_replaced_it(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    (dog,) = moves(engine, "retractkey", "", ["Rexville"])
    engine.reconcile([Reconcile("retractkey", None, retract_ids=(dog.id,))])
    retracted = engine.get(dog.id)
    assert retracted is not None
    assert retracted.superseded_at
    assert not retracted.superseded_by
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("retractkey")
    expect(page.get_by_test_id("memories-empty")).to_be_visible()
    page.get_by_test_id("memory-history-filter").check()
    badge = page.get_by_test_id(f"memory-row-{dog.id}").get_by_test_id("memory-replaced-badge")
    expect(badge).to_have_text("retracted")
    page.get_by_test_id(f"edit-memory-{dog.id}").click()
    inline = page.get_by_test_id("memory-history")
    expect(inline.get_by_test_id("history-summary")).to_have_text(
        "It replaced no earlier memory; it was retracted "
        f"{when(retracted.superseded_at)}, with nothing in its place."
    )


def test_the_edit_dialog_shows_the_end_user(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    anns, _ = engine.create(NewMemory("userkey", "Ann is vegetarian", key="diet", user_id="ann"))
    add(engine, "userkey", "The team writes Python", key="lang")
    open_tab(page, base_url, "memories")
    page.get_by_test_id("memory-owner-filter").select_option("userkey")
    expect(rows(page)).to_have_count(2)
    user = page.get_by_test_id("memory-modal-user")
    note = page.get_by_test_id("memory-modal-user-note")

    # an end user's memory: shown, read-only (PUT does not move a memory), and kept on save
    page.get_by_test_id(f"edit-memory-{anns.id}").click()
    expect(user).to_have_value("ann")
    expect(user).to_be_disabled()
    expect(note).to_be_visible()
    expect(note).to_contain_text("Read-only")
    page.get_by_test_id("memory-modal-content").fill("Ann is vegan")
    page.get_by_test_id("memory-modal-save").click()
    expect(page.get_by_test_id(f"memory-row-{anns.id}")).to_contain_text("Ann is vegan")
    saved = engine.get(anns.id)
    assert saved is not None
    assert (saved.user_id, saved.content) == ("ann", "Ann is vegan")

    # a shared memory: no end user, said so
    page.get_by_test_id(f"edit-memory-{row_id(page, 'lang')}").click()
    expect(user).to_have_value("")
    expect(user).to_have_attribute("placeholder", "shared (no end user)")
    expect(user).to_be_disabled()
    page.get_by_test_id("memory-modal-cancel").click()

    # a new memory: the end user is chosen (the filter's, by default) and stored
    page.get_by_test_id("memory-user-filter").fill("carol")
    expect(rows(page)).to_have_count(0)
    page.get_by_test_id("add-memory-button").click()
    expect(user).to_be_enabled()
    expect(user).to_have_value("carol")
    expect(note).to_be_hidden()
    page.get_by_test_id("memory-modal-content").fill("Carol drinks green tea")
    page.get_by_test_id("memory-modal-save").click()
    expect(page.get_by_test_id("memory-modal")).to_be_hidden()
    expect(rows(page)).to_have_count(1)
    expect(rows(page).get_by_test_id("memory-user-cell")).to_have_text("carol")
    carols = engine.list_memories(owner="userkey", user_id="carol").data
    assert [m.content for m in carols] == ["Carol drinks green tea"]


def test_the_cache_card_counts_lookups_by_id_and_says_so(
    page: Page, base_url: str, engine: MemoryEngine
) -> None:
    """The card counts the by-id read cache (chat requests never use it): no rate at
    all before a lookup, not "0.0% (0 hits, 0 misses)"."""
    memory = add(engine, "cachekey", "The office is in Leeds", key="office")
    engine.cache.clear()  # no lookups by id since "the server started"
    open_tab(page, base_url, "memories")
    card = page.get_by_test_id("stat-cache-card")
    expect(card).to_contain_text("Lookups by id")
    expect(page.get_by_test_id("stat-hit-rate")).to_have_text("none yet")
    expect(page.get_by_test_id("stat-hit-detail")).to_contain_text(
        "No memory looked up by id since the server started"
    )
    expect(card).not_to_contain_text("%")
    expect(card).to_have_attribute("title", re.compile(r"one memory by its id.*Chat requests"))
    page.get_by_test_id("memory-owner-filter").select_option("cachekey")
    expect(page.get_by_test_id("stat-tokens")).to_have_text("6")  # (22 characters + 3) // 4
    expect(page.get_by_text("Tokens stored")).to_be_visible()

    for _ in range(2):  # a miss, then a hit
        api(base_url, "GET", f"/api/memory/{memory.id}")
    assert {k: engine.cache.stats()[k] for k in ("hits", "misses")} == {"hits": 1, "misses": 1}
    open_tab(page, base_url, "memories")
    expect(page.get_by_test_id("stat-hit-rate")).to_have_text("50.0%")
    expect(page.get_by_test_id("stat-hit-detail")).to_have_text(
        "1 of 2 lookups by id came from the cache, since the server started."
    )
    expect(card).to_have_attribute("data-state", "counted")
