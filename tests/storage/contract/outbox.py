"""The contract of the external vector tier's outbox: pending rows, their generations,
tombstones (``OutboxReads``, ``OutboxWrites``)."""

from __future__ import annotations

from memoryd.models import MemoryPatch, MemoryType, parse_iso
from memoryd.storage.base import Clearing, Store
from memoryd.storage.contract.outbox import OutboxReads, OutboxWrites
from tests.storage.contract.support import DAY, HOUR, NOW, Contract, add, clear_flags, ids


class OutboxContract(Contract):
    covers = (OutboxReads, OutboxWrites)

    def test_outbox_is_created_on_demand(self, store: Store) -> None:
        r = store.read()
        assert r.outbox_exists() is False
        assert r.outbox_ready() is False
        store.write(lambda w: w.create_outbox())
        assert r.outbox_exists() is True
        assert r.outbox_ready() is True
        store.write(lambda w: w.create_outbox())  # idempotent
        assert r.outbox_ready() is True
        assert r.outbox_pending() == 0
        assert r.outbox_pushable() == 0
        assert r.outbox_rows(-1, 10) == []
        assert r.outbox_tombstones(10) == []

    def test_outbox_rows(self, store: Store) -> None:
        store.write(lambda w: w.create_outbox())
        r = store.read()
        m1 = add(store, "a", "first", session_id="s1", created_at=NOW - DAY)
        m2 = add(store, "b", "second", key="k2", type=MemoryType.EPISODIC, expires_at=NOW + DAY)
        m3 = add(store, "a", "third")
        assert r.outbox_pending() == 3
        assert r.outbox_pushable() == 0  # all still wait for their embedding
        assert r.outbox_rows(-1, 10) == []
        clear_flags(store, m1, m2, m3)
        assert r.outbox_pushable() == 3

        rows = r.outbox_rows(-1, 10)
        assert [row.id for row in rows] == [m1.id, m2.id, m3.id]  # write order
        seqs = [row.seq for row in rows]
        assert seqs == sorted(seqs)
        assert len(set(seqs)) == 3
        row = rows[0]
        assert (row.id, row.owner, row.session_id, row.type, row.key, row.content) == (
            m1.id,
            "a",
            "s1",
            "factual",
            "first",
            "first",
        )
        assert isinstance(row.seq, int)
        assert isinstance(row.gen, int)
        assert parse_iso(row.created_at) == NOW - DAY
        assert row.expires_at is None
        assert row.emb is None  # no vector stored
        assert row.ctx_emb is None  # nor a context vector
        assert row.ctx_text == "first"  # its view: no earlier neighbour
        second = rows[1]
        assert (second.owner, second.type, second.key) == ("b", "episodic", "k2")
        assert second.expires_at is not None
        assert parse_iso(second.expires_at) == NOW + DAY

        # Paging by seq.
        first_page = r.outbox_rows(-1, 2)
        assert [row.id for row in first_page] == [m1.id, m2.id]
        rest = r.outbox_rows(first_page[-1].seq, 2)
        assert [row.id for row in rest] == [m3.id]
        assert r.outbox_rows(rest[-1].seq, 2) == []

        # A memory waiting for its embedding is pending but not pushable.
        store.write(lambda w: w.update(m2.id, MemoryPatch(content="second, edited"), NOW))
        assert r.outbox_pending() == 3
        assert r.outbox_pushable() == 2
        assert [row.id for row in r.outbox_rows(-1, 10)] == [m1.id, m3.id]

    def test_outbox_done_only_when_gen_matches(self, store: Store) -> None:
        store.write(lambda w: w.create_outbox())
        r = store.read()
        m1 = add(store, "a", "one")
        m2 = add(store, "a", "two")
        clear_flags(store, m1, m2)
        rows = r.outbox_rows(-1, 10)
        pushed = [(row.seq, row.gen) for row in rows]
        # m2 changes while it is being pushed: its gen moves.
        store.write(lambda w: w.update(m2.id, MemoryPatch(content="two, edited"), NOW))
        store.write(lambda w: w.outbox_done(pushed))
        assert r.outbox_pending() == 1
        clear_flags(store, m2)
        (row,) = r.outbox_rows(-1, 10)
        assert row.id == m2.id
        assert row.content == "two, edited"
        assert row.gen != pushed[1][1]
        store.write(lambda w: w.outbox_done([(row.seq, row.gen)]))
        assert r.outbox_pending() == 0
        assert r.outbox_rows(-1, 10) == []
        store.write(lambda w: w.outbox_done([]))

        # New vectors stored for a memory queue it again (a neighbour's edit changes its
        # context view, not its row); being flagged alone does not.
        store.write(lambda w: w.mark_all_reindex())
        assert r.outbox_pending() == 0
        clear_flags(store, m1, m2)
        assert r.outbox_pending() == 2
        store.write(lambda w: w.outbox_done([(row.seq, row.gen) for row in r.outbox_rows(-1, 10)]))

        # Fields the vector tier keeps queue a memory again; access counts do not.
        store.write(lambda w: w.bump_access([m1.id], NOW))
        assert r.outbox_pending() == 0
        store.write(lambda w: w.update(m1.id, MemoryPatch(type=MemoryType.SEMANTIC), NOW))
        assert r.outbox_pending() == 1
        assert r.outbox_rows(-1, 10)[0].type == "semantic"

    def test_outbox_tombstones(self, store: Store) -> None:
        store.write(lambda w: w.create_outbox())
        r = store.read()
        m1 = add(store, "a", "one")
        m2 = add(store, "a", "two")
        m3 = add(store, "b", "three", expires_at=NOW - HOUR)
        store.write(lambda w: w.delete(m1.id))
        store.write(lambda w: w.delete_matching(Clearing("a")))
        store.write(lambda w: w.delete_expired(NOW))
        assert r.outbox_pending() == 0  # a deleted memory has nothing left to push
        assert sorted(r.outbox_tombstones(10)) == sorted([m1.id, m2.id, m3.id])
        assert len(r.outbox_tombstones(2)) == 2
        store.write(lambda w: w.outbox_drop_tombstones([m1.id, "missing"]))
        assert sorted(r.outbox_tombstones(10)) == sorted([m2.id, m3.id])
        store.write(lambda w: w.outbox_drop_tombstones([]))
        store.write(lambda w: w.outbox_drop_tombstones([m2.id, m3.id]))
        assert r.outbox_tombstones(10) == []

    def test_outbox_queue_all(self, store: Store) -> None:
        made = [add(store, "a", f"memory {i}") for i in range(3)]
        gone = add(store, "a", "deleted")
        store.write(lambda w: w.create_outbox())
        store.write(lambda w: w.delete(gone.id))
        r = store.read()
        assert r.outbox_tombstones(10) == [gone.id]
        assert store.write(lambda w: w.outbox_queue_all()) == 3
        assert r.outbox_pending() == 3
        assert r.outbox_tombstones(10) == []
        clear_flags(store, *made)
        rows = r.outbox_rows(-1, 10)
        assert sorted(row.id for row in rows) == sorted(ids(made))
        # Queued again while still queued: the gen moves, so an older push stays queued.
        assert store.write(lambda w: w.outbox_queue_all()) == 3
        store.write(lambda w: w.outbox_done([(row.seq, row.gen) for row in rows]))
        assert r.outbox_pending() == 3
