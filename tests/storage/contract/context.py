"""The contract of context-aware indexing: which memories a session stored next to
each other (``ContextReads``)."""

from __future__ import annotations

from memoryd.storage.base import Store
from memoryd.storage.contract.context import ContextReads
from tests.storage.contract.support import DAY, NOW, Contract, add


class ContextContract(Contract):
    covers = (ContextReads,)

    def test_neighbours(self, store: Store) -> None:
        # Written in this order; neighbours are the same owner's same-session memories
        # written just before and just after (write order, not creation time).
        a1 = add(store, "a", "first", session_id="s1", created_at=NOW)
        b1 = add(store, "a", "other session", session_id="s2")
        x1 = add(store, "b", "other owner", session_id="s1")
        a2 = add(store, "a", "second", session_id="s1", created_at=NOW - 5 * DAY)
        a3 = add(store, "a", "third", session_id="s1")
        r = store.read()
        assert r.neighbours([a1.id, a2.id, a3.id, b1.id, x1.id, "missing"]) == {
            a1.id: (a2.id,),
            a2.id: (a1.id, a3.id),
            a3.id: (a2.id,),
            b1.id: (),
            x1.id: (),
        }
        assert r.neighbours([a2.id]) == {a2.id: (a1.id, a3.id)}
        assert r.neighbours([]) == {}
        # A deleted memory is skipped: the next one over becomes the neighbour.
        store.write(lambda w: w.delete(a2.id))
        assert r.neighbours([a1.id]) == {a1.id: (a3.id,)}
