"""The contract of the reindex queue: memories waiting for their embedding, with both
views the indexer embeds (``FlagReads``, ``FlagWrites``)."""

from __future__ import annotations

from memoryd.models import MemoryPatch
from memoryd.storage.base import Flagged, Store
from memoryd.storage.contract.flags import FlagReads, FlagWrites
from tests.storage.contract.support import DAY, NOW, Contract, add, clear_flags, new


class FlagContract(Contract):
    covers = (FlagReads, FlagWrites)

    def test_new_memories_wait_for_embedding(self, store: Store) -> None:
        r = store.read()
        assert r.reindex_pending() == 0
        m1 = add(store, "a", "one", created_at=NOW - 2 * DAY)
        m2 = add(store, "a", "two", created_at=NOW - DAY)
        m3 = add(store, "b", "three", created_at=NOW - 3 * DAY)
        assert r.reindex_pending() == 3
        one = Flagged(m1.id, "a", "one", "one")
        two = Flagged(m2.id, "a", "two", "two")
        three = Flagged(m3.id, "b", "three", "three")
        assert r.flagged([m1.id, "missing"]) == [one]
        by_id = sorted(r.flagged([m1.id, m2.id, m3.id]), key=lambda f: f.id)
        assert by_id == sorted([one, two, three], key=lambda f: f.id)
        assert r.flagged([]) == []
        assert r.oldest_flagged(2) == [three, one]
        assert [f.id for f in r.oldest_flagged(10)] == [m3.id, m1.id, m2.id]
        assert r.newest_flagged_of("a", 10) == [two, one]
        assert r.newest_flagged_of("a", 1) == [two]
        assert r.newest_flagged_of("nobody", 10) == []

    def test_a_memory_of_a_session_is_embedded_with_its_earlier_neighbours(
        self, store: Store
    ) -> None:
        """A flagged row's ``view`` is the dense context view."""
        turns = [add(store, "a", f"turn {i}", session_id="s") for i in range(4)]
        other = add(store, "a", "elsewhere", session_id="t")
        views = {f.id: f.view for f in store.read().oldest_flagged(10)}
        assert views[turns[0].id] == "turn 0"
        assert views[turns[1].id] == "turn 0\nturn 1"
        assert views[turns[3].id] == "turn 1\nturn 2\nturn 3"
        assert views[other.id] == "elsewhere"

    def test_clear_flag_if_unchanged(self, store: Store) -> None:
        m = add(store, "a", "original")
        other = add(store, "a", "other")
        r = store.read()
        # The memory was edited after its text was embedded: it stays queued.
        assert not store.write(lambda w: w.clear_flag_if_unchanged(m.id, "stale text"))
        assert r.flagged([m.id]) == [Flagged(m.id, "a", "original", "original")]
        assert store.write(lambda w: w.clear_flag_if_unchanged(m.id, "original"))
        assert r.flagged([m.id]) == []
        assert r.reindex_pending() == 1
        assert [f.id for f in r.oldest_flagged(10)] == [other.id]
        assert not store.write(lambda w: w.clear_flag_if_unchanged("missing", "x"))

    def test_edits_queue_embedding_again(self, store: Store) -> None:
        m = add(store, "a", "text", key="k")
        clear_flags(store, m)
        r = store.read()

        def queued() -> bool:
            return bool(r.flagged([m.id]))

        store.write(lambda w: w.update(m.id, MemoryPatch(metadata={"x": 1}), NOW))
        assert not queued()  # metadata is not embedded
        store.write(lambda w: w.update(m.id, MemoryPatch(content="text", key="k"), NOW))
        assert not queued()  # nothing really changed
        store.write(lambda w: w.update(m.id, MemoryPatch(content="new text"), NOW))
        assert queued()
        clear_flags(store, m)
        store.write(lambda w: w.update(m.id, MemoryPatch(key="k2"), NOW))
        assert queued()
        clear_flags(store, m)
        store.write(lambda w: w.upsert(new("a", "new text"), "k2", NOW))
        assert not queued()  # restated unchanged
        store.write(lambda w: w.upsert(new("a", "newer text"), "k2", NOW))
        assert queued()

    def test_mark_all_reindex(self, store: Store) -> None:
        made = [add(store, "a", f"memory {i}") for i in range(4)]
        clear_flags(store, *made[:3])
        r = store.read()
        assert r.reindex_pending() == 1
        assert store.write(lambda w: w.mark_all_reindex()) == 3
        assert r.reindex_pending() == 4
        assert store.write(lambda w: w.mark_all_reindex()) == 0
