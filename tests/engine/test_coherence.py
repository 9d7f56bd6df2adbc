"""Caches that follow another server's writes (``engine.coherence``, ``Store.watch``).

Two engines on one real PostgreSQL database, as two servers behind a load balancer.
Server B's caches get an hour's TTL here, so only the change feed (LISTEN/NOTIFY) can
explain B seeing A's revoke, settings, providers and edits: the test would fail on
the TTL fallback alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memoryd.engine.service import MemoryEngine
from memoryd.models import MemoryPatch, NewMemory, Origin, utcnow
from tests.conftest import make_engine

pytest.importorskip("psycopg")

#: Generous: a loaded machine must not fail this (the latency is measured in bench/).
WAIT_S = 30.0
HOUR = 3600.0


def eventually(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    pytest.fail(f"never happened within {WAIT_S} s: {what}")


@pytest.fixture
def pair(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[MemoryEngine, MemoryEngine]]:
    from memoryd.config import upstreams
    from tests.embedders import no_source

    env = {"MEMORYD_DATABASE_URL": pg_url}
    a = make_engine(tmp_path / "a", env, resolver=no_source)
    b = make_engine(tmp_path / "b", env, resolver=no_source)
    b.keys._auth_cache.ttl_s = HOUR
    b.settings.ttl_s = HOUR
    b.cache.ttl_s = HOUR
    monkeypatch.setattr(upstreams, "CACHE_TTL_S", HOUR)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_a_revoke_on_one_server_is_in_force_on_the_other(
    pair: tuple[MemoryEngine, MemoryEngine],
) -> None:
    a, b = pair
    key, secret = a.keys.create("team")
    assert b.keys.authenticate(secret) is not None  # now cached on B for an hour
    assert b.keys.authenticate(secret) is not None
    assert a.keys.revoke(key.id)
    eventually(lambda: b.keys.authenticate(secret) is None, "B refuses the revoked key")


def test_settings_and_providers_follow(pair: tuple[MemoryEngine, MemoryEngine]) -> None:
    from memoryd.config.upstreams import Provider, save_providers

    a, b = pair
    assert b.settings.get().max_tokens == 2000
    assert "lab" not in b.providers()
    a.settings.update({"maxTokens": 321})
    save_providers(a.store, [Provider("lab", "http://127.0.0.1:9/v1", None)])
    eventually(lambda: b.settings.get().max_tokens == 321, "B uses A's setting")
    eventually(lambda: "lab" in b.providers(), "B routes to A's provider")


def test_an_edit_or_delete_on_one_server_is_not_served_stale_by_the_other(
    pair: tuple[MemoryEngine, MemoryEngine],
) -> None:
    a, b = pair
    memory, _ = a.create(NewMemory("team", "User lives in Lisbon"))
    other, _ = a.create(NewMemory("team", "User likes tea"))
    assert b.get(memory.id) is not None  # cached on B
    assert b.get(other.id) is not None
    a.update(memory.id, MemoryPatch(content="User lives in Porto"))
    a.delete(other.id)
    eventually(lambda: _content(b, memory.id) == "User lives in Porto", "B serves the edit")
    eventually(lambda: b.get(other.id) is None, "B forgets the deleted memory")


def test_an_erasure_on_one_server_is_in_force_on_the_other(
    pair: tuple[MemoryEngine, MemoryEngine],
) -> None:
    """Server A erases an end user; server B neither serves the
    erased memories from its cache nor stores a job it held for them, and lists the
    receipt."""
    a, b = pair
    ann, _ = a.create(NewMemory("team", "User works at Zanzibarco", user_id="ann"))
    bob, _ = a.create(NewMemory("team", "User works at Initech", user_id="bob"))
    assert b.get(ann.id) is not None  # cached on B
    held_since = utcnow()
    receipt = a.forget("team", user_id="ann")
    assert receipt.counts["memories"] == 1
    eventually(lambda: b.get(ann.id) is None, "B forgets the erased memory")
    assert b.get(bob.id) is not None
    late = b.extraction.extract_and_store(
        "team", "", [("I work at Globex", "user")], "ann", Origin(held_since)
    )
    assert late == []
    assert b.list_memories(owner="team", user_id="ann").total == 0
    assert [e.id for e in b.erasures("team")] == [receipt.id]


def test_a_lost_feed_drops_every_cache_and_comes_back(
    pair: tuple[MemoryEngine, MemoryEngine],
) -> None:
    """Notifications sent while B's listening connection is down are lost for good: B
    drops all its caches when it notices, and again once it listens anew; then the
    feed works as before."""
    import psycopg

    from memoryd.storage.postgres.store import PostgresStore

    a, b = pair
    assert isinstance(b.store, PostgresStore)
    feed = b.store.changes
    eventually(lambda: feed.backend_pid is not None, "B listens")
    memory, _ = a.create(NewMemory("team", "User lives in Lisbon"))
    assert _content(b, memory.id) == "User lives in Lisbon"
    first, first_secret = a.keys.create("first")
    assert b.keys.authenticate(first_secret) is not None
    with psycopg.connect(a.store.db.url, autocommit=True) as admin:  # type: ignore[attr-defined]
        admin.execute("SELECT pg_terminate_backend(%s)", (feed.backend_pid,))
    eventually(lambda: feed.status()["reconnects"] >= 1, "B listens again")
    assert b.cache.lookup(memory.id) == (False, None)  # dropped, not trusted for an hour
    status = b.store.storage_status()["changeFeed"]
    assert status["listening"] is True
    a.keys.revoke(first.id)
    eventually(lambda: b.keys.authenticate(first_secret) is None, "the feed works again")


def _content(engine: MemoryEngine, memory_id: str) -> str | None:
    memory = engine.get(memory_id)
    return None if memory is None else memory.content
