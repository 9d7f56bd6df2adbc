"""Typed decay (docs/design/storage.md#lifecycle): opt-in expiry of stale memories by type.

Episodic memories ("yesterday we discussed X") lose value with time; facts,
procedures and semantic knowledge do not. So only types with a TTL decay, the clock
restarts on every access, and memories accessed often enough are kept regardless.
Decay is off unless enabled, because deleting user data must be a deliberate choice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from memoryd.models import Memory

#: Days without access before a memory of the type decays; None means never.
DEFAULT_TTL_DAYS_BY_TYPE: Mapping[str, int | None] = MappingProxyType(
    {"episodic": 30, "factual": None, "procedural": None, "semantic": None}
)
#: A memory read this many times has proven useful and is kept.
DEFAULT_ACCESS_IMMUNITY_THRESHOLD = 3
#: Most rows one sweep examines, so a sweep never holds the database for long.
SWEEP_SCAN_CAP = 5000


def _default_ttls() -> Mapping[str, int | None]:
    return DEFAULT_TTL_DAYS_BY_TYPE


@dataclass(frozen=True)
class DecayConfig:
    """Decay settings; ``sweep_interval_s == 0`` means no background sweep."""

    enabled: bool = False
    ttl_days_by_type: Mapping[str, int | None] = field(default_factory=_default_ttls)
    access_immunity_threshold: int = DEFAULT_ACCESS_IMMUNITY_THRESHOLD
    sweep_interval_s: int = 0


def _non_negative_int(raw: str | None, default: int) -> int:
    """Parse ``raw`` as an int >= 0, flooring floats; anything else gives ``default``.

    Environment values are hand-typed, so "7.9" is read as 7 rather than rejected,
    while negative, non-finite or non-numeric values fall back silently.
    """
    if raw is None:
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        return default
    if not math.isfinite(value) or value < 0:
        return default
    return math.floor(value)


def decay_config_from_env(env: Mapping[str, str]) -> DecayConfig:
    """Read the ``MEMORY_TYPED_DECAY_*`` variables; a missing or bad value is its default.

    ``MEMORY_TYPED_DECAY_EPISODIC_DAYS=0`` makes episodic memories immune, and
    ``MEMORY_TYPED_DECAY_ACCESS_IMMUNITY=0`` disables access immunity.
    """
    enabled = env.get("MEMORY_TYPED_DECAY_ENABLED", "").strip().lower() == "true"
    default_episodic = DEFAULT_TTL_DAYS_BY_TYPE["episodic"] or 0
    episodic = _non_negative_int(env.get("MEMORY_TYPED_DECAY_EPISODIC_DAYS"), default_episodic)
    ttls = dict(DEFAULT_TTL_DAYS_BY_TYPE)
    ttls["episodic"] = episodic if episodic > 0 else None
    return DecayConfig(
        enabled=enabled,
        ttl_days_by_type=MappingProxyType(ttls),
        access_immunity_threshold=_non_negative_int(
            env.get("MEMORY_TYPED_DECAY_ACCESS_IMMUNITY"), DEFAULT_ACCESS_IMMUNITY_THRESHOLD
        ),
        sweep_interval_s=_non_negative_int(env.get("MEMORY_TYPED_DECAY_SWEEP_INTERVAL"), 0),
    )


def _ttl_days(memory_type: str, config: DecayConfig) -> int | None:
    ttl = config.ttl_days_by_type.get(str(memory_type))
    return ttl if ttl is not None and ttl > 0 else None


def is_type_immune(memory_type: str, config: DecayConfig) -> bool:
    """True when the type has no positive TTL; unknown types are immune (fail safe)."""
    return _ttl_days(memory_type, config) is None


def is_access_immune(access_count: int, config: DecayConfig) -> bool:
    """True when access immunity is on (threshold > 0) and the count reaches it."""
    threshold = config.access_immunity_threshold
    return threshold > 0 and access_count >= threshold


def decay_deadline(memory: Memory, config: DecayConfig) -> datetime | None:
    """When the memory decays if not touched again; None for immune types.

    The clock runs from the last access (or creation), so memories in use stay.
    """
    ttl = _ttl_days(memory.type, config)
    if ttl is None:
        return None
    start = memory.last_accessed_at or memory.created_at
    return start + timedelta(days=ttl)


def is_decayed(memory: Memory, config: DecayConfig, now: datetime) -> bool:
    """Whether a sweep at ``now`` should remove the memory.

    Always False while decay is disabled, so a caller that forgets the opt-in check
    still cannot delete anything.
    """
    if not config.enabled or is_access_immune(memory.access_count, config):
        return False
    deadline = decay_deadline(memory, config)
    return deadline is not None and now > deadline
