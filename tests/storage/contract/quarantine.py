"""The contract of messages held for review (``HeldReads``, ``HeldWrites``)."""

from __future__ import annotations

from memoryd.storage.base import NewHeld, Store
from memoryd.storage.contract.quarantine import HeldReads, HeldWrites
from tests.storage.contract.support import NOW, Contract


class QuarantineContract(Contract):
    covers = (HeldReads, HeldWrites)

    def test_messages_held_for_review(self, store: Store) -> None:
        """Held messages listed newest first per key and end user, taken
        back one by one (what it was returned once), dropped per subject."""

        def held(owner: str, user: str, text: str) -> NewHeld:
            return NewHeld(owner, user, "s", text, "user", "override", NOW, "r-1")

        ids = [
            store.write(lambda w, h=h: w.hold(h))
            for h in (held("a", "ann", "one"), held("a", "bob", "two"), held("b", "ann", "3"))
        ]
        r = store.read()
        assert [h.text for h in r.held(None, None, 10)] == ["3", "two", "one"]
        assert [h.text for h in r.held("a", None, 10)] == ["two", "one"]
        assert [h.text for h in r.held("a", "ann", 10)] == ["one"]
        assert r.held(None, None, 1)[0].id == ids[2]
        one = r.held_one(ids[0])
        assert one is not None
        assert (one.api_key_id, one.user_id, one.session_id) == ("a", "ann", "s")
        assert (one.source, one.reason, one.said_at, one.request_id) == (
            "user",
            "override",
            NOW,
            "r-1",
        )
        assert store.write(lambda w: w.unhold(ids[0])) == one
        assert store.write(lambda w: w.unhold(ids[0])) is None
        assert r.held_one(ids[0]) is None
        assert store.write(lambda w: w.drop_held("a", None)) == 1
        assert store.write(lambda w: w.drop_held("b", "bob")) == 0
        assert store.write(lambda w: w.drop_held("b", "ann")) == 1
        assert r.held(None, None, 10) == []
