"""Memory settings (docs/design/interfaces.md#settings): stored in SQLite, normalized on
read, strict on write.

Reads never fail: a stored value of the wrong type or outside its set falls back to
the default, numbers are rounded and clamped. Writes are strict (unknown fields, wrong
types and out-of-range numbers are a ValidationError naming the field), so a typo in
an API call is an error instead of a silent default. The service caches the
normalized object, drops the cache on every write through it, and re-reads after a
short TTL so writes by another process (the CLI next to a server) are seen.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from memoryd.core.profile import PROFILE_TOKENS
from memoryd.errors import ValidationError
from memoryd.models import utcnow
from memoryd.storage.base import Store

STRATEGIES = ("recent", "semantic", "hybrid")
SCOPES = ("session", "apiKey", "global")
EXTRACT_SOURCES = ("user", "assistant")
EMBEDDING_SOURCES = ("remote", "static", "transformers", "auto")
VECTOR_STORES = ("sqlite-vec", "qdrant", "qdrant-edge", "auto")
EXTRACTION_MODES = ("rules", "llm", "hybrid")
#: Bounds of ``extractionTimeoutMs`` and ``extractionDailyTokenCap`` (0 = no cap).
EXTRACTION_TIMEOUT_MS = (100, 120_000)
MAX_DAILY_TOKEN_CAP = 1_000_000_000
PREFIX = "memory."
#: Calibrated on bench/data/relevance and LoCoMo (docs/benchmarks/relevance.md).
RELEVANCE_FLOOR = 0.2


@dataclass(frozen=True, slots=True)
class MemorySettings:
    enabled: bool = True
    max_tokens: int = 2000
    retention_days: int | None = None  # None: keep until expiry or deletion
    strategy: str = "hybrid"
    scope: str = "apiKey"
    extract_from: tuple[str, ...] = ("user",)
    embedding_source: str = "auto"
    embedding_provider_model: str | None = None
    transformers_enabled: bool = True
    static_enabled: bool = False
    rerank_enabled: bool = False
    rerank_provider_model: str | None = None
    vector_store: str = "auto"
    min_score: float | None = None
    #: Per hit: a candidate found only by meaning (no keyword match) must reach this
    #: cosine similarity to be injected; null/0 turns the floor off.
    relevance_floor: float | None = RELEVANCE_FLOOR
    #: ``llm`` / ``hybrid`` add the opt-in LLM extractor (``memoryd.engine.llm_extraction``).
    extraction_mode: str = "rules"
    #: None: the ``default`` provider with ``llm_extraction.DEFAULT_MODEL``.
    extraction_provider_model: str | None = None
    extraction_timeout_ms: int = 15000
    extraction_daily_token_cap: int = 0  # tokens per UTC day; 0 = no cap
    #: Tokens each key may spend on LLM extraction per UTC month; 0 = no cap. A key
    #: over it is extracted by the rules alone.
    extraction_key_monthly_token_cap: int = 0
    #: Hold a message the guard refuses (it steers the assistant) for review instead
    #: of dropping it (``/api/memory/quarantine``); it is never injected meanwhile.
    quarantine_guarded: bool = False
    #: The profile every request carries; 0 turns it off.
    profile_max_tokens: int = PROFILE_TOKENS
    #: Keys whose shared memories (stored with no end user) reach the end users they
    #: name; ``*`` every key. Empty by default: one person's words do not reach another.
    #: Standing instructions given with no end user never do.
    share_with_end_users: tuple[str, ...] = ()

    def shares(self, key_id: str) -> bool:
        """Whether this key's shared memories reach the end users it names."""
        return "*" in self.share_with_end_users or key_id in self.share_with_end_users

    @property
    def retrieval_strategy(self) -> str:
        """The engine's name for the strategy (the UI's ``recent`` is ``exact``)."""
        return "exact" if self.strategy == "recent" else self.strategy

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["extract_from"] = list(self.extract_from)
        data["share_with_end_users"] = list(self.share_with_end_users)
        return {_CAMEL[name]: value for name, value in data.items()}


