"""KeyService on a real SQLite file: secrets, hashing, auth cache, revoke, validation."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.engine import MemoryEngine
from memoryd.engine.keys import AUTH_CACHE_TTL_S, KeyService
from memoryd.errors import ConflictError, ValidationError
from memoryd.storage.sqlite.database import Database
from memoryd.storage.sqlite.store import SqliteStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def other_process(engine: MemoryEngine) -> Iterator[SqliteStore]:
    """A second connection set on the same file, as another process would have."""
    store = SqliteStore(Database(engine.store.db.path, load_vec=False))
    try:
        yield store
    finally:
        store.close()


def test_create_returns_a_secret_once_and_stores_only_its_hash(engine: MemoryEngine) -> None:
    key, secret = engine.keys.create("laptop")
    assert secret.startswith("mk_")
    assert len(secret) >= 40
    assert key.prefix == secret[:8]
    assert key.id.startswith("key_")
    assert len(key.id) == 16
    assert key.name == "laptop"
    assert key.revoked_at is None
    assert key.memory_enabled is None
    rows = (
        engine.store.db.read().execute("SELECT * FROM api_keys WHERE id = ?", (key.id,)).fetchall()
    )
    assert len(rows) == 1
    row = [str(v) for v in rows[0]]
    assert hashlib.sha256(secret.encode()).hexdigest() in row
    assert all(secret not in value for value in row)
    public = key.to_dict()
    assert set(public) == {"id", "name", "prefix", "createdAt", "revokedAt", "memoryEnabled"}
    assert secret not in str(public)
    assert public["createdAt"].endswith("Z")


def test_secrets_and_ids_are_unique(engine: MemoryEngine) -> None:
    made = [engine.keys.create(f"k{i}") for i in range(20)]
    assert len({k.id for k, _ in made}) == 20
    assert len({s for _, s in made}) == 20


def test_authenticate(engine: MemoryEngine) -> None:
    key, secret = engine.keys.create("ci", key_id="alice")
    found = engine.keys.authenticate(secret)
    assert found is not None
    assert found.id == "alice" == key.id
    assert engine.keys.authenticate(secret) == found  # cached, same answer
    other = "mk_" + ("A" * 43)
    for bad in [
        other,
        secret + "x",
        secret[:-1],
        "",
        "   ",
        "garbage",
        secret.upper(),
        key.prefix,
        hashlib.sha256(secret.encode()).hexdigest(),
        "mk_",
        "x" * 10_000,
    ]:
        assert engine.keys.authenticate(bad) is None, bad
    assert engine.keys.authenticate(None) is None  # type: ignore[arg-type]


def test_revoke_takes_effect_immediately_and_keeps_the_row(engine: MemoryEngine) -> None:
    key, secret = engine.keys.create("phone")
    assert engine.keys.authenticate(secret) is not None  # now in the auth cache
    assert engine.keys.revoke(key.id) is True
    assert engine.keys.authenticate(secret) is None
    listed = {k.id: k for k in engine.keys.list()}
    assert listed[key.id].revoked_at is not None
    assert listed[key.id].to_dict()["revokedAt"].endswith("Z")
    assert key.id not in {k.id for k in engine.keys.list(include_revoked=False)}
    assert engine.keys.revoke(key.id) is False
    assert engine.keys.revoke("nope") is False
    assert engine.keys.revoke("") is False
    assert engine.keys.set_memory_enabled(key.id, True) is not None  # still editable
    assert engine.keys.authenticate(secret) is None  # and still revoked


def test_revoke_keeps_the_keys_memories(engine: MemoryEngine) -> None:
    from tests.conftest import add

    key, _ = engine.keys.create("owner", key_id="bob")
    add(engine, key.id, "bob likes tea")
    engine.keys.revoke(key.id)
    assert engine.list_memories(owner="bob").total == 1


@pytest.mark.parametrize("reserved", ["global", "GLOBAL", "Global"])
def test_the_shared_pool_id_is_reserved(engine: MemoryEngine, reserved: str) -> None:
    with pytest.raises(ValidationError) as info:
        engine.keys.create("pool", key_id=reserved)
    assert info.value.details[0]["field"] == "id"
    assert engine.keys.list() == []


@pytest.mark.parametrize(
    "bad_id",
    ["", " ", "a b", "x" * 65, "a/b", "ü", "__memoryd_health__", "-rf", ".", "a\n", "a;b"],
)
def test_bad_ids_are_rejected(engine: MemoryEngine, bad_id: str) -> None:
    with pytest.raises(ValidationError):
        engine.keys.create("n", key_id=bad_id)


@pytest.mark.parametrize("good_id", ["a", "alice", "Team.A-1_x", "x" * 64, "7"])
def test_good_ids_are_accepted(engine: MemoryEngine, good_id: str) -> None:
    key, _ = engine.keys.create("n", key_id=good_id)
    assert key.id == good_id
    assert engine.keys.get(good_id) == key


@pytest.mark.parametrize("bad_name", ["", "   ", "x" * 201, "a\x00b", None, 5])
def test_bad_names_are_rejected(engine: MemoryEngine, bad_name: object) -> None:
    with pytest.raises(ValidationError) as info:
        engine.keys.create(bad_name)  # type: ignore[arg-type]
    assert info.value.details[0]["field"] == "name"


def test_bad_memory_flag_is_rejected(engine: MemoryEngine) -> None:
    with pytest.raises(ValidationError):
        engine.keys.create("n", memory_enabled="yes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        engine.keys.set_memory_enabled("whatever", 1)  # type: ignore[arg-type]


def test_duplicate_id_is_a_conflict(engine: MemoryEngine) -> None:
    first, secret = engine.keys.create("one", key_id="dup")
    with pytest.raises(ConflictError):
        engine.keys.create("two", key_id="dup")
    assert [k.name for k in engine.keys.list()] == ["one"]
    assert engine.keys.authenticate(secret) == first


def test_set_memory_enabled_round_trip(engine: MemoryEngine) -> None:
    key, secret = engine.keys.create("n", memory_enabled=False)
    assert key.memory_enabled is False
    assert engine.keys.get(key.id) == key
    assert engine.keys.authenticate(secret) == key  # cached with memory off
    for value in (True, None, False, True):
        updated = engine.keys.set_memory_enabled(key.id, value)
        assert updated is not None
        assert updated.memory_enabled is value
        fetched = engine.keys.get(key.id)
        assert fetched is not None
        assert fetched.memory_enabled is value
        authed = engine.keys.authenticate(secret)  # the cache was invalidated
        assert authed is not None
        assert authed.memory_enabled is value
    assert engine.keys.set_memory_enabled("unknown", True) is None


def test_list_is_newest_first(engine: MemoryEngine) -> None:
    names = [f"key{i}" for i in range(5)]
    for name in names:
        engine.keys.create(name)
    assert [k.name for k in engine.keys.list()] == names[::-1]
    assert engine.keys.get("missing") is None
    assert engine.keys.get("") is None


def test_another_process_sees_a_revoke_within_the_cache_ttl(
    engine: MemoryEngine, other_process: SqliteStore
) -> None:
    clock = Clock()
    server = KeyService(other_process, clock=clock)  # e.g. the running server
    key, secret = engine.keys.create("shared")  # e.g. the CLI
    assert server.authenticate(secret) is not None  # cached by the server
    assert engine.keys.revoke(key.id)  # the CLI revokes: the server's cache does not know
    clock.now += AUTH_CACHE_TTL_S / 2
    assert server.authenticate(secret) is not None  # still cached (bounded staleness)
    clock.now += AUTH_CACHE_TTL_S / 2
    assert server.authenticate(secret) is None  # the TTL passed: re-read, revoked
    clock.now += 100
    assert server.authenticate(secret) is None
    assert AUTH_CACHE_TTL_S <= 5


def test_another_process_sees_a_new_key_at_once(
    engine: MemoryEngine, other_process: SqliteStore
) -> None:
    server = KeyService(other_process, clock=Clock())
    assert server.authenticate("mk_" + "B" * 43) is None  # misses are not cached
    key, secret = engine.keys.create("new")
    found = server.authenticate(secret)
    assert found is not None
    assert found.id == key.id


def test_zero_ttl_disables_the_cache(engine: MemoryEngine, other_process: SqliteStore) -> None:
    server = KeyService(other_process, cache_ttl_s=0)
    key, secret = engine.keys.create("k")
    assert server.authenticate(secret) is not None
    engine.keys.revoke(key.id)
    assert server.authenticate(secret) is None


def test_cli_keys_create_list_enable_memory_revoke(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memoryd.cli import main

    runner = CliRunner()
    base = ["--data-dir", str(tmp_path / "cli")]

    def run(*args: str) -> Any:
        return runner.invoke(main, [*base, *args])

    made = run("keys", "create", "laptop", "--id", "alice", "--memory", "off", "--json")
    assert made.exit_code == 0, made.output
    created = json.loads(made.output)
    assert created["id"] == "alice"
    assert created["key"].startswith("mk_")
    assert created["memoryEnabled"] is False
    listed = run("keys", "list", "--json")
    assert created["key"] not in listed.output
    assert [k["id"] for k in json.loads(listed.output)["data"]] == ["alice"]
    assert "alice" in run("keys", "list").output
    enabled = run("keys", "enable-memory", "alice", "--json")
    assert json.loads(enabled.output)["key"]["memoryEnabled"] is True
    assert (
        json.loads(run("keys", "enable-memory", "alice", "default", "--json").output)["key"][
            "memoryEnabled"
        ]
        is None
    )
    assert run("keys", "revoke", "alice").exit_code == 0
    again = run("keys", "revoke", "alice")
    assert again.exit_code == 1
    assert "Traceback" not in again.output
    reserved = run("keys", "create", "pool", "--id", "global")
    assert reserved.exit_code == 1
    assert "reserved" in reserved.output
    assert run("keys", "enable-memory", "nobody").exit_code == 1
