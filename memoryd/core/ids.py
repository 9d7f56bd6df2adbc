"""Ids a request names (an end user, a session), bounded the one way every interface
agrees on: the gateway stores by it, and an erasure finds by it. Pure, stdlib-only."""

from __future__ import annotations

import hashlib

#: The store's limit for an end user's or a session's id.
MAX_ID_CHARS = 200
#: The longest id an interface takes from a caller (it is stored as a digest).
MAX_NAMED_CHARS = 4096


def bounded_id(value: str) -> str:
    """An end user or session named by a request, at most ``MAX_ID_CHARS`` long (the
    store's limit). A longer one becomes a digest of all of it: cutting it to its first
    200 characters made two ids sharing that prefix one owner, who then read the other's
    memories; rejecting it would fail a request the provider accepts. So does one with
    control characters, which the store refuses (the turn's facts were lost)."""
    if len(value) <= MAX_ID_CHARS and value.isprintable():
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha256:{digest}"
