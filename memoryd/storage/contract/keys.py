"""Client API keys as the store keeps them: the secret's hash, never the secret (the
rules live in ``memoryd.engine.keys``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class NewKey:
    """A client key row to insert (the secret's hash, never the secret)."""

    key_id: str
    name: str
    key_hash: str
    prefix: str
    created_at: str  # canonical ISO-8601
    memory_enabled: bool | None = None
    revoked_at: str | None = None  # a copied revoked key stays revoked


@dataclass(frozen=True, slots=True)
class KeyRow:
    """A key as read back, without its hash (a read never hands the hash around)."""

    id: str
    name: str
    prefix: str
    created_at: str  # canonical ISO-8601, as inserted
    revoked_at: str | None
    #: The key's own memory switch; None follows the global setting.
    memory_enabled: bool | None


class KeyReads(Protocol):
    def key(self, key_id: str) -> KeyRow | None: ...
    def key_by_hash(self, key_hash: str) -> KeyRow | None: ...  # revoked or not

    def keys(self, *, include_revoked: bool = True) -> list[KeyRow]:
        """Newest first; insertion order breaks ties."""
        ...

    def export_keys(self) -> list[NewKey]:
        """Every key with its hash, oldest first: for copying a store to another (the
        API never shows a hash)."""
        ...


class KeyWrites(Protocol):
    def insert_key(self, key: NewKey) -> bool:
        """False (nothing written) when the id is taken."""
        ...

    def revoke_key(self, key_id: str, revoked_at: str) -> bool: ...  # False: unknown/revoked

    def set_key_memory_enabled(self, key_id: str, value: bool | None) -> bool: ...
