"""The contract of the store itself: transactions, sessions from any thread, status,
the change feed, closing (``Store``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from memoryd.errors import UnavailableError
from memoryd.models import MemoryPatch
from memoryd.storage.base import Capabilities, Change, Store, Upserted, Writer
from tests.storage.contract.support import (
    HOUR,
    NOW,
    Boom,
    Contract,
    add,
    flt,
    get,
    get_in,
    ids,
    new,
)


class SessionContract(Contract):
    covers = (Store,)

    def test_write_returns_the_result(self, store: Store) -> None:
        assert store.write(lambda w: 42) == 42
        assert store.write(lambda w: None) is None
        stored = store.write(lambda w: w.upsert(new("a", "x"), "x", NOW))
        assert stored.created
        assert get(store, stored.memory.id) == stored.memory

    def test_a_failed_write_leaves_nothing(self, store: Store) -> None:
        before = add(store, "a", "before")

        def fail(w: Writer) -> None:
            w.upsert(new("a", "doomed"), "doomed", NOW)
            w.write_settings({"doomed": True}, NOW)
            w.update(before.id, MemoryPatch(content="changed"), NOW)
            w.delete(before.id)
            raise Boom("stop")

        with pytest.raises(Boom, match="stop"):
            store.write(fail)
        r = store.read()
        assert r.count() == 1
        assert r.get_by_key("a", "doomed") is None
        assert r.setting("doomed") is None
        assert get(store, before.id).content == "before"
        # The store carries on.
        add(store, "a", "after")
        assert store.read().count() == 2

    def test_a_nested_write_joins_the_transaction(self, store: Store) -> None:
        def outer(w: Writer) -> str:
            inner = store.write(lambda w2: w2.upsert(new("a", "inner"), "inner", NOW)).memory
            # The outer session sees what the nested write did: one transaction.
            assert get_in(w, inner.id).content == "inner"
            w.upsert(new("a", "outer"), "outer", NOW)
            return inner.id

        inner_id = store.write(outer)
        assert get(store, inner_id).content == "inner"
        assert store.read().count() == 2

        def outer_fails(w: Writer) -> None:
            store.write(lambda w2: w2.upsert(new("a", "nested"), "nested", NOW))
            w.upsert(new("a", "outer2"), "outer2", NOW)
            raise Boom("after the nested write")

        with pytest.raises(Boom):
            store.write(outer_fails)
        r = store.read()
        assert r.get_by_key("a", "nested") is None
        assert r.get_by_key("a", "outer2") is None
        assert r.count() == 2

    def test_a_failed_nested_write_is_undone_even_when_caught(self, store: Store) -> None:
        def outer(w: Writer) -> None:
            def inner(w2: Writer) -> None:
                w2.upsert(new("a", "half"), "half", NOW)
                raise Boom("inside the nested write")

            with pytest.raises(Boom):
                store.write(inner)
            w.upsert(new("a", "kept"), "kept", NOW)

        store.write(outer)
        r = store.read()
        assert r.get_by_key("a", "half") is None
        assert r.get_by_key("a", "kept") is not None

    def test_a_writer_sees_its_own_uncommitted_writes(self, store: Store) -> None:
        def run(w: Writer) -> tuple[str, bool]:
            memory = w.upsert(new("a", "fresh", session_id="s"), "fresh", NOW).memory
            assert w.get(memory.id) == memory
            assert w.count() == 1
            assert ids(w.recent(flt("a"), 10)) == [memory.id]
            w.write_settings({"x": 1}, NOW)
            assert w.setting("x") == 1
            # A reader outside the transaction sees only committed state.
            outside = store.read().get(memory.id) is None
            return memory.id, outside

        memory_id, invisible_outside = store.write(run)
        assert invisible_outside
        assert store.read().get(memory_id) is not None
        assert store.read().setting("x") == 1

    def test_submit_and_flush(self, store: Store) -> None:
        def upsert(i: int) -> Callable[[Writer], Upserted]:
            return lambda w: w.upsert(new("a", f"queued {i}"), f"q{i}", NOW)

        futures = [store.submit(upsert(i)) for i in range(20)]
        store.flush()
        assert all(f.done() for f in futures)
        assert store.read().count() == 20
        seventh = futures[7].result()
        assert seventh.created
        assert seventh.memory.content == "queued 7"
        assert store.submit(lambda w: "value").result() == "value"

    def test_a_failed_submit_fails_only_itself(self, store: Store) -> None:
        def fail(w: Writer) -> None:
            w.upsert(new("a", "doomed"), "doomed", NOW)
            raise Boom("only me")

        first = store.submit(lambda w: w.upsert(new("a", "first"), "first", NOW))
        failed = store.submit(fail)
        last = store.submit(lambda w: w.upsert(new("a", "last"), "last", NOW))
        store.flush()
        assert first.result().created is True
        assert last.result().created is True
        assert isinstance(failed.exception(), Boom)
        r = store.read()
        assert r.count() == 2
        assert r.get_by_key("a", "doomed") is None

    def test_snapshot_is_one_consistent_view(self, store: Store) -> None:
        add(store, "a", "one")
        with store.snapshot() as snap:
            assert snap.count() == 1
            add(store, "a", "two")  # committed by another session meanwhile
            assert snap.count() == 1
            assert len(snap.recent(flt("a"), 10)) == 1
        assert store.read().count() == 2
        with store.snapshot() as snap:
            assert snap.count() == 2
            assert snap.owners() == ["a"]

    def test_reads_from_another_thread(self, store: Store) -> None:
        m = add(store, "a", "shared across threads")
        with ThreadPoolExecutor(max_workers=2) as pool:
            got = pool.submit(lambda: store.read().get(m.id)).result()
            written = pool.submit(lambda: add(store, "a", "from a thread")).result()
        assert got == m
        assert get(store, written.id).content == "from a thread"

    def test_capabilities(self, store: Store) -> None:
        caps = store.capabilities
        assert isinstance(caps, Capabilities)
        assert isinstance(caps.fts5, bool)
        assert caps.fts5_reason
        assert isinstance(caps.vec, bool)
        assert caps.vec_reason
        assert isinstance(caps.sqlite_version, str)
        assert caps.sqlite_version
        assert isinstance(caps.deferred_migrations, tuple)

    def test_healthy_status(self, store: Store) -> None:
        add(store, "a", "a write that succeeded")
        assert store.fault is None
        assert store.probe() is None
        store.ping()
        store.scrub()  # nothing erased yet: nothing to do, and no harm done
        status = store.storage_status()
        assert status["available"] is True
        assert status["fault"] is None
        assert status["since"] is None
        assert isinstance(status["reason"], str)

    def test_watch_reports_committed_changes_on_a_shared_store(self, store: Store) -> None:
        """A shared store announces each committed memory, key and setting change to
        its watchers (every server's caches follow); a rollback and an access-count bump
        announce nothing. A store one server owns never calls back."""
        import queue
        import time

        seen: queue.Queue[Change] = queue.Queue()
        store.watch(seen.put)
        early = add(store, "a", "bumped only")

        def rolled_back(w: Writer) -> None:
            w.upsert(new("a", "rolled back"), "rb", NOW)
            raise Boom("rolled back")

        with pytest.raises(Boom):
            store.write(rolled_back)
        store.write(lambda w: w.bump_access([early.id], NOW + HOUR))
        # Announced after the above, in commit order: once these arrive, anything the
        # rollback or the bump announced would have arrived before them.
        memory = add(store, "a", "kept")
        self._insert_key(store, "k1", "2026-01-01T00:00:00.000Z")
        store.write(lambda w: w.write_settings({"memory.enabled": False}, NOW))
        store.write(lambda w: w.delete(memory.id))
        store.flush()
        expected = [
            Change("memories", early.id),
            Change("memories", memory.id),
            Change("api_keys", "k1"),
            Change("settings", "memory.enabled"),
            Change("memories", memory.id),
        ]
        if not store.capabilities.shared:
            time.sleep(0.2)
            assert seen.empty()
            return
        got: list[Change] = []
        deadline = time.monotonic() + 60  # generous: a loaded machine, never a speed test
        while len(got) < len(expected) and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                got.append(seen.get(timeout=0.5))
        assert got == expected

    def test_close(self, store: Store) -> None:
        add(store, "a", "kept")
        store.close()
        store.close()  # idempotent: the fixture closes it once more
        with pytest.raises(UnavailableError):
            store.ping()
