"""``/api/settings/*``: memory settings and upstream providers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memoryd.api import schemas as s
from memoryd.config.upstreams import Provider, save_providers
from memoryd.core.masking import mask_secret
from memoryd.http.deps import EngineDep

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

    def key_of(p: s.ProviderIn) -> str | None:
        kept = current[p.name].api_key if p.name in current else None
        if "apiKey" not in p.model_fields_set:
            return kept
        if p.apiKey and "…" in p.apiKey:  # what GET shows: writing it back kept "sk-p…6789"
            if kept is not None and p.apiKey == mask_secret(kept):
                return kept
            raise ValidationError(
                f"providers: {p.name}: apiKey is a masked key as GET shows it; send the key "
                "itself, or leave apiKey out to keep the stored one",
                details=[{"field": "apiKey", "message": "masked"}],
            )
        return p.apiKey or None

    stored = [
        Provider(
            name=p.name,
            base_url=p.baseUrl.rstrip("/"),
            api_key=key_of(p),
            system_role=p.systemRole,
            kind=p.kind,
        )
        for p in body
    ]
    save_providers(engine.store, stored)
    return [p.to_dict() for p in engine.providers().values()]
