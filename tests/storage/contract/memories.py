"""The contract of memory rows: upserts, point reads, retrieval reads, listings and
writes in place (``MemoryReads``, ``MemoryWrites``)."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.models import MemoryPatch, MemoryType, Reconcile
from memoryd.storage.base import Clearing, Filter, Flagged, ListQuery, Page, Reader, Store, Writer
from memoryd.storage.contract.memories import MemoryReads, MemoryWrites
from tests.storage.contract.support import (
    DAY,
    HOUR,
    NOW,
    Contract,
    add,
    clear_flags,
    flt,
    get,
    get_in,
    ids,
    new,
)


def _page(r: Reader, **kw: Any) -> Page:
    """One owner's first page of ten, with ``kw`` changing any ``ListQuery`` field."""
    return r.list_page(ListQuery(**{"owner": "a", "limit": 10, **kw}))


class MemoryContract(Contract):
    covers = (MemoryReads, MemoryWrites)

    def test_upsert_creates_then_updates_in_place(self, store: Store) -> None:
        first = add(
            store,
            "a",
            "likes tea",
            key="drink",
            session_id="s1",
            metadata={"source": "chat", "slot": "drink"},
        )
        assert first.api_key_id == "a"
        assert first.content == "likes tea"
        assert first.key == "drink"
        assert first.session_id == "s1"
        assert first.user_id == ""
        assert first.type is MemoryType.FACTUAL
        assert first.created_at == NOW
        assert first.updated_at == NOW
        assert first.metadata == {"source": "chat", "slot": "drink"}
        assert first.superseded_at is None
        assert first.access_count == 0
        assert first.last_accessed_at is None

        later = NOW + HOUR
        changed = new(
            "a",
            "likes coffee",
            session_id="s2",
            type=MemoryType.EPISODIC,
            metadata={"mood": "awake"},
            expires_at=NOW + DAY,
        )
        upserted = store.write(lambda w: w.upsert(changed, "drink", later))
        assert upserted.created is False
        second = upserted.memory
        assert second.id == first.id
        assert second.content == "likes coffee"
        assert second.session_id == "s2"
        assert second.type is MemoryType.EPISODIC
        assert second.expires_at == NOW + DAY
        assert second.created_at == NOW  # the original age stays
        assert second.updated_at == later
        # Metadata of a restatement is merged into what was stored.
        assert second.metadata == {"source": "chat", "slot": "drink", "mood": "awake"}
        assert store.read().count() == 1
        assert get(store, first.id) == second

    def test_upsert_keys_are_per_owner_and_end_user(self, store: Store) -> None:
        shared = add(store, "a", "lives in Paris", key="home")
        mine = add(store, "a", "lives in Rome", key="home", user_id="u1")
        other = add(store, "b", "lives in Oslo", key="home")
        assert len({shared.id, mine.id, other.id}) == 3
        r = store.read()
        assert r.count() == 3
        assert get_in(r, mine.id).user_id == "u1"
        by_key = r.get_by_key("a", "home")
        assert by_key is not None
        assert by_key.id == shared.id
        by_key_u1 = r.get_by_key("a", "home", "u1")
        assert by_key_u1 is not None
        assert by_key_u1.id == mine.id
        by_key_b = r.get_by_key("b", "home")
        assert by_key_b is not None
        assert by_key_b.id == other.id
        assert r.get_by_key("a", "home", "u2") is None
        assert r.get_by_key("a", "nope") is None
        assert r.get_by_key("c", "home") is None

        # Restating the end user's fact updates their row, not the shared one.
        again = new("a", "lives in Milan", user_id="u1")
        updated = store.write(lambda w: w.upsert(again, "home", NOW))
        assert not updated.created
        assert updated.memory.id == mine.id
        assert get(store, shared.id).content == "lives in Paris"

    def test_upsert_honours_requested_id_and_created_at(self, store: Store) -> None:
        old = NOW - 30 * DAY
        first = add(store, "a", "imported", memory_id="fixed-id", created_at=old)
        assert first.id == "fixed-id"
        assert first.created_at == old
        assert first.updated_at == old
        # A requested id already taken by another memory gets a fresh one instead.
        second = add(store, "a", "another", memory_id="fixed-id")
        assert second.id != "fixed-id"
        assert get(store, "fixed-id").content == "imported"
        # created_at is honoured only for new rows.
        restated = new("a", "imported again", created_at=NOW - 99 * DAY)
        again = store.write(lambda w: w.upsert(restated, "imported", NOW))
        assert not again.created
        assert again.memory.created_at == old
        assert again.memory.updated_at == NOW

    def test_get_and_get_many(self, store: Store) -> None:
        a1 = add(store, "a", "one")
        a2 = add(store, "a", "two")
        b1 = add(store, "b", "three")
        r = store.read()
        assert r.get(a1.id) == a1
        assert r.get("missing") is None
        assert r.get_many([a1.id, b1.id, "missing"]) == {a1.id: a1, b1.id: b1}
        assert r.get_many([]) == {}
        assert set(r.get_many([a2.id, a2.id])) == {a2.id}
        # More ids than any one SQL statement may bind at once.
        many = [f"missing-{i}" for i in range(1200)] + [a2.id]
        assert r.get_many(many) == {a2.id: a2}

    def test_existing_ids(self, store: Store) -> None:
        a1 = add(store, "a", "alive")
        gone = add(store, "a", "expired", expires_at=NOW - HOUR)
        b1 = add(store, "b", "other owner")
        r = store.read()
        everything = [a1.id, gone.id, b1.id, "missing"]
        assert r.existing_ids(everything) == {a1.id, gone.id, b1.id}
        assert r.existing_ids(everything, flt("a")) == {a1.id}
        assert r.existing_ids(everything, flt("a", "b")) == {a1.id, b1.id}
        assert r.existing_ids(everything, Filter(owners=None, now=NOW)) == {a1.id, b1.id}
        assert r.existing_ids(everything, flt()) == set()  # no owners: nothing
        assert r.existing_ids([]) == set()
        assert r.existing_ids([], flt("a")) == set()

    def test_count_owners_and_tokens(self, store: Store) -> None:
        r = store.read()
        assert r.count() == 0
        assert r.owners() == []
        assert r.tokens_used() == 0
        add(store, "zed", "x")  # 1 char: 1 token
        add(store, "alpha", "abcd")  # 4: 1
        add(store, "alpha", "abcde")  # 5: 2
        add(store, "mid", "a" * 9, user_id="u1")  # 9: 3
        add(store, "alpha", "h" * 400)  # 400: 100
        assert r.count() == 5
        assert r.owners() == ["alpha", "mid", "zed"]
        assert r.tokens_used() == 1 + 1 + 2 + 3 + 100
        assert r.tokens_used("alpha") == 103
        assert r.tokens_used("mid") == 3
        assert r.tokens_used("zed") == 1
        assert r.tokens_used("nobody") == 0

    def test_recent_newest_first_per_owner(self, store: Store) -> None:
        middle = add(store, "a", "middle", created_at=NOW - 2 * DAY)
        newest = add(store, "a", "newest", created_at=NOW - DAY)
        oldest = add(store, "a", "oldest", created_at=NOW - 3 * DAY)
        other = add(store, "b", "other owner", created_at=NOW)
        r = store.read()
        assert ids(r.recent(flt("a"), 10)) == [newest.id, middle.id, oldest.id]
        assert ids(r.recent(flt("a"), 2)) == [newest.id, middle.id]
        assert ids(r.recent(flt("a", "b"), 10)) == [other.id, newest.id, middle.id, oldest.id]
        assert ids(r.recent(Filter(owners=None, now=NOW), 1)) == [other.id]
        assert r.recent(flt(), 10) == []
        assert r.recent(flt("nobody"), 10) == []

    def test_recent_filters(self, store: Store) -> None:
        s1 = add(store, "a", "in s1", session_id="s1", created_at=NOW - 2 * DAY)
        s2 = add(store, "a", "in s2", session_id="s2", created_at=NOW - DAY)
        episode = add(store, "a", "an episode", type=MemoryType.EPISODIC, created_at=NOW)
        r = store.read()
        assert ids(r.recent(flt("a", session_id="s1"), 10)) == [s1.id]
        assert ids(r.recent(flt("a", session_id="s2"), 10)) == [s2.id]
        assert r.recent(flt("a", session_id="s3"), 10) == []
        assert ids(r.recent(flt("a", type=MemoryType.EPISODIC), 10)) == [episode.id]
        assert ids(r.recent(flt("a", type=MemoryType.FACTUAL), 10)) == [s2.id, s1.id]
        assert r.recent(flt("a", type=MemoryType.PROCEDURAL), 10) == []
        # created_after is inclusive.
        assert ids(r.recent(flt("a", created_after=NOW - DAY), 10)) == [episode.id, s2.id]

    def test_recent_expiry(self, store: Store) -> None:
        forever = add(store, "a", "forever", created_at=NOW - 3 * DAY)
        later = add(store, "a", "expires later", expires_at=NOW + HOUR, created_at=NOW - DAY)
        now_ = add(store, "a", "expires now", expires_at=NOW, created_at=NOW - DAY)
        past = add(store, "a", "expired", expires_at=NOW - HOUR, created_at=NOW - DAY)
        r = store.read()
        assert set(ids(r.recent(flt("a"), 10))) == {forever.id, later.id}
        # The same rows seen from an earlier moment: none had expired yet.
        earlier = set(ids(r.recent(flt("a", now=NOW - 2 * HOUR), 10)))
        assert earlier == {forever.id, later.id, now_.id, past.id}
        assert set(ids(r.recent(flt("a", now=NOW + 2 * HOUR), 10))) == {forever.id}

    def test_recent_end_users(self, store: Store) -> None:
        shared = add(store, "a", "shared", created_at=NOW - 2 * DAY)
        u1 = add(store, "a", "of u1", user_id="u1", created_at=NOW - DAY)
        u2 = add(store, "a", "of u2", user_id="u2", created_at=NOW)
        r = store.read()
        assert ids(r.recent(flt("a", user_id="u1"), 10)) == [u1.id, shared.id]
        assert ids(r.recent(flt("a", user_id="u2"), 10)) == [u2.id, shared.id]
        assert ids(r.recent(flt("a", user_id=""), 10)) == [shared.id]
        assert ids(r.recent(flt("a", user_id="u3"), 10)) == [shared.id]
        assert ids(r.recent(flt("a"), 10)) == [u2.id, u1.id, shared.id]  # admin: all

    def test_recent_current_only(self, store: Store) -> None:
        old = add(store, "a", "lives in Paris", metadata={"slot": "home"}, created_at=NOW - DAY)
        item = new("a", "lives in Rome", metadata={"slot": "home"})
        done = store.write(
            lambda w: w.reconcile(Reconcile("a", item, supersedes=("home",)), item, "rome", NOW)
        )
        assert done.memory is not None
        r = store.read()
        assert ids(r.recent(flt("a"), 10)) == [done.memory.id]
        assert ids(r.recent(flt("a", current_only=False), 10)) == [done.memory.id, old.id]

    def test_keyword_search(self, store: Store) -> None:
        if not store.capabilities.fts5:
            pytest.skip("this store has no keyword index")
        both = add(store, "a", "my favourite editor is vim, vim forever", key="tools")
        editor = add(store, "a", "the editor at work is a web editor thing", key="work")
        by_key = add(store, "a", "somewhere near the sea", key="profile:hometown")
        add(store, "a", "nothing relevant here", key="noise")
        r = store.read()

        hits = r.keyword_search("vim editor", flt("a"), 10)
        assert [h.memory.id for h in hits] == [both.id, editor.id]  # more terms matched first
        assert all(h.relevance > 0 for h in hits)
        assert hits[0].relevance >= hits[1].relevance
        assert hits[0].memory == get(store, both.id)

        assert [h.memory.id for h in r.keyword_search("hometown", flt("a"), 10)] == [by_key.id]
        assert [h.memory.id for h in r.keyword_search("VIM", flt("a"), 10)] == [both.id]
        assert len(r.keyword_search("vim editor", flt("a"), 1)) == 1
        # Nothing to search for.
        assert r.keyword_search("", flt("a"), 10) == []
        assert r.keyword_search("what is the", flt("a"), 10) == []
        assert r.keyword_search("zebra", flt("a"), 10) == []
        # Query syntax of any engine is just text.
        assert [h.memory.id for h in r.keyword_search('vim" OR (*', flt("a"), 10)] == [both.id]

    def test_known_subjects(self, store: Store) -> None:
        """Subjects come from metadata, lowercased and deduplicated, within the filter;
        edits and upserts keep the column in step."""
        about = add(store, "a", "Anna lives in Lisbon", metadata={"subjects": ["Anna", "user"]})
        add(store, "a", "Bob likes tea", metadata={"subjects": ["Bob"]})
        add(store, "a", "no subject here")
        add(store, "b", "Carol is a nurse", metadata={"subjects": ["Carol"]})
        r = store.read()
        assert r.known_subjects(flt("a")) == ["anna", "bob", "user"]
        assert r.known_subjects(flt("b")) == ["carol"]
        store.write(lambda w: w.update(about.id, MemoryPatch(metadata={"subjects": ["Zoe"]}), NOW))
        assert r.known_subjects(flt("a")) == ["bob", "zoe"]
        assert get(store, about.id).subjects == ("Zoe",)
        assert r.known_subjects(flt("nobody")) == []

    def test_keyword_search_right_after_many_writes(self, store: Store) -> None:
        """Term statistics a store caches between searches must not make a word seen
        in more documents than the cached total a failure (the load run's 500)."""
        if not store.capabilities.fts5:
            pytest.skip("this store has no keyword index")
        add(store, "a", "a lone memory about tea")
        r = store.read()
        assert len(r.keyword_search("tea", flt("a"), 10)) == 1
        made = {add(store, "a", f"coffee note number {i}").id for i in range(30)}
        hits = r.keyword_search("coffee", flt("a"), 50)
        assert {h.memory.id for h in hits} == made

    def test_keyword_search_respects_the_filter(self, store: Store) -> None:
        if not store.capabilities.fts5:
            pytest.skip("this store has no keyword index")
        mine = add(store, "a", "the garden has roses", session_id="s1")
        theirs = add(store, "b", "the garden has tulips")
        u1 = add(store, "a", "garden of u1", user_id="u1", session_id="s2")
        u2 = add(store, "a", "garden of u2", user_id="u2")
        expired = add(store, "a", "garden long gone", expires_at=NOW - HOUR)
        episode = add(store, "a", "a garden visit", type=MemoryType.EPISODIC)
        old = add(store, "a", "garden of old", created_at=NOW - 10 * DAY)

        def found(f: Filter) -> set[str]:
            return {h.memory.id for h in store.read().keyword_search("garden", f, 20)}

        assert found(flt("a")) == {mine.id, u1.id, u2.id, episode.id, old.id}
        assert found(flt("b")) == {theirs.id}
        assert found(flt()) == set()
        assert found(flt("a", user_id="u1")) == {mine.id, u1.id, episode.id, old.id}
        assert found(flt("a", session_id="s1")) == {mine.id}
        assert found(flt("a", type=MemoryType.EPISODIC)) == {episode.id}
        assert found(flt("a", created_after=NOW - DAY)) == {mine.id, u1.id, u2.id, episode.id}
        assert expired.id in found(flt("a", now=NOW - 2 * HOUR))

        # Superseded memories are history: only current_only=False sees them.
        store.write(
            lambda w: w.reconcile(Reconcile("a", None, retract_ids=(mine.id,)), None, "", NOW)
        )
        assert mine.id not in found(flt("a"))
        assert mine.id in found(flt("a", current_only=False))

    def test_keyword_search_follows_edits(self, store: Store) -> None:
        if not store.capabilities.fts5:
            pytest.skip("this store has no keyword index")
        m = add(store, "a", "the cat sleeps", key="pet")
        store.write(lambda w: w.update(m.id, MemoryPatch(content="the dog barks"), NOW))
        r = store.read()
        assert r.keyword_search("cat", flt("a"), 10) == []
        assert [h.memory.id for h in r.keyword_search("dog", flt("a"), 10)] == [m.id]
        store.write(lambda w: w.set_content(m.id, "the parrot talks", NOW))
        assert r.keyword_search("dog", flt("a"), 10) == []
        assert [h.memory.id for h in r.keyword_search("parrot", flt("a"), 10)] == [m.id]
        store.write(lambda w: w.delete(m.id))
        assert r.keyword_search("parrot", flt("a"), 10) == []

    def test_hidden_counts(self, store: Store) -> None:
        cut = NOW - 10 * DAY
        add(store, "a", "fresh", created_at=NOW - DAY)
        add(store, "a", "expired", expires_at=NOW - HOUR, created_at=NOW - DAY)
        add(store, "a", "old", created_at=NOW - 20 * DAY)
        add(store, "a", "old and expired", expires_at=NOW - HOUR, created_at=NOW - 20 * DAY)
        add(store, "a", "old of u2", user_id="u2", created_at=NOW - 20 * DAY)
        add(store, "b", "expired elsewhere", expires_at=NOW - HOUR)
        gone = add(store, "a", "old superseded", created_at=NOW - 30 * DAY)
        store.write(lambda w: w.restore_history([(gone.id, NOW, None)]))
        r = store.read()
        assert r.hidden_counts(flt("a", created_after=cut)) == {"expired": 2, "retention": 2}
        assert r.hidden_counts(flt("a", created_after=cut, user_id="u1")) == {
            "expired": 2,
            "retention": 1,
        }
        assert r.hidden_counts(flt("a")) == {"expired": 2, "retention": 0}
        assert r.hidden_counts(flt("b", created_after=cut)) == {"expired": 1, "retention": 0}
        assert r.hidden_counts(flt()) == {"expired": 0, "retention": 0}
        assert r.hidden_counts(flt("a", now=NOW - 2 * HOUR)) == {"expired": 0, "retention": 0}

    def test_list_page_basics(self, store: Store) -> None:
        made = [
            add(store, "a", f"note {i}", created_at=NOW - (10 - i) * HOUR, session_id=f"s{i % 2}")
            for i in range(5)
        ]
        add(store, "b", "note of b")
        newest_first = ids(made[::-1])
        r = store.read()

        def page(**kw: Any) -> Page:
            return _page(r, **kw)

        full = page()
        assert isinstance(full, Page)
        assert ids(full.memories) == newest_first
        assert full.total == 5
        assert full.by_type == {"factual": 5}
        second = page(limit=2, offset=2)
        assert ids(second.memories) == newest_first[2:4]
        assert second.total == 5
        assert ids(page(limit=2, offset=4).memories) == newest_first[4:]
        assert page(limit=2, offset=10).memories == []
        assert page(limit=2, offset=10).total == 5
        assert ids(page(session_id="s0").memories) == [made[4].id, made[2].id, made[0].id]
        assert page(session_id="s0").total == 3
        everyone = page(owner=None)
        assert everyone.total == 6
        nobody = page(owner="nobody")
        assert (nobody.memories, nobody.total, nobody.by_type) == ([], 0, {})

    def test_list_page_types_and_query(self, store: Store) -> None:
        add(store, "a", "Learned to bake BREAD", key="k1", created_at=NOW - 3 * HOUR)
        ep = add(
            store, "a", "baked bread today", key="k2", type=MemoryType.EPISODIC, created_at=NOW
        )
        add(store, "a", "how to knead", key="bread_steps", type=MemoryType.PROCEDURAL)
        pct = add(store, "a", "100% sure", key="k4")
        add(store, "a", "100 percent", key="k5")
        under = add(store, "a", "keyed a_b", key="a_b")
        add(store, "a", "keyed axb", key="axb")
        r = store.read()

        def page(**kw: Any) -> Page:
            return _page(r, **kw)

        # q: a case-insensitive substring of content or key.
        bread = page(q="bread")
        assert bread.total == 3
        assert bread.by_type == {"factual": 1, "episodic": 1, "procedural": 1}
        # by_type ignores the type filter; total does not.
        only_ep = page(q="BREAD", type=MemoryType.EPISODIC)
        assert ids(only_ep.memories) == [ep.id]
        assert only_ep.total == 1
        assert only_ep.by_type == {"factual": 1, "episodic": 1, "procedural": 1}
        assert page().by_type == {"factual": 5, "episodic": 1, "procedural": 1}
        # LIKE wildcards in q are literal characters.
        assert ids(page(q="0%").memories) == [pct.id]
        assert ids(page(q="a_b").memories) == [under.id]
        assert page(q="%").total == 1
        assert page(q="_").total == 2  # a_b and bread_steps
        assert page(q="").total == 7

    def test_list_page_query_folds_non_ascii_case(self, store: Store) -> None:
        m = add(store, "a", "Émile lives in Zürich", key="Straße")
        add(store, "a", "emile without an accent")
        r = store.read()
        for q in ("Émile", "émile", "ÉMILE", "zürich", "ZÜRICH", "straße", "STRAßE"):
            page = r.list_page(ListQuery(owner="a", q=q, limit=10))
            assert ids(page.memories) == [m.id], q

    def test_lock_memories_then_write_them(self, store: Store) -> None:
        """A multi-row writer locks its rows first, in id order (PostgreSQL),
        and writes them after in the same transaction; unknown ids are ignored."""
        a = add(store, "a", "likes tea")
        b = add(store, "a", "likes coffee")

        def bump(w: Writer) -> int:
            w.lock_memories([b.id, a.id, "missing", b.id])
            return w.bump_access([a.id, b.id], NOW)

        assert store.write(bump) == 2
        assert store.write(lambda w: w.lock_memories([])) is None
        got = store.read().get(a.id)
        assert got is not None
        assert got.access_count == 1

    def test_list_page_superseded_and_end_users(self, store: Store) -> None:
        old = add(store, "a", "lives in Paris", key="home", created_at=NOW - DAY)
        store.write(lambda w: w.restore_history([(old.id, NOW, None)]))
        shared = add(store, "a", "likes tea", key="drink", created_at=NOW - HOUR)
        u1 = add(store, "a", "likes coffee", key="drink", user_id="u1", created_at=NOW)
        r = store.read()

        def page(**kw: Any) -> Page:
            return _page(r, **kw)

        assert ids(page().memories) == [u1.id, shared.id]
        assert page().total == 2
        with_history = page(include_superseded=True)
        assert ids(with_history.memories) == [u1.id, shared.id, old.id]
        assert with_history.total == 3
        assert with_history.by_type == {"factual": 3}
        # user_id lists one end user's own memories ("" = the key's shared ones).
        assert ids(page(user_id="u1").memories) == [u1.id]
        assert ids(page(user_id="").memories) == [shared.id]
        assert ids(page(user_id="", include_superseded=True).memories) == [shared.id, old.id]
        assert page(user_id="u2").total == 0

    def test_for_owner(self, store: Store) -> None:
        old = add(store, "a", "old", session_id="s1", created_at=NOW - 2 * DAY)
        mid = add(store, "a", "mid", session_id="s2", created_at=NOW - DAY)
        newest = add(store, "a", "new", session_id="s1", user_id="u1", created_at=NOW)
        add(store, "b", "other", session_id="s1")
        store.write(lambda w: w.restore_history([(old.id, NOW, newest.id)]))
        r = store.read()
        assert ids(r.for_owner("a")) == [newest.id, mid.id, old.id]
        assert ids(r.for_owner("a", "s1")) == [newest.id, old.id]
        assert ids(r.for_owner("a", session_id="s2")) == [mid.id]
        assert r.for_owner("a", "s9") == []
        assert r.for_owner("nobody") == []
        assert r.for_owner("a")[2].superseded_by == newest.id

    def test_owner_rows_keyset_paging(self, store: Store) -> None:
        written: list[str] = []
        for i in range(7):
            written.append(add(store, "a", f"row {i}", created_at=NOW - (7 - i) * DAY).id)
            add(store, "b", f"noise {i}")
        store.write(lambda w: w.restore_history([(written[3], NOW, None)]))  # still exported
        r = store.read()
        seen: list[str] = []
        cursors: list[int] = []
        after = 0
        pages = 0
        while True:
            page = r.owner_rows("a", after=after, batch=3)
            if not page:
                break
            pages += 1
            assert len(page) <= 3
            for row in page:
                assert isinstance(row.cursor, int)
                assert row.memory.api_key_id == "a"
                cursors.append(row.cursor)
                seen.append(row.memory.id)
            after = page[-1].cursor
        assert pages == 3
        assert seen == written  # every row once, in write order (oldest first)
        assert cursors == sorted(set(cursors))
        assert r.owner_rows("nobody", after=0, batch=3) == []

    def test_older_than(self, store: Store) -> None:
        oldest = add(store, "a", "oldest", created_at=NOW - 30 * DAY)
        older = add(store, "a", "older", created_at=NOW - 20 * DAY)
        at_cut = add(store, "a", "at the cut", created_at=NOW - 10 * DAY)
        add(store, "a", "fresh", created_at=NOW)
        add(store, "b", "other owner", created_at=NOW - 40 * DAY)
        history = add(store, "a", "superseded", created_at=NOW - 25 * DAY)
        store.write(lambda w: w.restore_history([(history.id, NOW, None)]))
        r = store.read()
        assert ids(r.older_than("a", NOW - 10 * DAY)) == [oldest.id, older.id]
        assert ids(r.older_than("a", NOW - 10 * DAY + HOUR)) == [
            oldest.id,
            older.id,
            at_cut.id,
        ]
        assert r.older_than("a", NOW - 31 * DAY) == []
        assert r.older_than("nobody", NOW) == []

    def test_decay_candidates(self, store: Store) -> None:
        a_new = add(store, "a", "a new", created_at=NOW)
        b_old = add(store, "b", "b old", created_at=NOW - 3 * DAY)
        a_old = add(store, "a", "a old", created_at=NOW - 2 * DAY)
        a_mid = add(store, "a", "a mid", created_at=NOW - DAY)
        r = store.read()
        assert ids(r.decay_candidates("a", 10)) == [a_old.id, a_mid.id, a_new.id]
        assert ids(r.decay_candidates("a", 2)) == [a_old.id, a_mid.id]
        assert ids(r.decay_candidates(None, 10)) == [b_old.id, a_old.id, a_mid.id, a_new.id]
        assert ids(r.decay_candidates(None, 0)) == [b_old.id]  # at least one
        assert ids(r.decay_candidates("a", -5)) == [a_old.id]
        assert r.decay_candidates("nobody", 10) == []

    def test_update(self, store: Store) -> None:
        m = add(store, "a", "draft", key="k", metadata={"slot": "x", "keep": 1})
        later = NOW + HOUR

        patched = store.write(
            lambda w: w.update(
                m.id,
                MemoryPatch(
                    type=MemoryType.PROCEDURAL,
                    key="k2",
                    content="final",
                    metadata={"slot": "home"},
                    expires_at=NOW + DAY,
                ),
                later,
            )
        )
        assert patched is not None
        assert patched.id == m.id
        assert patched.type is MemoryType.PROCEDURAL
        assert patched.key == "k2"
        assert patched.content == "final"
        assert patched.metadata == {"slot": "home"}  # replaced, not merged
        assert patched.slot == "home"
        assert patched.expires_at == NOW + DAY
        assert patched.created_at == NOW
        assert patched.updated_at == later
        assert get(store, m.id) == patched
        r = store.read()
        assert r.get_by_key("a", "k") is None
        by_key = r.get_by_key("a", "k2")
        assert by_key is not None
        assert by_key.id == m.id

        # Fields left out of a patch stay; clear_expiry removes the expiry.
        same = store.write(lambda w: w.update(m.id, MemoryPatch(), later))
        assert same is not None
        assert same.expires_at == NOW + DAY
        assert same.content == "final"
        cleared = store.write(lambda w: w.update(m.id, MemoryPatch(clear_expiry=True), later))
        assert cleared is not None
        assert cleared.expires_at is None
        assert cleared.metadata == {"slot": "home"}

        # The slot set through metadata is what reconcile supersedes.
        item = new("a", "moved", metadata={"slot": "home"})
        done = store.write(
            lambda w: w.reconcile(Reconcile("a", item, supersedes=("home",)), item, "moved", NOW)
        )
        assert done.superseded == [m.id]

        assert store.write(lambda w: w.update("missing", MemoryPatch(content="x"), NOW)) is None
        assert store.read().get("missing") is None

    def test_set_content(self, store: Store) -> None:
        m = add(store, "a", "before", key="k")
        clear_flags(store, m)
        later = NOW + HOUR
        store.write(lambda w: w.set_content(m.id, "after", later))
        got = get(store, m.id)
        assert got.content == "after"
        assert got.key == "k"
        assert got.updated_at == later
        assert got.created_at == NOW
        assert store.read().flagged([m.id]) == [Flagged(m.id, "a", "after", "after")]
        store.write(lambda w: w.set_content("missing", "x", NOW))  # no row, no error
        assert store.read().count() == 1

    def test_delete(self, store: Store) -> None:
        m1 = add(store, "a", "one")
        m2 = add(store, "a", "two")
        seq1 = store.write(lambda w: w.delete(m1.id))
        assert isinstance(seq1, int)
        assert store.read().get(m1.id) is None
        assert store.read().count() == 1
        assert store.write(lambda w: w.delete(m1.id)) is None
        assert store.write(lambda w: w.delete("missing")) is None
        seq2 = store.write(lambda w: w.delete(m2.id))
        assert isinstance(seq2, int)
        assert seq2 != seq1
        assert store.read().count() == 0
        # A new memory never reuses a deleted one's sequence number.
        m3 = add(store, "a", "three")
        seq3 = store.write(lambda w: w.delete(m3.id))
        assert isinstance(seq3, int)
        assert seq3 not in (seq1, seq2)

    def test_delete_matching(self, store: Store) -> None:
        cut = NOW - 10 * DAY
        old = add(store, "a", "old shared", created_at=NOW - 20 * DAY)
        ep = add(store, "a", "shared episode", type=MemoryType.EPISODIC)
        u1 = add(store, "a", "of u1", user_id="u1")
        u1_ep = add(store, "a", "u1 episode", user_id="u1", type=MemoryType.EPISODIC)
        history = add(store, "a", "superseded shared")
        store.write(lambda w: w.restore_history([(history.id, NOW, None)]))
        b_same = add(store, "b", "old shared", created_at=NOW - 20 * DAY)
        b_ep = add(store, "b", "episode of b", type=MemoryType.EPISODIC)

        def clear(c: Clearing) -> set[str]:
            gone = store.write(lambda w: w.delete_matching(c))
            assert all(isinstance(d.seq, int) for d in gone)
            assert len({d.seq for d in gone}) == len(gone)
            return {d.id for d in gone}

        assert clear(Clearing("a", older_than=cut)) == {old.id}
        assert clear(Clearing("a", user_id="u1", type=MemoryType.EPISODIC)) == {u1_ep.id}
        assert clear(Clearing("a", type=MemoryType.EPISODIC)) == {ep.id}
        assert clear(Clearing("a", user_id="")) == {history.id}  # superseded ones too
        assert clear(Clearing("a", user_id="u2")) == set()
        assert clear(Clearing("a")) == {u1.id}
        assert clear(Clearing("a")) == set()
        assert store.read().owners() == ["b"]
        assert {m.id for m in store.read().for_owner("b")} == {b_same.id, b_ep.id}

    def test_delete_expired(self, store: Store) -> None:
        past = add(store, "a", "expired", expires_at=NOW - HOUR)
        exact = add(store, "b", "expires now", expires_at=NOW)
        future = add(store, "a", "expires later", expires_at=NOW + HOUR)
        forever = add(store, "a", "no expiry")
        gone = store.write(lambda w: w.delete_expired(NOW))
        assert {d.id for d in gone} == {past.id, exact.id}
        assert all(isinstance(d.seq, int) for d in gone)
        assert set(store.read().get_many([past.id, exact.id, future.id, forever.id])) == {
            future.id,
            forever.id,
        }
        assert store.write(lambda w: w.delete_expired(NOW)) == []
        later = store.write(lambda w: w.delete_expired(NOW + 2 * HOUR))
        assert [d.id for d in later] == [future.id]

    def test_bump_access(self, store: Store) -> None:
        a = add(store, "a", "one")
        b = add(store, "a", "two")
        c = add(store, "a", "three")
        later = NOW + HOUR
        assert store.write(lambda w: w.bump_access([a.id, a.id, b.id, "missing", ""], later)) == 2
        got_a, got_b, got_c = get(store, a.id), get(store, b.id), get(store, c.id)
        assert (got_a.access_count, got_a.last_accessed_at) == (1, later)
        assert (got_b.access_count, got_b.last_accessed_at) == (1, later)
        assert (got_c.access_count, got_c.last_accessed_at) == (0, None)
        assert got_a.updated_at == NOW  # an access is not an edit
        even_later = later + HOUR
        assert store.write(lambda w: w.bump_access(iter([a.id]), even_later)) == 1
        assert get(store, a.id).access_count == 2
        assert get(store, a.id).last_accessed_at == even_later
        assert store.write(lambda w: w.bump_access([], NOW)) == 0
        # Coalesced bumps count several accesses in one UPDATE.
        assert store.write(lambda w: w.bump_access([a.id, c.id], even_later, times=5)) == 2
        assert get(store, a.id).access_count == 7
        assert get(store, c.id).access_count == 5
        assert store.write(lambda w: w.bump_access([a.id], even_later, times=0)) == 0

    def test_optimize_keyword_index(self, store: Store) -> None:
        made = [add(store, "a", f"apple number {i}") for i in range(30)]
        keep = add(store, "a", "banana apple")

        def delete_all(w: Writer) -> None:
            for m in made:
                assert w.delete(m.id) is not None

        store.write(delete_all)
        store.write(lambda w: w.optimize_keyword_index())
        if not store.capabilities.fts5:
            return
        r = store.read()
        assert [h.memory.id for h in r.keyword_search("apple", flt("a"), 50)] == [keep.id]
        assert [h.memory.id for h in r.keyword_search("banana", flt("a"), 50)] == [keep.id]
