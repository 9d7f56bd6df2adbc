"""Upstream providers (SPEC §12): named OpenAI-compatible endpoints with keys.

Stored as one JSON list in the settings table (key ``providers``). The default
upstream from ``MEMORYD_UPSTREAM_BASE_URL`` / ``MEMORYD_UPSTREAM_API_KEY`` is the
provider named ``default`` unless one with that name is stored. Embedding and rerank
models are addressed as ``"provider/model"`` against these.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from memoryd.core.injection import SystemRole
from memoryd.core.masking import mask_secret
from memoryd.storage.base import Store

SYSTEM_ROLES = ("auto", "system", "user", "first")
SETTINGS_KEY = "providers"


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    base_url: str
    api_key: str | None = None
    system_role: SystemRole = "auto"

    def to_dict(self, *, mask: bool = True) -> dict[str, Any]:
        key = self.api_key
        return {
            "name": self.name,
            "baseUrl": self.base_url,
            "apiKey": mask_secret(key) if mask else key,
            "hasKey": bool(key),
            "systemRole": self.system_role,
        }


def _parse(item: object) -> Provider | None:
    if not isinstance(item, dict):
        return None
    name, base_url = item.get("name"), item.get("baseUrl")
    if not isinstance(name, str) or not name or not isinstance(base_url, str) or not base_url:
        return None
    key = item.get("apiKey")
    role = item.get("systemRole", "auto")
    return Provider(
        name=name,
        base_url=base_url.rstrip("/"),
        api_key=key if isinstance(key, str) and key else None,
        system_role=cast(SystemRole, role) if role in SYSTEM_ROLES else "auto",
    )


def stored_providers(store: Store) -> list[Provider]:
    """The providers saved in settings (not the env default)."""
    raw = store.read().setting(SETTINGS_KEY, [])
    parsed = (_parse(item) for item in raw) if isinstance(raw, list) else iter(())
    return [p for p in parsed if p is not None]


#: Per-database cache of the merged provider map: read on every chat request, so it is
#: kept for a short TTL (writes through ``save_providers`` drop it at once; another
#: process's writes are seen after the TTL).
CACHE_TTL_S = 2.0
Cached = tuple[float, dict[str, "Provider"]]
_cache: weakref.WeakKeyDictionary[Store, dict[tuple[str, str], Cached]] = (
    weakref.WeakKeyDictionary()
)


def forget_providers(store: Store) -> None:
    """Re-read the providers on next use (another server saved them)."""
    _cache.pop(store, None)


def load_providers(store: Store, env: Mapping[str, str]) -> dict[str, Provider]:
    """Every provider by name: the env default first, stored ones override it."""
    key = (env.get("MEMORYD_UPSTREAM_BASE_URL", ""), env.get("MEMORYD_UPSTREAM_API_KEY", ""))
    entries = _cache.setdefault(store, {})
    cached = entries.get(key)
    now = time.monotonic()
    if cached is not None and now - cached[0] < CACHE_TTL_S:
        return dict(cached[1])
    providers = _merge(store, env)
    entries[key] = (now, providers)
    return dict(providers)


def _merge(store: Store, env: Mapping[str, str]) -> dict[str, Provider]:
    providers: dict[str, Provider] = {}
    base = env.get("MEMORYD_UPSTREAM_BASE_URL", "").strip()
    if base:
        key = env.get("MEMORYD_UPSTREAM_API_KEY", "").strip() or None
        providers["default"] = Provider("default", base.rstrip("/"), key)
    for provider in stored_providers(store):
        providers[provider.name] = provider
    return providers


def save_providers(store: Store, providers: list[Provider]) -> None:
    """Replace the stored provider list (names must be unique)."""
    from memoryd.models import utcnow

    names = [p.name for p in providers]
    if len(set(names)) != len(names):
        raise ValueError("provider names must be unique")
    payload = [
        {"name": p.name, "baseUrl": p.base_url, "apiKey": p.api_key, "systemRole": p.system_role}
        for p in providers
    ]
    store.write(lambda tx: tx.write_settings({SETTINGS_KEY: payload}, utcnow()))
    _cache.pop(store, None)
