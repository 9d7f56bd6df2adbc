"""Caches that follow the store: what another server changed is dropped here too.

A server keeps keys (auth lookups), memory settings, providers and memories in
process caches. Its own writes drop them at once; on a shared store (PostgreSQL) the
store announces every committed change (``Store.watch``), and this module maps a change
to the caches it makes stale. The caches keep short TTLs as the fallback for a change
feed that was down (which it also reports as ``Change(ANY)``, dropping everything).
"""

from __future__ import annotations

from typing import Protocol

from memoryd.cache import TTLCache
from memoryd.config.settings import PREFIX as SETTINGS_PREFIX
from memoryd.config.settings import SettingsService
from memoryd.config.upstreams import SETTINGS_KEY as PROVIDERS_KEY
from memoryd.config.upstreams import forget_providers
from memoryd.engine.keys import KeyService
from memoryd.models import Memory
from memoryd.storage.base import ANY, Change, Store


class Cached(Protocol):
    """What an engine caches (``MemoryEngine`` is one)."""

    store: Store
    cache: TTLCache[str, Memory | None]
    keys: KeyService
    settings: SettingsService


#: How long a cached memory is trusted: on a store only this server writes, its own
#: writes invalidate it; on a shared one, announcements do and this bounds a lost one.
LOCAL_MEMORY_TTL_S = 60.0
SHARED_MEMORY_TTL_S = 10.0


def memory_ttl_s(shared: bool) -> float:
    return SHARED_MEMORY_TTL_S if shared else LOCAL_MEMORY_TTL_S


def apply(engine: Cached, change: Change) -> None:
    """Drop what ``change`` made stale in ``engine``'s caches."""
    everything = change.table == ANY
    if everything:
        engine.cache.clear(reset_stats=False)
    elif change.table == "memories":
        engine.cache.invalidate(change.key)
    if everything or change.table == "api_keys":
        engine.keys.forget()
    if everything or change.table == "settings":
        if everything or change.key.startswith(SETTINGS_PREFIX):
            engine.settings.invalidate()
        if everything or change.key == PROVIDERS_KEY:
            forget_providers(engine.store)


def follow(engine: Cached) -> None:
    engine.store.watch(lambda change: apply(engine, change))
