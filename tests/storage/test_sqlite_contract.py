"""The Store contract (``tests/storage/contract/``) against the SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.storage.base import Store
from memoryd.storage.sql.session import SqlSession
from memoryd.storage.sqlite.database import Database
from memoryd.storage.sqlite.keywords import ResidentKeywords
from memoryd.storage.sqlite.store import SqliteStore
from tests.storage.contract import NOW, StoreContract, add, protocol_members

#: Public members of the SQLite classes that are not part of the protocol: the store's
#: file and ``Database`` (backup, repair, sqlite-vec), the session's connection, and the
#: resident keyword copies (``tests/storage/test_resident_keywords.py``, and the contract below).
SQLITE_ONLY = {"open", "path", "db", "conn", "dialect", "run", "keywords"}


class TestSqliteStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        store = SqliteStore(Database(tmp_path / "memoryd.db", load_vec=True))
        try:
            yield store
        finally:
            store.close()


class TestSqliteStoreWithResidentKeywords(StoreContract):
    """The contract again with every owner's keyword search answered from a resident
    copy of its postings (where the filter lets it): the same answers as FTS5's."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        keywords = ResidentKeywords(min_rows=1, budget_bytes=2**24)
        store = SqliteStore(Database(tmp_path / "memoryd.db", load_vec=True), keywords=keywords)
        try:
            yield store
        finally:
            store.close()


def test_sqlite_classes_add_nothing_untested_to_the_protocol() -> None:
    """Every public member of ``SqliteStore`` / ``SqlSession`` is a protocol member
    (so the contract covers it) or one of the few SQLite-only extras tested here."""
    members = protocol_members()
    for cls in (SqliteStore, SqlSession):
        public = {n for n in dir(cls) if not n.startswith("_")}
        assert public - members - SQLITE_ONLY == set(), cls.__name__


def test_open_and_path(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "memoryd.db"
    with SqliteStore.open(path, load_vec=False) as store:
        assert store.path == path
        assert isinstance(store.db, Database)
        assert store.capabilities.vec is False
        memory = add(store, "a", "persisted")
    with SqliteStore.open(path) as reopened:
        got = reopened.read().get(memory.id)
        assert got is not None
        assert got.content == "persisted"
        assert got.created_at == NOW
