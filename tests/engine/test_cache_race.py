"""A read racing an invalidation never caches a stale row.

The race is made deterministic: the server's one row read is paused right after it
returns (the real read, on the real database), an update commits and invalidates
meanwhile, then the read is let go. Without the generation check it stores the old
row and every GET serves it for the cache's 60 s."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memoryd.app import create_app
from memoryd.cache import TTLCache
from memoryd.engine import MemoryEngine
from memoryd.storage.sql import memories as memory_sql
from memoryd.testing import serve_asgi
from tests.conftest import ADMIN, add

AUTH = {"authorization": f"Bearer {ADMIN}"}


class PausedRead:
    """Wraps the storage read so that its first call, once armed, stops after reading."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.armed = False
        self.read_done = threading.Event()
        self.proceed = threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        row = self.real(*args, **kwargs)
        if self.armed:
            self.armed = False
            self.read_done.set()
            assert self.proceed.wait(60)
        return row


@pytest.fixture
def paused(monkeypatch: pytest.MonkeyPatch) -> Iterator[PausedRead]:
    pause = PausedRead(memory_sql.get)
    monkeypatch.setattr(memory_sql, "get", pause)
    yield pause
    pause.proceed.set()


def test_a_get_racing_an_update_does_not_cache_the_old_row(
    engine: MemoryEngine, paused: PausedRead
) -> None:
    memory = add(engine, "owner-a", "User drinks coffee")
    with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
        results: list[httpx.Response] = []
        paused.armed = True
        reader = threading.Thread(
            target=lambda: results.append(
                httpx.get(f"{url}/api/memory/{memory.id}", headers=AUTH, timeout=60)
            )
        )
        reader.start()
        assert paused.read_done.wait(60)  # the reader holds the old row, not yet cached
        updated = httpx.put(
            f"{url}/api/memory/{memory.id}",
            json={"content": "User drinks tea"},
            headers=AUTH,
            timeout=60,
        )
        assert updated.status_code == 200
        paused.proceed.set()
        reader.join(60)
        assert results[0].json()["memory"]["content"] == "User drinks coffee"  # it read before
        again = httpx.get(f"{url}/api/memory/{memory.id}", headers=AUTH, timeout=60)
        assert again.json()["memory"]["content"] == "User drinks tea"


def test_fill_is_refused_after_an_invalidation_and_accepted_otherwise() -> None:
    cache: TTLCache[str, str] = TTLCache(10, 60.0)
    token = cache.generation()
    cache.invalidate("a")
    assert not cache.fill("a", "stale", token)
    assert cache.lookup("a") == (False, None)
    token = cache.generation()
    assert cache.fill("a", "fresh", token)
    assert cache.get("a") == "fresh"
    cache.invalidate("b")  # another key's invalidation does not block this one
    assert cache.fill("a", "fresher", token)


def test_a_forgotten_invalidation_still_refuses_an_older_fill() -> None:
    cache: TTLCache[int, str] = TTLCache(10, 60.0)
    token = cache.generation()
    for key in range(5000):  # more than the cache remembers per key
        cache.invalidate(key)
    assert not cache.fill(0, "stale", token)
    assert cache.fill(0, "fresh", cache.generation())
