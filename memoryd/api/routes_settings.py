"""``/api/settings/*``: memory settings and upstream providers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memoryd.api import schemas as s
from memoryd.api.deps import EngineDep
from memoryd.engine.providers import Provider, save_providers

router = APIRouter(prefix="/api/settings", tags=["settings"])


@router.get("/memory", response_model=s.MemorySettingsPublic)
def get_memory_settings(engine: EngineDep) -> dict[str, Any]:
    return engine.settings.get().to_dict()


@router.put("/memory", response_model=s.MemorySettingsPublic)
def put_memory_settings(body: s.MemorySettingsUpdate, engine: EngineDep) -> dict[str, Any]:
    """Partial update: only the fields sent change; the answer is the normalized whole."""
    changes = body.model_dump(exclude_unset=True)
    return engine.settings.update(changes).to_dict()


@router.get("/providers", response_model=list[s.ProviderPublic])
def get_providers(engine: EngineDep) -> list[dict[str, Any]]:
    """Upstream providers with their keys masked (the env default included)."""
    return [p.to_dict() for p in engine.providers().values()]


@router.put("/providers", response_model=list[s.ProviderPublic])
def put_providers(body: list[s.ProviderIn], engine: EngineDep) -> list[dict[str, Any]]:
    """Replace the stored providers. An entry without ``apiKey`` keeps the key already
    stored under that name; ``"apiKey": ""`` removes it."""
    from memoryd.errors import ValidationError

    names = [p.name for p in body]
    if len(set(names)) != len(names):
        raise ValidationError("provider names must be unique")
    current = engine.providers()
    stored = [
        Provider(
            name=p.name,
            base_url=p.baseUrl.rstrip("/"),
            api_key=(
                p.apiKey or None
                if "apiKey" in p.model_fields_set
                else (current[p.name].api_key if p.name in current else None)
            ),
            system_role=p.systemRole,
            kind=p.kind,
        )
        for p in body
    ]
    save_providers(engine.store, stored)
    return [p.to_dict() for p in engine.providers().values()]
