"""The services outside memoryd: Qdrant when it is configured, and each upstream
provider (the env's and the stored ones, as ``load_providers`` merges them).

Both are warnings when they do not answer: serve starts without them, searches fall
back to the store's own vector index, and chats to an unreachable provider fail
until it answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from memoryd.engine.doctor.network import http_probe
from memoryd.engine.doctor.report import Check, Setup, ok, prefixed, warn

if TYPE_CHECKING:
    from memoryd.config.upstreams import Provider

QDRANT_EXTRA = "pip install 'memoryd[qdrant]'"
QDRANT_SETTINGS = "PUT /api/settings/qdrant or the dashboard's Settings tab"
#: Where a provider comes from when it is not stored, and so where to fix its URL.
ENV_PROVIDERS = {"default": "MEMORYD_UPSTREAM_BASE_URL", "anthropic": "MEMORYD_ANTHROPIC_BASE_URL"}


def _known(line: Check) -> Callable[[], Check]:
    """A line decided without the network, in the probes' shape."""
    return lambda: line


def redact(url: str) -> str:
    """The URL without user and password, for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


# -- Qdrant ---------------------------------------------------------------------------


def qdrant_check(setup: Setup, settings: Mapping[str, Any]) -> Callable[[], Check]:
    """The Qdrant line: decided now, its network probe (if any) run by the caller."""
    from memoryd.config import qdrant as qdrant_config
    from memoryd.config.settings import PREFIX, normalize

    store = normalize(prefixed(settings, PREFIX)).vector_store
    cfg = qdrant_config.normalize(prefixed(settings, qdrant_config.PREFIX), setup.env)
    name = "qdrant"
    if store == "qdrant-edge":
        if find_spec("qdrant_edge") is None:
            line = warn(
                name,
                "vectorStore is qdrant-edge but qdrant-edge-py is not installed: "
                "searches use the store's own vector index",
                QDRANT_EXTRA,
            )
        else:
            line = ok(name, f"Qdrant Edge in {setup.config.data_dir / 'qdrant-edge'}")
        return _known(line)
    if not cfg.enabled:
        if store == "qdrant":
            line = warn(name, "vectorStore is qdrant but Qdrant is not enabled", QDRANT_SETTINGS)
        else:
            hint = f" (a host is set, {cfg.host}: enable Qdrant to use it)" if cfg.host else ""
            line = ok(name, f"not enabled{hint}")
        return _known(line)
    if cfg.mode == "none":
        line = warn(name, "enabled, but with neither a host nor a path", QDRANT_SETTINGS)
        return _known(line)
    if find_spec("qdrant_client") is None:
        line = warn(name, "enabled, but qdrant-client is not installed", QDRANT_EXTRA)
        return _known(line)
    if cfg.mode == "local":
        line = ok(name, f"local mode in {cfg.path}")
        return _known(line)
    url = cfg.url or ""
    headers = {"api-key": cfg.api_key} if cfg.api_key else {}
    return partial(_qdrant_probe, url, headers, setup.timeout_s)


def _qdrant_probe(url: str, headers: Mapping[str, str], timeout_s: float) -> Check:
    status, why = http_probe(f"{url}/healthz", timeout_s, headers)
    where = redact(url)
    if status is None:
        return warn(
            "qdrant",
            f"{where} unreachable ({why}): searches use the store's own vector index",
            f"start Qdrant at {where}, or fix its host and port ({QDRANT_SETTINGS}, QDRANT_HOST)",
        )
    if status in (401, 403):
        return warn(
            "qdrant",
            f"{where} answers but refuses the API key (HTTP {status})",
            f"set the right key ({QDRANT_SETTINGS}, QDRANT_API_KEY)",
        )
    return ok("qdrant", f"{where} reachable (HTTP {status})")


# -- upstream providers ---------------------------------------------------------------


def _models_url(provider: Provider) -> str:
    """What doctor asks of a provider: its model list (the gateway's /v1/models call)."""
    base = provider.base_url.rstrip("/")
    if provider.kind == "anthropic" and not base.endswith("/v1"):
        base += "/v1"  # an Anthropic base is the API root or ends in /v1 (gateway.wire)
    return f"{base}/models"


def upstream_checks(
    setup: Setup, providers: Mapping[str, Provider], stored: set[str]
) -> list[Callable[[], Check]]:
    """One line per provider (``upstream:<name>``), or one ``upstream`` line for none.
    ``stored``: the names saved in the store (the others come from the environment)."""
    from memoryd.config.upstreams import base_url_problem

    if not providers:
        line = warn(
            "upstream",
            "no provider: the gateway has nowhere to forward chats "
            "(the memory API, MCP and the dashboard work)",
            "set MEMORYD_UPSTREAM_BASE_URL (e.g. https://api.openai.com/v1), "
            "or add one: memoryd providers add NAME URL --api-key KEY",
        )
        return [_known(line)]
    probes: list[Callable[[], Check]] = []
    for provider in providers.values():
        name = f"upstream:{provider.name}"
        source = (
            "memoryd providers"
            if provider.name in stored
            else ENV_PROVIDERS.get(provider.name, "memoryd providers")
        )
        problem = base_url_problem(provider.base_url)
        if problem:
            line = warn(
                name, f"base URL {redact(provider.base_url)} {problem}", f"fix it ({source})"
            )
            probes.append(_known(line))
            continue
        probes.append(partial(_upstream_probe, provider, name, source, setup.timeout_s))
    return probes


def _upstream_probe(provider: Provider, name: str, source: str, timeout_s: float) -> Check:
    url = _models_url(provider)
    status, why = http_probe(url, timeout_s)
    if status is None:
        return warn(
            name,
            f"{redact(url)} unreachable ({why}): chats to this provider fail until it answers",
            f"check the URL ({source}) and that this machine can reach it",
        )
    if status == 404:
        return warn(
            name,
            f"{redact(url)} answers 404: the base URL may lack its API prefix, and chats "
            "would 404 too",
            f"check the base URL ({source}): OpenAI-compatible APIs usually end in /v1 "
            "(https://api.openai.com/v1)",
        )
    return ok(name, f"{redact(url)} reachable (HTTP {status} without credentials)")
