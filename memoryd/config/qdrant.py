"""Qdrant settings (docs/design/vectors.md#qdrant): normalized on read, strict on write,
key never shown.

Stored in the ``settings`` table under ``qdrant.<field>``. Reads never fail and fall
back field by field to the environment (``QDRANT_HOST``, ``QDRANT_PORT``,
``QDRANT_API_KEY``, ``QDRANT_COLLECTION``) and then to the defaults, the way the
reference's ``normalizeQdrantConfig`` does: only a boolean ``true`` enables, a numeric
string port is read as a number, a blank API key counts as none, an unknown
quantization is ``none``. Writes are strict: unknown fields, wrong types, a port
outside 1..65535, an empty collection name or an unknown quantization are a
``ValidationError`` naming the field; ``apiKey: ""`` removes the stored key.

``embeddingModel`` (the reference's Qdrant embedder) is accepted and kept so an
OmniRoute client's body and a round trip through GET work, but it chooses nothing:
memoryd embeds for Qdrant with the active memory embedder (the memory settings'
``embeddingSource``/``embeddingProviderModel``), one embedder for every tier, and the
API answers say which (``embeddingModelInUse``). The reference's ``vectorSize`` and
``hnswEfConstruct`` stay refused: the collection is created with the embedder's real
vector size, so they could only disagree with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from memoryd.config.options import default
from memoryd.core.masking import mask_secret
from memoryd.errors import ValidationError
from memoryd.models import utcnow
from memoryd.storage.base import Store, Writer

PREFIX = "qdrant."
DEFAULT_PORT: int = default("QDRANT_PORT")
DEFAULT_COLLECTION: str = default("QDRANT_COLLECTION")
QUANTIZATIONS = ("none", "int8", "binary")
#: Qdrant rejects ``/`` and a few other characters in collection names; stay portable.
COLLECTION_RE = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")
FIELDS = (
    "enabled",
    "host",
    "port",
    "apiKey",
    "collection",
    "path",
    "quantization",
    "embeddingModel",
)
MAX_MODEL_CHARS = 200


@dataclass(frozen=True, slots=True)
class QdrantConfig:
    enabled: bool = False
    host: str = ""
    port: int = DEFAULT_PORT
    api_key: str | None = None
    collection: str = DEFAULT_COLLECTION
    path: str | None = None
    quantization: str = "none"
    #: Kept for OmniRoute clients; never used to embed (see the module docstring).
    embedding_model: str | None = None

    @property
    def mode(self) -> str:
        """``local`` (embedded, ``path``), ``server`` (``host``) or ``none``."""
        if self.path:
            return "local"
        return "server" if self.host else "none"

    @property
    def url(self) -> str | None:
        """The server's base URL: ``http://`` added when the host has no scheme, the
        port added when the URL has none (reference behaviour)."""
        if not self.host:
            return None
        raw = self.host if "://" in self.host else f"http://{self.host}"
        parts = urlsplit(raw)
        if parts.port is None:
            netloc = f"{parts.netloc}:{self.port}"
            raw = parts._replace(netloc=netloc).geturl()
        return raw.rstrip("/")

    @property
    def location(self) -> str:
        """Where the points live, for status and the sync identity (never the key)."""
        if self.path:
            return f"local:{self.path}"
        return f"server:{self.url}" if self.host else "none"

    def public(self) -> dict[str, Any]:
        """The API shape: the key only as ``hasApiKey`` and ``apiKeyMasked``."""
        return {
            "enabled": self.enabled,
            "host": self.host,
            "port": self.port,
            "collection": self.collection,
            "path": self.path,
            "quantization": self.quantization,
            "embeddingModel": self.embedding_model,
            "hasApiKey": bool(self.api_key),
            "apiKeyMasked": mask_secret(self.api_key),
        }


def _text(value: object) -> str | None:
    """A trimmed non-blank string, or None."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _port(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and math.isfinite(value):
        return round(value)
    if isinstance(value, str) and value.strip():
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return round(number) if math.isfinite(number) and number else None
    return None


def normalize(raw: Mapping[str, Any], env: Mapping[str, str] | None = None) -> QdrantConfig:
    """The effective config from stored values, then env fallbacks, then defaults."""
    env = env or {}
    stored = raw.get("port")
    port = _port(stored)
    if port is None and isinstance(stored, str) and stored.strip():
        port = DEFAULT_PORT  # a stored non-numeric string: the default, not the env
    if port is None:
        port = _port(env.get("QDRANT_PORT")) or DEFAULT_PORT
    if not 1 <= port <= 65535:
        port = DEFAULT_PORT
    quantization = raw.get("quantization")
    return QdrantConfig(
        enabled=raw.get("enabled") is True,
        host=_text(raw.get("host")) or _text(env.get("QDRANT_HOST")) or "",
        port=port,
        api_key=_text(raw.get("apiKey")) or _text(env.get("QDRANT_API_KEY")),
        collection=_text(raw.get("collection"))
        or _text(env.get("QDRANT_COLLECTION"))
        or DEFAULT_COLLECTION,
        path=_text(raw.get("path")),
        quantization=quantization if quantization in QUANTIZATIONS else "none",
        embedding_model=_text(raw.get("embeddingModel")),
    )


def load(store: Store, env: Mapping[str, str] | None = None) -> QdrantConfig:
    return normalize(store.read().settings(PREFIX), env)


