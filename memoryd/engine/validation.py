"""Input rules every interface shares: owners, keys, contents, metadata.

Kept apart from the engine so REST, MCP and the CLI reject the same things with the
same messages (each error names its field).
"""

from __future__ import annotations

import hashlib

from memoryd.core.extraction import slugify
from memoryd.core.jsondepth import MAX_JSON_DEPTH, non_finite, value_too_deep
from memoryd.errors import field_error
from memoryd.models import MemoryType, NewMemory

MAX_OWNER_CHARS = 200
MAX_KEY_CHARS = 500
MAX_METADATA_CHARS = 65_536
#: Metadata is stored and rendered inside larger documents (a listing, an export line,
#: a request body at most ``MAX_JSON_DEPTH`` deep), so it gets a little less.
MAX_METADATA_DEPTH = MAX_JSON_DEPTH - 4


def require_owner(owner: object, field: str = "apiKeyId") -> str:
    """An owner id is a non-empty string; "" never means "every owner"."""
    if not isinstance(owner, str) or not owner.strip():
        raise field_error(field, "owner id must be a non-empty string")
    if len(owner) > MAX_OWNER_CHARS or any(ord(c) < 32 for c in owner):
        raise field_error(field, f"owner id must be at most {MAX_OWNER_CHARS} printable chars")
    return owner


def derive_key(memory_type: MemoryType, content: str) -> str:
    """A content-addressed key: re-adding the same text upserts instead of duplicating."""
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:10]
    slug = slugify(content) or "memory"
    return f"{memory_type.value}:{slug}:{digest}"


def check_content(content: object, max_chars: int) -> None:
    if not isinstance(content, str) or not content.strip():
        raise field_error("content", "must be a non-empty string")
    if len(content) > max_chars:
        raise field_error("content", f"longer than {max_chars} chars")


def check_key(key: object) -> None:
    if not isinstance(key, str) or not key.strip():
        raise field_error("key", "must be a non-empty string")
    if len(key) > MAX_KEY_CHARS:
        raise field_error("key", f"longer than {MAX_KEY_CHARS} chars")


def check_metadata(metadata: object) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise field_error("metadata", "must be a JSON object")
    deep = value_too_deep(metadata, MAX_METADATA_DEPTH)
    if deep is not None:  # before repr(), which recurses
        where = f"metadata.{deep}" if deep != "(root)" else "metadata"
        raise field_error("metadata", f"nested deeper than {MAX_METADATA_DEPTH} levels ({where})")
    odd = non_finite(metadata)
    if odd is not None:
        where = f"metadata.{odd}" if odd != "(root)" else "metadata"
        raise field_error("metadata", f"{where}: NaN and infinite numbers are not JSON")
    if len(repr(metadata)) > MAX_METADATA_CHARS:
        raise field_error("metadata", f"larger than {MAX_METADATA_CHARS} chars")


def check_new(new: NewMemory, max_chars: int) -> str:
    """Validate a new memory; returns its key (derived when not given)."""
    require_owner(new.api_key_id)
    check_content(new.content, max_chars)
    if not isinstance(new.type, MemoryType):
        raise field_error("type", "must be factual, episodic, procedural or semantic")
    check_metadata(new.metadata)
    key = new.key if new.key is not None else derive_key(new.type, new.content)
    check_key(key)
    if not isinstance(new.session_id, str) or len(new.session_id) > MAX_OWNER_CHARS:
        raise field_error("sessionId", f"must be a string of at most {MAX_OWNER_CHARS} chars")
    check_user_id(new.user_id)
    return key


def check_user_id(user_id: object) -> None:
    """An end user as every interface names it ("" for the key's shared memories). One
    the gateway could never name (it strips what a request says; no control
    characters in a header) would be stored out of every end user's reach."""
    if not isinstance(user_id, str) or len(user_id) > MAX_OWNER_CHARS:
        raise field_error("userId", f"must be a string of at most {MAX_OWNER_CHARS} chars")
    if user_id and (user_id != user_id.strip() or not user_id.isprintable()):
        raise field_error(
            "userId", "must not be blank, start or end with spaces, or hold control characters"
        )
