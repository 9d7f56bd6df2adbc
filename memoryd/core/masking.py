"""How a stored secret (a provider key, the Qdrant API key) is shown back: enough to
recognise it, never enough to use it. Every interface masks the same way."""

from __future__ import annotations


def mask_secret(secret: str | None) -> str | None:
    """``sk-a…wxyz``. At least 12 characters always stay hidden: a short key shows its
    last two or nothing."""
    if not secret:
        return None
    if len(secret) >= 20:
        return f"{secret[:4]}…{secret[-4:]}"
    if len(secret) >= 14:
        return "…" + secret[-2:]
    return "…"


def redacted_url(url: str) -> str:
    """``url`` without credentials or a query (``https://u:p@h/v1?key=x`` ->
    ``https://h/v1``): fit for a log line."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    netloc = f"[{host}]{port}" if ":" in host else f"{host}{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