_CAMEL = {
    f.name: "".join(p if i == 0 else p.capitalize() for i, p in enumerate(f.name.split("_")))
    for f in fields(MemorySettings)
}
_SNAKE = {camel: snake for snake, camel in _CAMEL.items()}
FIELDS = tuple(_SNAKE)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _clamp_int(value: object, low: int, high: int) -> int | None:
    if not _is_number(value):
        return None
    assert isinstance(value, int | float)
    return max(low, min(high, round(value)))


def _provider_model(value: object) -> str | None:
    if isinstance(value, str) and value.strip() and "/" in value.strip():
        return value.strip()
    return None


_PROVIDER_MODELS = {
    "embedding_provider_model",
    "rerank_provider_model",
    "extraction_provider_model",
}


def _normalize_field(name: str, value: object, default: Any) -> Any:
    """The normalized value of one field, or ``default`` when unusable."""
    if name in {
        "enabled",
        "transformers_enabled",
        "static_enabled",
        "rerank_enabled",
        "quarantine_guarded",
    }:
        return value if isinstance(value, bool) else default
    if name == "max_tokens":
        clamped = _clamp_int(value, 0, 16000)
        return default if clamped is None else clamped
    if name == "retention_days":
        if value is None or value == 0:
            return None
        clamped = _clamp_int(value, 1, 365)
        return default if clamped is None else clamped
    if name == "extraction_timeout_ms":
        clamped = _clamp_int(value, *EXTRACTION_TIMEOUT_MS)
        return default if clamped is None else clamped
    if name == "profile_max_tokens":
        clamped = _clamp_int(value, 0, 2000)
        return default if clamped is None else clamped
    if name == "share_with_end_users":
        if not isinstance(value, list | tuple) or len(value) > 1000:
            return default
        if all(isinstance(v, str) and 0 < len(v) <= 200 for v in value):
            return tuple(dict.fromkeys(value))
        return default
    if name in ("extraction_daily_token_cap", "extraction_key_monthly_token_cap"):
        if value is None:
            return 0
        clamped = _clamp_int(value, 0, MAX_DAILY_TOKEN_CAP)
        return default if clamped is None else clamped
    choices = {
        "strategy": STRATEGIES,
        "scope": SCOPES,
        "embedding_source": EMBEDDING_SOURCES,
        "vector_store": VECTOR_STORES,
        "extraction_mode": EXTRACTION_MODES,
    }.get(name)
    if choices is not None:
        return value if value in choices else default
    if name == "extract_from":
        if isinstance(value, list | tuple) and all(v in EXTRACT_SOURCES for v in value):
            return tuple(dict.fromkeys(value))
        return default
    if name in _PROVIDER_MODELS:
        return _provider_model(value)
    if name == "relevance_floor":
        if value is None or value == 0:
            return None
        if not _is_number(value):
            return default
        assert isinstance(value, int | float)
        return max(0.0, min(1.0, float(value)))
    if name == "min_score":
        if value is None or not _is_number(value):
            return None
        assert isinstance(value, int | float)
        return max(0.0, min(1.0, float(value)))
    raise KeyError(name)


def normalize(raw: Mapping[str, Any], defaults: MemorySettings | None = None) -> MemorySettings:
    """Settings from stored camelCase values; never raises."""
    base = defaults or MemorySettings()
    values = {}
    for camel, snake in _SNAKE.items():
        default = getattr(base, snake)
        values[snake] = _normalize_field(snake, raw[camel], default) if camel in raw else default
    return MemorySettings(**values)


def _bad(name: str, message: str) -> ValidationError:
    return ValidationError(f"{name}: {message}", details=[{"field": name, "message": message}])