def save(store: Store, values: Mapping[str, Any]) -> None:
    """Store validated values; ``None`` deletes the stored field (env/default again)."""
    now = utcnow()

    def apply(tx: Writer) -> None:
        tx.write_settings({k: v for k, v in values.items() if v is not None}, now, PREFIX)
        tx.delete_settings((k for k, v in values.items() if v is None), PREFIX)

    store.write(apply)


def _bad(name: str, message: str) -> ValidationError:
    return ValidationError(f"{name}: {message}", details=[{"field": name, "message": message}])


def validate_update(partial: Mapping[str, Any]) -> dict[str, Any]:
    """Check a camelCase partial update strictly; return the values to store
    (``None`` = remove the stored value)."""
    if not isinstance(partial, Mapping):
        raise ValidationError("Qdrant settings must be a JSON object")
    unknown = sorted(str(k) for k in set(partial) - set(FIELDS))
    if unknown:
        raise ValidationError(
            f"unknown Qdrant settings field(s): {', '.join(unknown)}",
            details=[{"field": u, "message": "unknown field"} for u in unknown],
        )
    out: dict[str, Any] = {}
    for name, value in partial.items():
        if name == "enabled":
            if not isinstance(value, bool):
                raise _bad(name, "must be true or false")
            out[name] = value
        elif name == "port":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
                raise _bad(name, "must be a whole number from 1 to 65535")
            out[name] = value
        elif name == "collection":
            if not isinstance(value, str) or not COLLECTION_RE.match(value.strip()):
                raise _bad(name, "must be 1-255 letters, digits, '_', '-' or '.'")
            out[name] = value.strip()
        elif name == "quantization":
            if value not in QUANTIZATIONS:
                raise _bad(name, "must be one of none, int8, binary")
            out[name] = value
        elif name == "host":
            out[name] = _check_host(value)
        elif name == "path":
            if value is not None and not isinstance(value, str):
                raise _bad(name, "must be a directory path, or empty to use a server")
            out[name] = _check_path(_text(value))
        elif name == "apiKey":
            if not isinstance(value, str) or len(value) > 4000:
                raise _bad(name, 'must be a string ("" removes the stored key)')
            out[name] = _text(value)
        elif name == "embeddingModel":
            out[name] = _check_model(value)
    return out


def _check_model(value: object) -> str | None:
    """OmniRoute's ``provider/model`` for Qdrant, kept as given (``""``/null remove it)."""
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or len(value) > MAX_MODEL_CHARS
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
    ):
        raise _bad(
            "embeddingModel", f"must be a model name of at most {MAX_MODEL_CHARS} printable chars"
        )
    return _text(value)


def _check_host(value: object) -> str:
    if not isinstance(value, str) or len(value) > 2000:
        raise _bad("host", "must be a host name or URL")
    host = value.strip()
    if not host:
        return ""
    if any(ch.isspace() for ch in host):
        raise _bad("host", "must not contain spaces")
    if "://" in host:
        scheme = host.split("://", 1)[0].lower()
        if scheme not in ("http", "https"):
            raise _bad("host", "scheme must be http or https")
    try:
        parts = urlsplit(host if "://" in host else f"http://{host}")
        _ = parts.port  # raises ValueError for a port outside 0..65535 or not a number
    except ValueError as exc:
        raise _bad("host", f"not a valid host: {exc}") from None
    if not parts.hostname:
        raise _bad("host", "must name a host")
    return host


def merged(current: QdrantConfig, values: Mapping[str, Any]) -> QdrantConfig:
    """``current`` with validated ``values`` applied (for previews and tests)."""
    changes: dict[str, Any] = {}
    for name, value in values.items():
        field = {"apiKey": "api_key", "embeddingModel": "embedding_model"}.get(name, name)
        if field in ("path", "api_key", "embedding_model") or value is not None:
            changes[field] = value
    return replace(current, **changes)


# -- quantization, in Qdrant's REST shapes (the backends turn these into their types) --


def quantization_config(quantization: str) -> dict[str, Any] | None:
    """int8 = scalar, quantile 0.99, always in RAM; binary = binary in RAM."""
    if quantization == "int8":
        return {"scalar": {"type": "int8", "always_ram": True, "quantile": 0.99}}
    if quantization == "binary":
        return {"binary": {"always_ram": True}}
    return None


def search_quantization_params(quantization: str) -> dict[str, Any] | None:
    """Quantized collections rescore the candidates with the original vectors."""
    if quantization == "int8":
        return {"quantization": {"rescore": True}}
    if quantization == "binary":  # coarse codes: rescore 3x the candidates
        return {"quantization": {"rescore": True, "oversampling": 3.0}}
    return None


def _check_path(value: str | None) -> str | None:
    """Local mode creates its directory: only an absolute path whose parent already
    exists (and is not the filesystem root) is accepted, so a typo or a hostile value
    cannot scatter directories around the disk."""
    if value is None:
        return None
    import os

    if any(ord(c) < 32 for c in value) or not os.path.isabs(value):
        raise _bad("path", "must be an absolute directory path")
    normalized = os.path.normpath(value)
    parent = os.path.dirname(normalized)
    if parent in ("", os.sep) or not os.path.isdir(parent):
        raise _bad("path", f"the parent directory of {normalized!r} must exist")
    return normalized
