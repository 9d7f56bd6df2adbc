"""The contract of keeping memories current: supersession by ``reconcile``, and the
history and usage an import restores (``HistoryWrites``)."""

from __future__ import annotations

from memoryd.models import Reconcile
from memoryd.storage.base import Store
from memoryd.storage.contract.history import HistoryWrites
from tests.storage.contract.support import DAY, HOUR, NOW, Contract, add, flt, get, ids, new


class HistoryContract(Contract):
    covers = (HistoryWrites,)

    def test_reconcile_supersedes_the_slot_of_the_same_owner_and_end_user(
        self, store: Store
    ) -> None:
        slot = {"slot": "home"}
        shared = add(store, "a", "lives in Paris", key="paris", metadata=slot)
        u1 = add(store, "a", "lives in Rome", key="rome", user_id="u1", metadata=slot)
        other = add(store, "b", "lives in Oslo", key="oslo", metadata=slot)
        unrelated = add(store, "a", "likes tea", key="tea", metadata={"slot": "drink"})
        later = NOW + HOUR
        item = new("a", "lives in Madrid", metadata=slot)
        done = store.write(
            lambda w: w.reconcile(Reconcile("a", item, supersedes=("home",)), item, "madrid", later)
        )
        assert done.created is True
        assert done.memory is not None
        assert done.memory.content == "lives in Madrid"
        assert done.memory.slot == "home"
        assert done.memory.superseded_at is None
        assert done.superseded == [shared.id]
        old = get(store, shared.id)
        assert old.superseded_at == later
        assert old.superseded_by == done.memory.id
        for untouched in (u1, other, unrelated):
            assert get(store, untouched.id).superseded_at is None
        assert get(store, done.memory.id).superseded_at is None

        # The same slot again: only the now-current one is superseded, never itself.
        again = new("a", "lives in Lisbon", metadata=slot)
        redo = store.write(
            lambda w: w.reconcile(Reconcile("a", again, supersedes=("home",)), again, "lisbon", NOW)
        )
        assert redo.memory is not None
        assert redo.superseded == [done.memory.id]
        assert get(store, shared.id).superseded_by == done.memory.id  # history unchanged

        # The end user's own statement retires only their memory of the slot.
        theirs = new("a", "lives in Turin", user_id="u1", metadata=slot)
        mine = store.write(
            lambda w: w.reconcile(
                Reconcile("a", theirs, supersedes=("home",), user_id="u1"), theirs, "turin", NOW
            )
        )
        assert mine.superseded == [u1.id]
        assert get(store, redo.memory.id).superseded_at is None

    def test_reconcile_restating_makes_current_again(self, store: Store) -> None:
        slot = {"slot": "home"}
        paris = add(store, "a", "lives in Paris", key="paris", metadata=slot)
        item = new("a", "lives in Rome", metadata=slot)
        rome = store.write(
            lambda w: w.reconcile(Reconcile("a", item, supersedes=("home",)), item, "rome", NOW)
        )
        assert rome.memory is not None
        assert get(store, paris.id).superseded_at is not None
        # Paris is stated again: the same row comes back, Rome is retired.
        back = new("a", "lives in Paris", metadata=slot)
        again = store.write(
            lambda w: w.reconcile(Reconcile("a", back, supersedes=("home",)), back, "paris", NOW)
        )
        assert again.created is False
        assert again.memory is not None
        assert again.memory.id == paris.id
        assert again.memory.superseded_at is None
        assert again.memory.superseded_by is None
        rome_id = rome.memory.id
        assert again.superseded == [rome_id]
        # A plain upsert also revives a superseded row.
        store.write(lambda w: w.restore_history([(paris.id, NOW, rome_id)]))
        revived = store.write(lambda w: w.upsert(new("a", "Paris!"), "paris", NOW))
        assert not revived.created
        assert revived.memory.superseded_at is None
        assert revived.memory.superseded_by is None

    def test_reconcile_slot_wildcards(self, store: Store) -> None:
        dog = add(store, "a", "dog is Rex", metadata={"slot": "pet:dog:name"})
        cat = add(store, "a", "cat is Tom", metadata={"slot": "pet:cat:name"})
        shop = add(store, "a", "petshop nearby", metadata={"slot": "petshop"})
        bare = add(store, "a", "has pets", metadata={"slot": "pet"})
        literal = add(store, "a", "literal", metadata={"slot": "pet_x:a"})
        lookalike = add(store, "a", "lookalike", metadata={"slot": "petAx:a"})
        item = new("a", "no pets anymore", metadata={"slot": "pet:none"})
        done = store.write(
            lambda w: w.reconcile(Reconcile("a", item, supersedes=("pet:*",)), item, "none", NOW)
        )
        assert sorted(done.superseded) == sorted([dog.id, cat.id])
        for kept in (shop, bare, literal, lookalike):
            assert get(store, kept.id).superseded_at is None
        # "_" in a wildcard prefix is a literal character.
        item2 = new("a", "x gone")
        done2 = store.write(
            lambda w: w.reconcile(Reconcile("a", item2, supersedes=("pet_x:*",)), item2, "x", NOW)
        )
        assert done2.superseded == [literal.id]
        assert get(store, lookalike.id).superseded_at is None

    def test_reconcile_whole_words(self, store: Store) -> None:
        """``~=words`` retires the memories that say the words whole, punctuation read
        as a space: "seat" is not in "Seattle", "five-a-side" is in "five-a-side,"."""
        city = add(store, "a", "User lives in Seattle", metadata={"slot": "home_location"})
        seat = add(store, "a", "User's seat: 14C.", metadata={"slot": "note:seat"})
        game = add(store, "a", "User plays five-a-side, Thursdays", metadata={"slot": "hobbies:x"})
        mine = add(store, "a", "User's (seat) it's O'Brien's", metadata={"slot": "note:y"})
        other = add(store, "b", "User's seat is 2A", metadata={"slot": "note:seat"})
        gone = store.write(
            lambda w: w.reconcile(
                Reconcile("a", None, supersedes=("*~=seat", "hobbies:*~=Five-a-side")),
                None,
                "",
                NOW,
            )
        )
        assert sorted(gone.superseded) == sorted([seat.id, game.id, mine.id])
        assert get(store, city.id).superseded_at is None
        assert get(store, other.id).superseded_at is None  # another owner's

    def test_reconcile_retracts_ids(self, store: Store) -> None:
        mine = add(store, "a", "wrong fact")
        keep = add(store, "a", "right fact")
        u1 = add(store, "a", "u1 fact", user_id="u1")
        theirs = add(store, "b", "other owner fact")
        retract = Reconcile("a", None, retract_ids=(mine.id, u1.id, theirs.id))
        done = store.write(lambda w: w.reconcile(retract, None, "", NOW))
        assert done.memory is None
        assert done.created is False
        assert done.superseded == [mine.id]  # only the owner's shared memory
        gone = get(store, mine.id)
        assert gone.superseded_at == NOW
        assert gone.superseded_by is None
        for kept in (keep, u1, theirs):
            assert get(store, kept.id).superseded_at is None
        assert store.read().count() == 4  # retracted is history, not deleted
        # Retracting again changes nothing.
        assert store.write(lambda w: w.reconcile(retract, None, "", NOW)).superseded == []
        # The end user retracts their own.
        own = Reconcile("a", None, retract_ids=(u1.id,), user_id="u1")
        assert store.write(lambda w: w.reconcile(own, None, "", NOW)).superseded == [u1.id]
        # With a new memory, retracted ids are superseded by it.
        item = new("a", "corrected fact")
        fix = Reconcile("a", item, retract_ids=(keep.id,))
        fixed = store.write(lambda w: w.reconcile(fix, item, "corrected", NOW))
        assert fixed.memory is not None
        assert fixed.superseded == [keep.id]
        assert get(store, keep.id).superseded_by == fixed.memory.id

    def test_restore_history(self, store: Store) -> None:
        old = add(store, "a", "old")
        current = add(store, "a", "current")
        retracted = add(store, "a", "retracted")
        at = NOW - 5 * DAY
        store.write(
            lambda w: w.restore_history([(old.id, at, current.id), (retracted.id, at, None)])
        )
        assert (get(store, old.id).superseded_at, get(store, old.id).superseded_by) == (
            at,
            current.id,
        )
        assert get(store, retracted.id).superseded_at == at
        assert get(store, retracted.id).superseded_by is None
        assert get(store, current.id).superseded_at is None
        assert ids(store.read().recent(flt("a"), 10)) == [current.id]
        store.write(lambda w: w.restore_history([]))  # nothing to do
        assert store.read().count() == 3

    def test_restore_usage(self, store: Store) -> None:
        """An import from another system keeps its update time and access counts; a
        None time is left as it was."""
        m = add(store, "a", "likes tea", created_at=NOW - DAY)
        other = add(store, "a", "likes coffee", created_at=NOW - DAY)
        store.write(lambda w: w.restore_usage([(m.id, NOW - HOUR, 7, NOW - HOUR / 2)]))
        got = store.read().get(m.id)
        assert got is not None
        assert (got.updated_at, got.access_count, got.last_accessed_at) == (
            NOW - HOUR,
            7,
            NOW - HOUR / 2,
        )
        store.write(lambda w: w.restore_usage([(m.id, None, 2, None)]))
        again = store.read().get(m.id)
        assert again is not None
        assert (again.updated_at, again.access_count, again.last_accessed_at) == (
            NOW - HOUR,
            2,
            NOW - HOUR / 2,
        )
        untouched = store.read().get(other.id)
        assert untouched is not None
        assert untouched.access_count == 0
