"""The Store contract (``memoryd.storage.base``) as executable tests, for every backend.

``StoreContract`` holds the tests; a backend's module subclasses it as ``Test<Backend>``
and provides one ``store`` fixture yielding an open, empty store (closed afterwards)::

    class TestSqliteStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path: Path) -> Iterator[Store]: ...

The tests speak only the protocol (``Store``, ``Reader``, ``Writer`` and their value
types): never SQL, never a driver. Times are explicit (``NOW`` and offsets from it,
millisecond-aligned because that is what a store keeps), so nothing sleeps and nothing
depends on the wall clock. By convention a ``Reader`` is ``r`` and a ``Writer`` is
``w``: the last test checks that every protocol member is called somewhere in this
file, so a method added to the protocol without a contract test fails.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Generic, Protocol

import pytest

from memoryd.errors import UnavailableError
from memoryd.models import (
    Erasure,
    Memory,
    MemoryPatch,
    MemoryType,
    NewMemory,
    Reconcile,
    parse_iso,
    utcnow,
)
from memoryd.storage.base import (
    Capabilities,
    Change,
    Clearing,
    Filter,
    Flagged,
    KeyRow,
    Lease,
    ListQuery,
    NewHeld,
    NewJob,
    NewKey,
    Page,
    QueuedJob,
    Reader,
    Store,
    Usage,
    Writer,
)


def _ms(value: datetime) -> datetime:
    """``value`` truncated to milliseconds (the precision a store keeps)."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


NOW = _ms(utcnow())
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def job(
    owner: str,
    session_id: str,
    texts: Sequence[tuple[str, str]],
    now: datetime,
    user_id: str = "",
) -> NewJob:
    return NewJob(owner, session_id, texts, now, user_id)


def _page(r: Reader, **kw: Any) -> Page:
    """One owner's first page of ten, with ``kw`` changing any ``ListQuery`` field."""
    return r.list_page(ListQuery(**{"owner": "a", "limit": 10, **kw}))


class Boom(Exception):
    """Raised inside a write to prove the transaction rolls back."""


def new(
    owner: str,
    content: str,
    *,
    user_id: str = "",
    session_id: str = "",
    type: MemoryType = MemoryType.FACTUAL,
    metadata: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    created_at: datetime | None = None,
    memory_id: str | None = None,
) -> NewMemory:
    return NewMemory(
        api_key_id=owner,
        content=content,
        user_id=user_id,
        session_id=session_id,
        type=type,
        metadata=metadata,
        expires_at=expires_at,
        created_at=created_at,
        id=memory_id,
    )


def add(
    store: Store,
    owner: str,
    content: str,
    *,
    key: str | None = None,
    now: datetime = NOW,
    **fields: Any,
) -> Memory:
    """Store one new memory (its own transaction) and return it."""
    item = new(owner, content, **fields)
    memory, created = store.write(lambda w: w.upsert(item, key or content, now))
    assert created, f"{owner}/{key or content} already existed"
    return memory


def get(store: Store, memory_id: str) -> Memory:
    memory = store.read().get(memory_id)
    assert memory is not None, memory_id
    return memory


def ids(memories: Sequence[Memory]) -> list[str]:
    return [m.id for m in memories]


def flt(*owners: str, **fields: Any) -> Filter:
    """A retrieval filter over ``owners`` at ``NOW`` (unless ``now`` is given)."""
    fields.setdefault("now", NOW)
    return Filter(owners=owners, **fields)


def clear_flags(store: Store, *memories: Memory) -> None:
    """Mark memories as embedded (their reindex flag cleared)."""

    def run(w: Writer) -> None:
        for m in memories:
            assert w.clear_flag_if_unchanged(m.id, get_in(w, m.id).content)

    store.write(run)


def get_in(r: Reader, memory_id: str) -> Memory:
    memory = r.get(memory_id)
    assert memory is not None, memory_id
    return memory