def validate_update(partial: Mapping[str, Any]) -> dict[str, Any]:
    """Check a camelCase partial update strictly; return the values to store."""
    if not isinstance(partial, Mapping):
        raise ValidationError("settings must be a JSON object")
    unknown = sorted(set(partial) - set(_SNAKE))
    if unknown:
        raise ValidationError(
            f"unknown settings field(s): {', '.join(map(str, unknown))}",
            details=[{"field": str(u), "message": "unknown field"} for u in unknown],
        )
    out: dict[str, Any] = {}
    for camel, value in partial.items():
        snake = _SNAKE[camel]
        if snake == "max_tokens" and not (_is_number(value) and 0 <= value <= 16000):
            raise _bad(camel, "must be a number from 0 to 16000")
        if snake == "profile_max_tokens" and not (_is_number(value) and 0 <= value <= 2000):
            raise _bad(camel, "must be a number from 0 (no profile) to 2000")
        if snake == "share_with_end_users" and _normalize_field(snake, value, None) is None:
            raise _bad(camel, 'must be a list of key ids (or ["*"] for every key)')
        if snake == "retention_days" and not (
            value is None or (_is_number(value) and 0 <= value <= 365)
        ):
            raise _bad(camel, "must be null or 0 (keep memories) or a number of days, 1 to 365")
        if (
            snake in ("min_score", "relevance_floor")
            and value is not None
            and not (_is_number(value) and 0 <= value <= 1)
        ):
            raise _bad(camel, "must be null or a number from 0 to 1")
        low, high = EXTRACTION_TIMEOUT_MS
        if snake == "extraction_timeout_ms" and not (_is_number(value) and low <= value <= high):
            raise _bad(camel, f"must be a number from {low} to {high}")
        if (
            snake in ("extraction_daily_token_cap", "extraction_key_monthly_token_cap")
            and value is not None
            and not (_is_number(value) and 0 <= value <= MAX_DAILY_TOKEN_CAP)
        ):
            raise _bad(camel, f"must be null or a number from 0 to {MAX_DAILY_TOKEN_CAP}")
        if snake in _PROVIDER_MODELS:
            if value is None or value == "":
                out[camel] = None
                continue
            if _provider_model(value) is None:
                raise _bad(camel, 'must be "provider/model" or null')
        sentinel = object()
        normalized = _normalize_field(snake, value, sentinel)
        if normalized is sentinel:
            raise _bad(camel, f"invalid value {value!r}")
        out[camel] = list(normalized) if isinstance(normalized, tuple) else normalized
    return out


@dataclass
class SettingsService:
    """Cached, DB-backed settings. ``defaults`` lets bootstrap decide install-dependent
    defaults (``transformersEnabled`` is true only when the local model is installed)."""

    store: Store
    defaults: MemorySettings = field(default_factory=MemorySettings)
    ttl_s: float = 2.0
    clock: Callable[[], float] = time.monotonic
    _cached: MemorySettings | None = None
    _loaded_at: float = 0.0
    _generation: int = 0  # bumped by every invalidation
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self) -> MemorySettings:
        with self._lock:
            if self._cached is not None and self.clock() - self._loaded_at < self.ttl_s:
                return self._cached
            generation = self._generation
        settings = normalize(self.store.read().settings(PREFIX), self.defaults)
        with self._lock:
            # a read that began before a write's invalidation may hold the old values:
            # it answers its own caller, but is not cached for the next TTL
            if generation == self._generation:
                self._cached, self._loaded_at = settings, self.clock()
        return settings

    def update(self, partial: Mapping[str, Any]) -> MemorySettings:
        values = validate_update(partial)
        now = utcnow()
        self.store.write(lambda tx: tx.write_settings(values, now, PREFIX))
        self.invalidate()
        return self.get()

    def invalidate(self) -> None:
        with self._lock:
            self._cached = None
            self._generation += 1

    def with_overrides(self, **changes: Any) -> MemorySettings:
        """The current settings with some fields replaced (per-request views)."""
        return replace(self.get(), **changes)
