"""Client API keys (docs/design/owners.md#client-keys): create, list, revoke, auth.

A key's id is the owner id of its memories (``memories.api_key_id``). The secret
(``mk_`` + 32 random bytes, url-safe, or one a client already holds, e.g. from
OmniRoute) is returned once by ``create`` and never stored: the table keeps its SHA-256
hex digest and a display prefix (8 chars, at most a quarter of a chosen secret).
``authenticate`` hashes the presented secret and does one indexed lookup on the UNIQUE
``key_hash``.

Authentication results are cached in process for ``AUTH_CACHE_TTL_S`` seconds (hits
only, keyed by hash). ``revoke`` and ``set_memory_enabled`` through a service clear
its cache, so in this process they take effect at once; another process (the CLI next
to a running server) is seen within the TTL; another server sharing a PostgreSQL store
announces its changes, and ``forget`` runs on each (``engine.coherence``).
"""

from __future__ import annotations

import builtins
import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memoryd.cache import TTLCache
from memoryd.errors import ConflictError, field_error
from memoryd.models import GLOBAL_OWNER, parse_iso, to_iso, utcnow
from memoryd.storage.base import KeyRow, NewKey, Store, Writer
from memoryd.storage.rows import optional_time

SECRET_PREFIX = "mk_"
PREFIX_CHARS = 8
MAX_NAME_CHARS = 200
MAX_ID_CHARS = 64
#: How long another process's revoke may take to be seen here (seconds).
AUTH_CACHE_TTL_S = 2.0
AUTH_CACHE_SIZE = 1024
#: Ids: 1..64 of ``[A-Za-z0-9_.-]``, starting with a letter or digit (so internal
#: owners like ``__memoryd_health__`` and CLI-flag-looking ids are impossible).
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: A chosen secret's length: shorter ones can be guessed; it travels in a header.
MIN_SECRET_CHARS = 16
MAX_SECRET_CHARS = 256
#: What a secret can look like (printable ASCII, no spaces); anything else is rejected
#: without a DB lookup.
_SECRET_RE = re.compile(rf"[\x21-\x7e]{{{MIN_SECRET_CHARS},{MAX_SECRET_CHARS}}}")


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    name: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None
    #: None = follow the global ``enabled`` setting.
    memory_enabled: bool | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def to_dict(self) -> dict[str, Any]:
        """The public key object (never the secret or its hash)."""
        return {
            "id": self.id,
            "name": self.name,
            "prefix": self.prefix,
            "createdAt": to_iso(self.created_at),
            "revokedAt": to_iso(self.revoked_at) if self.revoked_at else None,
            "memoryEnabled": self.memory_enabled,
        }


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def check_secret(secret: object) -> str:
    """A secret a client already holds, refused with a reason that never repeats it."""
    if not isinstance(secret, str):
        raise field_error("secret", "must be a string")
    if len(secret) < MIN_SECRET_CHARS:
        raise field_error(
            "secret", f"is too short to be safe: at least {MIN_SECRET_CHARS} characters"
        )
    if len(secret) > MAX_SECRET_CHARS:
        raise field_error("secret", f"must be at most {MAX_SECRET_CHARS} characters")
    if not _SECRET_RE.fullmatch(secret):
        raise field_error(
            "secret",
            "must be printable ASCII without spaces or control characters "
            "(it is sent in an HTTP header)",
        )
    return secret


