"""The contract of client API keys: rows without their hash, revocation, the memory
switch, export (``KeyReads``, ``KeyWrites``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memoryd.storage.base import KeyRow, NewKey, Store, Writer
from memoryd.storage.contract.keys import KeyReads, KeyWrites
from tests.storage.contract.support import Contract


class KeyContract(Contract):
    covers = (KeyReads, KeyWrites)

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
