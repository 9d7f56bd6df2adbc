"""What each key spent on LLM extraction this UTC month, and its cap.

The month's total lives in the settings table (one row per key and month), so a
restart does not reset it and every server of a fleet reads and adds to the same
figure. It is read before each LLM call and added to after it, inside the writer's
transaction; two servers adding at the same instant on PostgreSQL may lose one call's
tokens, so a cap holds to within one extraction per server. A key over its cap is
extracted by the rules alone (the ``cap`` fallback), never refused.
"""

from __future__ import annotations

import logging
from typing import Any

from memoryd.models import utcnow
from memoryd.storage.base import Store, Writer

log = logging.getLogger(__name__)

PREFIX = "extraction.llmMonth."


def this_month() -> str:
    return utcnow().strftime("%Y-%m")


def _row(value: Any, month: str) -> dict[str, int]:
    """The stored row when it is this month's, else a fresh one."""
    if isinstance(value, dict) and value.get("month") == month:
        return {
            name: value[name] if isinstance(value.get(name), int) and value[name] > 0 else 0
            for name in ("tokens", "requests")
        }
    return {"tokens": 0, "requests": 0}


def spent(store: Store, owner: str, month: str | None = None) -> dict[str, Any]:
    """``{"month", "tokens", "requests"}``: what ``owner`` spent in ``month`` (this one)."""
    month = month or this_month()
    return {"month": month, **_row(store.read().setting(PREFIX + owner), month)}


def add(store: Store, owner: str, tokens: int) -> None:
    """Add one LLM call's tokens to ``owner``'s month; queued on the writer, never
    awaited (the extraction worker must not wait on a busy writer)."""
    if not owner:
        return
    month = this_month()

    def change(tx: Writer) -> None:
        row = _row(tx.setting(PREFIX + owner), month)
        row["tokens"] += max(0, tokens)
        row["requests"] += 1
        tx.write_settings({PREFIX + owner: {"month": month, **row}}, utcnow())

    try:
        store.submit(change)
    except Exception as exc:
        log.warning("could not keep key %s's LLM extraction total: %s", owner, exc)


def over_cap(store: Store, owner: str, cap: int) -> bool:
    """Whether ``owner`` spent its monthly ``cap`` (0: no cap)."""
    return cap > 0 and bool(owner) and spent(store, owner)["tokens"] >= cap