def display_prefix(secret: str) -> str:
    """What lists show of a secret: 8 chars, but never more than a quarter of it (a
    16-char chosen secret shows 4)."""
    return secret[: min(PREFIX_CHARS, len(secret) // 4)]


def new_key_id() -> str:
    return "key_" + secrets.token_urlsafe(9)  # 12 url-safe chars


def check_key_id(key_id: object, field: str = "id") -> str:
    if not isinstance(key_id, str) or not key_id:
        raise field_error(field, "must be a non-empty string")
    if key_id.lower() == GLOBAL_OWNER:
        raise field_error(field, f"'{GLOBAL_OWNER}' is reserved for the shared memory pool")
    if len(key_id) > MAX_ID_CHARS or not _ID_RE.fullmatch(key_id):
        raise field_error(
            field,
            f"must be 1..{MAX_ID_CHARS} chars of A-Z a-z 0-9 _ . - starting with a letter or digit",
        )
    return key_id


def check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise field_error("name", "must be a non-empty string")
    if len(name) > MAX_NAME_CHARS or any(ord(c) < 32 for c in name):
        raise field_error("name", f"must be at most {MAX_NAME_CHARS} printable chars")
    return name


def _check_flag(value: object) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise field_error("memoryEnabled", "must be true, false or null")
    return value


def _row_to_key(row: KeyRow) -> ApiKey:
    created = optional_time(row.created_at)
    assert created is not None, "created_at is NOT NULL"
    return ApiKey(
        id=str(row.id),
        name=str(row.name),
        prefix=str(row.prefix),
        created_at=created,
        revoked_at=optional_time(row.revoked_at),
        memory_enabled=row.memory_enabled,
    )


class KeyService:
    def __init__(
        self,
        store: Store,
        *,
        cache_ttl_s: float = AUTH_CACHE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._auth_cache: TTLCache[str, ApiKey] = TTLCache(
            AUTH_CACHE_SIZE, cache_ttl_s, clock=clock
        )
        # A lookup that raced a revoke must not re-cache the pre-revoke row: writes bump
        # the generation, and a lookup caches only if no write happened meanwhile.
        self._generation = 0
        self._lock = threading.Lock()

    def forget(self) -> None:
        """Drop cached lookups: a key changed (here, or on another server sharing the
        store: ``engine.coherence``)."""
        self._changed()

    def _changed(self) -> None:
        with self._lock:
            self._generation += 1
            self._auth_cache.clear()

    # -- writes ------------------------------------------------------------------------

    def create(
        self,
        name: str,
        *,
        memory_enabled: bool | None = None,
        key_id: str | None = None,
        secret: str | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key and its secret (shown once; only its hash is stored). ``secret``:
        one its client already holds (moving from OmniRoute) instead of a new one."""
        name = check_name(name)
        flag = _check_flag(memory_enabled)
        explicit = key_id is not None
        kid = check_key_id(key_id) if explicit else new_key_id()
        chosen = secret is not None
        secret = check_secret(secret) if chosen else new_secret()
        digest, prefix = hash_secret(secret), display_prefix(secret)
        created = utcnow()
        created_iso = to_iso(created)

        def insert(tx: Writer) -> str | None:
            """None when stored, else the field that is taken."""
            if chosen and tx.key_by_hash(digest) is not None:  # revoked keys keep theirs
                return "secret"
            new = NewKey(kid, name, digest, prefix, created_iso, memory_enabled=flag)
            return None if tx.insert_key(new) else "id"

        while (taken := self.store.write(insert)) is not None:
            if taken == "secret":  # never which key: the caller may not know it exists
                raise ConflictError(
                    "secret: already in use by another key; choose another",
                    details=[{"field": "secret", "message": "already in use"}],
                )
            if explicit:
                raise ConflictError(
                    f"a key with id {kid!r} already exists",
                    details=[{"field": "id", "message": "already exists"}],
                )
            kid = new_key_id()  # a random id collided: astronomically rare, just retry
        record = ApiKey(kid, name, prefix, parse_iso(created_iso), None, flag)
        return record, secret

    def revoke(self, key_id: str) -> bool:
        """Revoke at once; False for an unknown or already revoked id. Memories stay."""
        if not isinstance(key_id, str) or not key_id:
            return False
        revoked_at = to_iso(utcnow())
        done = self.store.write(lambda tx: tx.revoke_key(key_id, revoked_at))
        self._changed()
        return done

    def set_memory_enabled(self, key_id: str, value: bool | None) -> ApiKey | None:
        """Set the per-key memory override (None = follow the global setting)."""
        flag = _check_flag(value)
        if not isinstance(key_id, str) or not key_id:
            return None

        def apply(tx: Writer) -> KeyRow | None:
            if not tx.set_key_memory_enabled(key_id, flag):
                return None
            return tx.key(key_id)

        row = self.store.write(apply)
        self._changed()
        return _row_to_key(row) if row is not None else None

    # -- reads -------------------------------------------------------------------------

    def get(self, key_id: str) -> ApiKey | None:
        if not isinstance(key_id, str) or not key_id:
            return None
        row = self.store.read().key(key_id)
        return _row_to_key(row) if row is not None else None

    def list(self, *, include_revoked: bool = True) -> builtins.list[ApiKey]:
        """Every key, newest first."""
        rows = self.store.read().keys(include_revoked=include_revoked)
        return [_row_to_key(row) for row in rows]

    def authenticate(self, secret: str) -> ApiKey | None:
        """The live key this secret belongs to; None if unknown, revoked or malformed."""
        if not isinstance(secret, str) or not _SECRET_RE.fullmatch(secret):
            return None
        digest = hash_secret(secret)
        cached = self._auth_cache.get(digest)
        if cached is not None:
            return cached
        generation = self._generation
        row = self.store.read().key_by_hash(digest)
        if row is None:
            return None
        key = _row_to_key(row)
        if key.revoked:
            return None
        with self._lock:
            if generation == self._generation:
                self._auth_cache.set(digest, key)
        return key

    def invalidate_cache(self) -> None:
        """Forget cached authentications (e.g. after editing the table directly)."""
        self._changed()
