"""Upstream providers (docs/design/gateway.md#providers): named upstream endpoints with keys.

Each has a ``kind``: ``openai`` (an OpenAI-compatible API, the default) or
``anthropic`` (the Anthropic Messages API). Stored as one JSON list in the settings
table (key ``providers``). The default upstream from ``MEMORYD_UPSTREAM_BASE_URL`` /
``MEMORYD_UPSTREAM_API_KEY`` is the provider named ``default`` (kind ``openai``), and
``MEMORYD_ANTHROPIC_BASE_URL`` / ``MEMORYD_ANTHROPIC_API_KEY`` the one named
``anthropic`` (kind ``anthropic``), unless one with that name is stored. Embedding and
rerank models are addressed as ``"provider/model"`` against these.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from memoryd.core.injection import SystemRole
from memoryd.core.masking import mask_secret
from memoryd.storage.base import Store

ProviderKind = Literal["openai", "anthropic"]
SYSTEM_ROLES = ("auto", "system", "user", "first")
#: A provider's name, as every interface takes it ("name/model" routes to it).
NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a provider's base URL, or None. "http://" was stored as
    "http:" (which the API then refused to take back), a port of 99999 was kept."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises for a port out of range)
    except ValueError as exc:
        return f"not a URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "names no host"
    if parts.username is not None or parts.password is not None:
        return (
            "must not hold credentials (user:password@): memoryd authenticates with the "
            "provider's apiKey; put the key there"
        )
    return None


PROVIDER_KINDS: tuple[ProviderKind, ...] = ("openai", "anthropic")
SETTINGS_KEY = "providers"


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    base_url: str
    api_key: str | None = None
    system_role: SystemRole = "auto"
    kind: ProviderKind = "openai"

    def to_dict(self, *, mask: bool = True) -> dict[str, Any]:
        key = self.api_key
        return {
            "name": self.name,
            "baseUrl": self.base_url,
            "apiKey": mask_secret(key) if mask else key,
            "hasKey": bool(key),
            "systemRole": self.system_role,
            "kind": self.kind,
        }


def _parse(item: object) -> Provider | None:
    if not isinstance(item, dict):
        return None
    name, base_url = item.get("name"), item.get("baseUrl")
    if not isinstance(name, str) or not name or not isinstance(base_url, str) or not base_url:
        return None
    key = item.get("apiKey")
    role = item.get("systemRole", "auto")
    kind = item.get("kind", "openai")
    return Provider(
        name=name,
        base_url=base_url.rstrip("/"),
        api_key=key if isinstance(key, str) and key else None,
        system_role=cast(SystemRole, role) if role in SYSTEM_ROLES else "auto",
        kind=cast(ProviderKind, kind) if kind in PROVIDER_KINDS else "openai",
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
_cache: weakref.WeakKeyDictionary[Store, dict[tuple[str, str, str, str], Cached]] = (
    weakref.WeakKeyDictionary()
)


def forget_providers(store: Store) -> None:
    """Re-read the providers on next use (another server saved them)."""
    _cache.pop(store, None)


def load_providers(store: Store, env: Mapping[str, str]) -> dict[str, Provider]:
    """Every provider by name: the env ones first, stored ones override them."""
    key = (
        env.get("MEMORYD_UPSTREAM_BASE_URL", ""),
        env.get("MEMORYD_UPSTREAM_API_KEY", ""),
        env.get("MEMORYD_ANTHROPIC_BASE_URL", ""),
        env.get("MEMORYD_ANTHROPIC_API_KEY", ""),
    )
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
    from_env = (
        Provider(
            "default",
            env.get("MEMORYD_UPSTREAM_BASE_URL", "").strip().rstrip("/"),
            env.get("MEMORYD_UPSTREAM_API_KEY", "").strip() or None,
            kind="openai",
        ),
        Provider(
            "anthropic",
            env.get("MEMORYD_ANTHROPIC_BASE_URL", "").strip().rstrip("/"),
            env.get("MEMORYD_ANTHROPIC_API_KEY", "").strip() or None,
            kind="anthropic",
        ),
    )
    for provider in from_env:
        if provider.base_url:
            providers[provider.name] = provider
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
        {
            "name": p.name,
            "baseUrl": p.base_url,
            "apiKey": p.api_key,
            "systemRole": p.system_role,
            "kind": p.kind,
        }
        for p in providers
    ]
    store.write(lambda tx: tx.write_settings({SETTINGS_KEY: payload}, utcnow()))
    _cache.pop(store, None)


def default_for(providers: Mapping[str, Provider], kind: ProviderKind) -> Provider | None:
    """The provider a request of ``kind`` goes to when it names none: ``default`` when
    it is of that kind, else the first of that kind in ``providers``' order, else None."""
    default = providers.get("default")
    if default is not None and default.kind == kind:
        return default
    return next((p for p in providers.values() if p.kind == kind), None)