class StoreContract:
    """Every behaviour of the Store contract. Subclasses provide ``store``."""

    @pytest.fixture
    def store(self) -> Iterator[Store]:
        """Overridden by each backend's test class: an open, empty store, closed after."""
        raise NotImplementedError("a backend's test class must provide the `store` fixture")

    # -- memory rows: upsert and point reads ---------------------------------------------

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
        second, created = store.write(lambda w: w.upsert(changed, "drink", later))
        assert created is False
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
        updated, created = store.write(lambda w: w.upsert(again, "home", NOW))
        assert not created
        assert updated.id == mine.id
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
        memory, created = store.write(lambda w: w.upsert(restated, "imported", NOW))
        assert not created
        assert memory.created_at == old
        assert memory.updated_at == NOW

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

    def test_usage_counts_rows_and_bytes_of_one_owner(self, store: Store) -> None:
        """What a key's quota counts: its rows (history too) and their UTF-8 bytes."""
        r = store.read()
        assert r.usage("alpha") == Usage(0, 0)
        add(store, "alpha", "abcd")
        add(store, "alpha", "h\u00e9llo", user_id="u1")  # 6 bytes in UTF-8
        add(store, "beta", "x" * 50)
        assert r.usage("nobody") == Usage(0, 0)
        beta = r.usage("beta")
        meta = beta.size - 50  # one row's metadata, the same JSON on every row here
        assert beta.rows == 1
        assert meta >= 0
        assert r.usage("alpha") == Usage(2, 4 + 6 + 2 * meta)

    # -- memory rows: retrieval reads ------------------------------------------------------

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
        assert [m.id for m, _ in hits] == [both.id, editor.id]  # more terms matched first
        assert all(score > 0 for _, score in hits)
        assert hits[0][1] >= hits[1][1]
        assert hits[0][0] == get(store, both.id)

        assert [m.id for m, _ in r.keyword_search("hometown", flt("a"), 10)] == [by_key.id]
        assert [m.id for m, _ in r.keyword_search("VIM", flt("a"), 10)] == [both.id]
        assert len(r.keyword_search("vim editor", flt("a"), 1)) == 1
        # Nothing to search for.
        assert r.keyword_search("", flt("a"), 10) == []
        assert r.keyword_search("what is the", flt("a"), 10) == []
        assert r.keyword_search("zebra", flt("a"), 10) == []
        # Query syntax of any engine is just text.
        assert [m.id for m, _ in r.keyword_search('vim" OR (*', flt("a"), 10)] == [both.id]

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
        assert {m.id for m, _ in hits} == made

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
            return {m.id for m, _ in store.read().keyword_search("garden", f, 20)}

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
        assert [x.id for x, _ in r.keyword_search("dog", flt("a"), 10)] == [m.id]
        store.write(lambda w: w.set_content(m.id, "the parrot talks", NOW))
        assert r.keyword_search("dog", flt("a"), 10) == []
        assert [x.id for x, _ in r.keyword_search("parrot", flt("a"), 10)] == [m.id]
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
        """Issue 42: a multi-row writer locks its rows first, in id order (PostgreSQL),
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
            for cursor, memory in page:
                assert isinstance(cursor, int)
                assert memory.api_key_id == "a"
                cursors.append(cursor)
                seen.append(memory.id)
            after = page[-1][0]
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

    # -- memory writes -------------------------------------------------------------------

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
        revived, created = store.write(lambda w: w.upsert(new("a", "Paris!"), "paris", NOW))
        assert not created
        assert revived.superseded_at is None
        assert revived.superseded_by is None

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
            pairs = store.write(lambda w: w.delete_matching(c))
            assert all(isinstance(seq, int) for _, seq in pairs)
            assert len({seq for _, seq in pairs}) == len(pairs)
            return {memory_id for memory_id, _ in pairs}

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
        pairs = store.write(lambda w: w.delete_expired(NOW))
        assert {memory_id for memory_id, _ in pairs} == {past.id, exact.id}
        assert all(isinstance(seq, int) for _, seq in pairs)
        assert set(store.read().get_many([past.id, exact.id, future.id, forever.id])) == {
            future.id,
            forever.id,
        }
        assert store.write(lambda w: w.delete_expired(NOW)) == []
        later = store.write(lambda w: w.delete_expired(NOW + 2 * HOUR))
        assert [memory_id for memory_id, _ in later] == [future.id]

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
        assert [m.id for m, _ in r.keyword_search("apple", flt("a"), 50)] == [keep.id]
        assert [m.id for m, _ in r.keyword_search("banana", flt("a"), 50)] == [keep.id]

    # -- transactions ----------------------------------------------------------------------

    def test_write_returns_the_result(self, store: Store) -> None:
        assert store.write(lambda w: 42) == 42
        assert store.write(lambda w: None) is None
        memory, created = store.write(lambda w: w.upsert(new("a", "x"), "x", NOW))
        assert created
        assert get(store, memory.id) == memory

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
            inner, _ = store.write(lambda w2: w2.upsert(new("a", "inner"), "inner", NOW))
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
            memory, _ = w.upsert(new("a", "fresh", session_id="s"), "fresh", NOW)
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
        def upsert(i: int) -> Callable[[Writer], tuple[Memory, bool]]:
            return lambda w: w.upsert(new("a", f"queued {i}"), f"q{i}", NOW)

        futures = [store.submit(upsert(i)) for i in range(20)]
        store.flush()
        assert all(f.done() for f in futures)
        assert store.read().count() == 20
        memory, created = futures[7].result()
        assert created
        assert memory.content == "queued 7"
        assert store.submit(lambda w: "value").result() == "value"

    def test_a_failed_submit_fails_only_itself(self, store: Store) -> None:
        def fail(w: Writer) -> None:
            w.upsert(new("a", "doomed"), "doomed", NOW)
            raise Boom("only me")

        first = store.submit(lambda w: w.upsert(new("a", "first"), "first", NOW))
        failed = store.submit(fail)
        last = store.submit(lambda w: w.upsert(new("a", "last"), "last", NOW))
        store.flush()
        assert first.result()[1] is True
        assert last.result()[1] is True
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

    # -- settings --------------------------------------------------------------------------

    def test_settings_round_trip(self, store: Store) -> None:
        values: dict[str, Any] = {
            "dict": {"nested": [1, 2, {"x": "y"}], "ok": True},
            "list": [1, "two", None],
            "str": "héllo ✓",
            "int": 7,
            "bool": False,
            "none": None,
        }
        r = store.read()
        assert r.settings() == {}
        assert r.setting("str") is None
        assert r.setting("str", "fallback") == "fallback"
        store.write(lambda w: w.write_settings(values, NOW))
        assert r.settings() == values
        for key, value in values.items():
            assert r.setting(key, "fallback") == value
        assert r.setting("none", "fallback") is None  # stored null, not missing
        assert r.setting("missing", {"d": 1}) == {"d": 1}

        # Overwrite one, delete others.
        store.write(lambda w: w.write_settings({"int": 8}, NOW + HOUR))
        assert r.setting("int") == 8
        store.write(lambda w: w.delete_settings(["int", "str", "missing"]))
        assert r.setting("int", "gone") == "gone"
        assert set(r.settings()) == {"dict", "list", "bool", "none"}

    def test_settings_prefix(self, store: Store) -> None:
        store.write(lambda w: w.write_settings({"a": 1, "b": [2]}, NOW, prefix="embedding."))
        store.write(lambda w: w.write_settings({"a": "top", "embeddingX": 3}, NOW))
        r = store.read()
        assert r.settings("embedding.") == {"a": 1, "b": [2]}
        assert r.setting("embedding.a") == 1
        assert r.setting("a") == "top"
        assert r.settings("embedding") == {".a": 1, ".b": [2], "X": 3}
        assert r.settings() == {"embedding.a": 1, "embedding.b": [2], "a": "top", "embeddingX": 3}
        assert r.settings("nothing.") == {}
        store.write(lambda w: w.delete_settings(["a"], prefix="embedding."))
        assert r.settings("embedding.") == {"b": [2]}
        assert r.setting("a") == "top"

    # -- keys ------------------------------------------------------------------------------

    def test_setting_default_keeps_the_first_value(self, store: Store) -> None:
        assert store.write(lambda w: w.setting_default("token", "first", NOW)) == "first"
        assert store.write(lambda w: w.setting_default("token", "second", NOW)) == "first"
        assert store.read().setting("token") == "first"

    def test_racing_setting_defaults_agree_on_one_winner(self, store: Store) -> None:
        """Four servers starting at once each propose a secret: all get the same one."""
        with ThreadPoolExecutor(4) as pool:
            got = list(
                pool.map(
                    lambda i: store.write(lambda w: w.setting_default("shared", f"v{i}", NOW)),
                    range(4),
                )
            )
        assert len(set(got)) == 1
        assert got[0] == store.read().setting("shared")

    def _insert_key(
        self,
        store: Store,
        key_id: str,
        created_at: str,
        *,
        memory_enabled: bool | None = None,
        key_hash: str | None = None,
    ) -> bool:
        return store.write(
            lambda w: w.insert_key(
                NewKey(
                    key_id=key_id,
                    name=f"name {key_id}",
                    key_hash=key_hash or f"hash-{key_id}",
                    prefix=f"mk_{key_id}",
                    created_at=created_at,
                    memory_enabled=memory_enabled,
                )
            )
        )

    def test_keys(self, store: Store) -> None:
        t1, t2 = "2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z"
        assert self._insert_key(store, "k1", t1, memory_enabled=True)
        assert self._insert_key(store, "k2", t2, memory_enabled=False)
        assert self._insert_key(store, "k3", t2)  # same instant: inserted later, listed first
        assert not self._insert_key(store, "k1", t2, key_hash="other-hash")  # id taken
        r = store.read()
        row = r.key("k1")
        assert row is not None
        assert row == KeyRow("k1", "name k1", "mk_k1", t1, None, True)  # never the hash
        k2 = r.key("k2")
        assert k2 is not None
        assert k2.memory_enabled is False
        k3 = r.key("k3")
        assert k3 is not None
        assert k3.memory_enabled is None
        assert r.key("missing") is None
        by_hash = r.key_by_hash("hash-k2")
        assert by_hash is not None
        assert by_hash.id == "k2"
        assert r.key_by_hash("other-hash") is None
        assert r.key_by_hash("missing") is None
        assert [k.id for k in r.keys()] == ["k3", "k2", "k1"]  # noqa: SIM118
        assert [k.id for k in r.keys(include_revoked=False)] == ["k3", "k2", "k1"]

    def test_revoke_key(self, store: Store) -> None:
        t0 = "2026-01-01T00:00:00.000Z"
        self._insert_key(store, "k1", t0)
        self._insert_key(store, "k2", "2026-01-02T00:00:00.000Z")
        revoked_at = "2026-02-01T00:00:00.000Z"
        assert store.write(lambda w: w.revoke_key("k1", revoked_at))
        assert not store.write(lambda w: w.revoke_key("k1", "2026-03-01T00:00:00.000Z"))
        assert not store.write(lambda w: w.revoke_key("missing", revoked_at))
        r = store.read()
        row = r.key("k1")
        assert row is not None
        assert row.revoked_at == revoked_at  # the first revocation stays
        by_hash = r.key_by_hash("hash-k1")
        assert by_hash is not None
        assert by_hash.revoked_at == revoked_at  # found while revoked
        assert [k.id for k in r.keys()] == ["k2", "k1"]  # noqa: SIM118
        assert [k.id for k in r.keys(include_revoked=True)] == ["k2", "k1"]
        # A copy of the store carries hashes and revocations (oldest first).
        exported = r.export_keys()
        assert [(k.key_id, k.key_hash, k.revoked_at) for k in exported] == [
            ("k1", "hash-k1", revoked_at),
            ("k2", "hash-k2", None),
        ]
        copy = NewKey("k3", "copied", "hash-k3", "mk_k3", t0, False, revoked_at)
        assert store.write(lambda w: w.insert_key(copy))
        assert [k for k in store.read().export_keys() if k.key_id == "k3"] == [copy]
        assert [k.id for k in r.keys(include_revoked=False)] == ["k2"]

    def test_set_key_memory_enabled(self, store: Store) -> None:
        self._insert_key(store, "k1", "2026-01-01T00:00:00.000Z")
        r = store.read()

        def flag() -> Any:
            row = r.key("k1")
            assert row is not None
            return row.memory_enabled

        assert flag() is None

        def set_flag(value: bool | None) -> Callable[[Writer], bool]:
            return lambda w: w.set_key_memory_enabled("k1", value)

        for value in (True, False, True, None):
            assert store.write(set_flag(value))
            assert flag() is value
        assert not store.write(lambda w: w.set_key_memory_enabled("missing", True))

    # -- the extraction queue --------------------------------------------------------------

    def test_extraction_queue(self, store: Store) -> None:
        r = store.read()
        assert r.queued_extractions() == []
        texts = [("I live in Paris", "user"), ("Noted!", "assistant")]
        first = store.write(lambda w: w.queue_extraction(job("a", "s1", texts, NOW)))
        second = store.write(
            lambda w: w.queue_extraction(job("b", "", [("hi", "user")], NOW, user_id="u1"))
        )
        third = store.write(lambda w: w.queue_extraction(job("a", "s2", [], NOW)))
        assert isinstance(first, int)
        assert first < second < third
        assert r.queued_extractions() == [
            QueuedJob(first, "a", "s1", texts, ""),
            QueuedJob(second, "b", "", [("hi", "user")], "u1"),
            QueuedJob(third, "a", "s2", [], ""),
        ]
        store.write(lambda w: w.unqueue_extraction(second))
        store.write(lambda w: w.unqueue_extraction(12345))  # unknown: nothing happens
        assert [job.id for job in r.queued_extractions()] == [first, third]
        store.write(lambda w: w.unqueue_extraction(first))
        store.write(lambda w: w.unqueue_extraction(third))
        assert r.queued_extractions() == []
        fourth = store.write(lambda w: w.queue_extraction(job("a", "s", texts, NOW)))
        assert fourth > third  # ids are never reused

    def test_erasure_receipts_and_queued_jobs(self, store: Store) -> None:
        """Issue 40: the queued jobs of an erased subject go; receipts are kept, newest
        first, per key; ``erased_since`` answers for the end user or the whole key."""
        texts = [("I live in Paris", "user")]
        for owner, user in (("a", "ann"), ("a", "bob"), ("b", "ann"), ("a", "ann")):
            store.write(
                lambda w, o=owner, u=user: w.queue_extraction(job(o, "", texts, NOW, user_id=u))
            )
        assert store.write(lambda w: w.drop_queued_extractions("a", "ann")) == 2
        assert [(j.owner, j.user_id) for j in store.read().queued_extractions()] == [
            ("a", "bob"),
            ("b", "ann"),
        ]
        assert store.write(lambda w: w.drop_queued_extractions("a", None)) == 1
        first = Erasure("er_1", "a", "ann", NOW, {"memories": 3, "extractionJobs": 2})
        whole = Erasure("er_2", "b", None, NOW + timedelta(seconds=5), {"memories": 1})
        store.write(lambda w: w.record_erasure(first))
        store.write(lambda w: w.record_erasure(whole))
        r = store.read()
        assert r.erasures("a", 10) == [first]
        assert [e.id for e in r.erasures(None, 10)] == ["er_2", "er_1"]
        assert r.erasures(None, 1)[0].counts == {"memories": 1}
        assert r.erased_since("a", "ann", NOW - timedelta(seconds=1))
        assert not r.erased_since("a", "ann", NOW + timedelta(seconds=1))  # before the job
        assert not r.erased_since("a", "bob", NOW - timedelta(seconds=1))
        assert r.erased_since("b", "anyone", NOW)  # the whole key
        store.scrub()  # SQLite: the log truncated; PostgreSQL: nothing to do
        assert store.read().erasures("a", 10) == [first]

    def test_a_queued_job_keeps_where_it_was_said(self, store: Store) -> None:
        """Issue 40: a job deferred to the table keeps its request's start and id, so
        a later erasure of its subject still drops it, whoever claims it."""
        said = NOW - timedelta(seconds=7)
        deferred = NewJob("a", "s", [("hi", "user")], NOW, "ann", said_at=said, request_id="r-1")
        job_id = store.write(lambda w: w.queue_extraction(deferred))
        (queued,) = store.read().queued_extractions()
        assert (queued.id, queued.said_at, queued.request_id) == (job_id, said, "r-1")
        (claimed,) = store.write(lambda w: w.claim_extractions("me", NOW, NOW + HOUR, 5))
        assert claimed == queued

    def test_messages_held_for_review(self, store: Store) -> None:
        """Issue 40: held messages listed newest first per key and end user, taken
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

    def test_extraction_leases(self, store: Store) -> None:
        """A job held by a live server is not claimed; one whose lease ran out, or that
        nobody holds, is claimed once, by one worker, oldest first."""
        held = NewJob("a", "", [("held", "user")], NOW, "", "alive", NOW + HOUR)
        lapsed = NewJob("a", "", [("lapsed", "user")], NOW, "", "dead", NOW - HOUR)
        free = NewJob("b", "s", [("free", "user")], NOW, "u1")
        ids = [store.write(lambda w, j=j: w.queue_extraction(j)) for j in (held, lapsed, free)]
        r = store.read()
        assert r.lease_of(ids[0]) == Lease("alive", NOW + HOUR)
        assert r.lease_of(ids[2]) == Lease(None, None)
        assert r.lease_of(424242) is None

        until = NOW + 2 * HOUR
        taken = store.write(lambda w: w.claim_extractions("me", NOW, until, 10))
        assert [j.id for j in taken] == ids[1:]
        assert taken[1] == QueuedJob(ids[2], "b", "s", [("free", "user")], "u1")
        assert r.lease_of(ids[1]) == Lease("me", until)
        # Claimed now: nobody else gets them, and the live one's job stays its own.
        assert store.write(lambda w: w.claim_extractions("other", NOW, until, 10)) == []
        # Its lease running out (time passing) frees the job for the next claimer, never
        # for the server that holds it (a live server's jobs wait in its memory).
        later = NOW + 3 * HOUR
        mine = store.write(lambda w: w.claim_extractions("me", later, later + HOUR, 10))
        assert [j.id for j in mine] == [ids[0]]  # the lapsed "alive" job, not its own two
        again = store.write(lambda w: w.claim_extractions("other", later, later + HOUR, 1))
        assert [j.id for j in again] == [ids[1]]  # oldest first, at most ``limit``
        assert r.lease_of(ids[1]) == Lease("other", later + HOUR)

    def test_a_stopping_server_releases_its_jobs(self, store: Store) -> None:
        """Jobs a server gives back are claimed at once by another (no lease to wait
        out); another server's jobs stay its own."""
        mine = NewJob("a", "", [("mine", "user")], NOW, "", "stopping", NOW + HOUR)
        theirs = NewJob("a", "", [("theirs", "user")], NOW, "", "alive", NOW + HOUR)
        ids = [store.write(lambda w, j=j: w.queue_extraction(j)) for j in (mine, theirs)]
        assert store.write(lambda w: w.claim_extractions("next", NOW, NOW + HOUR, 10)) == []
        assert store.write(lambda w: w.release_extractions("stopping")) == 1
        assert store.read().lease_of(ids[0]) == Lease(None, None)
        assert store.read().lease_of(ids[1]) == Lease("alive", NOW + HOUR)
        taken = store.write(lambda w: w.claim_extractions("next", NOW, NOW + HOUR, 10))
        assert [j.id for j in taken] == [ids[0]]
        assert store.write(lambda w: w.release_extractions("nobody")) == 0
        # a job still running at the stop keeps its lease: nobody runs it twice
        running = NewJob("a", "", [("running", "user")], NOW, "", "stopping", NOW + HOUR)
        run_id = store.write(lambda w: w.queue_extraction(running))
        assert store.write(lambda w: w.release_extractions("stopping", keep=(run_id,))) == 0
        assert store.read().lease_of(run_id) == Lease("stopping", NOW + HOUR)

    def test_concurrent_claims_never_share_a_job(self, store: Store) -> None:
        ids = [
            store.write(lambda w, i=i: w.queue_extraction(job("a", "", [(f"t{i}", "user")], NOW)))
            for i in range(40)
        ]

        def claim(worker: str) -> list[int]:
            got: list[int] = []
            while batch := store.write(lambda w: w.claim_extractions(worker, NOW, NOW + HOUR, 3)):
                got += [j.id for j in batch]
            return got

        with ThreadPoolExecutor(4) as pool:
            claimed = list(pool.map(claim, ["w1", "w2", "w3", "w4"]))
        flat = [i for part in claimed for i in part]
        assert sorted(flat) == ids  # every job once, none twice

    # -- the reindex queue -----------------------------------------------------------------

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
        """A flagged row's ``view`` is the dense context view (issue 20)."""
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

    # -- the outbox ------------------------------------------------------------------------

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

    # -- status ----------------------------------------------------------------------------

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

    # -- this suite covers the whole protocol ----------------------------------------------

    def test_every_protocol_member_is_exercised(self) -> None:
        members = protocol_members()
        assert {"read", "write", "upsert", "outbox_rows", "capabilities"} <= members
        source = Path(__file__).read_text(encoding="utf-8")
        missing = sorted(
            name
            for name in members
            if not re.search(rf"(?:\)|\b(?:r|w|w2|snap|store))\.{name}\b", source)
        )
        assert missing == [], f"protocol members without a contract test: {missing}"


def protocol_members() -> set[str]:
    """Public names (methods, properties, attributes) of ``Store``, ``Reader`` and
    ``Writer`` and of every concern protocol they are made of."""
    names: set[str] = set()
    for proto in (Store, Reader, Writer):
        for cls in proto.__mro__:
            if cls in (object, Protocol, Generic) or not getattr(cls, "_is_protocol", False):
                continue
            names |= {n for n in vars(cls) if not n.startswith("_")}
            names |= {n for n in getattr(cls, "__annotations__", {}) if not n.startswith("_")}
    return names
