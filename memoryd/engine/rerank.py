"""Optional reranking of retrieval candidates by a remote ``/rerank`` endpoint.

The Cohere/Jina/OpenAI-compatible shape: ``POST {baseUrl}/rerank`` with
``{model, query, documents, top_n}`` answering ``{results: [{index, relevance_score}]}``.
Fail-open: any error, timeout (5 s) or odd answer keeps the original order and says
why. Candidates the reranker does not mention keep their relative order after the
ones it ranked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import httpx

from memoryd.config.settings import MemorySettings
from memoryd.config.upstreams import Provider
from memoryd.models import Hit, Resolution

log = logging.getLogger(__name__)

TIMEOUT_S = 5.0


def rerank(
    hits: Sequence[Hit], query: str, provider: Provider, model: str, *, timeout_s: float = TIMEOUT_S
) -> tuple[list[Hit], str | None]:
    """``(reordered hits, None)`` on success, ``(original hits, reason)`` otherwise."""
    original = list(hits)
    if len(original) < 2:
        return original, None
    body = {
        "model": model,
        "query": query,
        "documents": [h.memory.content for h in original],
        "top_n": len(original),
    }
    headers = {"Authorization": f"Bearer {provider.api_key}"} if provider.api_key else {}
    try:
        response = httpx.post(
            f"{provider.base_url}/rerank", json=body, headers=headers, timeout=timeout_s
        )
        if response.status_code != 200:
            return original, f"rerank failed: HTTP {response.status_code}"
        results: Any = response.json().get("results")
        if not isinstance(results, list) or not results:
            return original, "rerank failed: no results"
        order: list[Hit] = []
        seen: set[int] = set()
        for item in results:
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get("relevance_score") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < len(original) or index in seen:
                continue
            seen.add(index)
            hit = original[index]
            order.append(
                replace(hit, score=float(score)) if isinstance(score, int | float) else hit
            )
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        log.warning("rerank failed open: %s", exc)
        return original, f"rerank failed: {type(exc).__name__}"
    order += [h for i, h in enumerate(original) if i not in seen]
    return order, None


def apply(
    ranked: list[Hit],
    query: str,
    providers: Mapping[str, Provider],
    settings: MemorySettings,
    resolution: Resolution,
) -> list[Hit]:
    """Retrieval's rerank step: ``rerankProviderModel``'s provider reorders ``ranked``,
    and ``resolution`` records that it did, or why it did not."""
    name, _, model = (settings.rerank_provider_model or "").partition("/")
    provider = providers.get(name)
    if provider is None:
        resolution.fallback_reason = f"rerank provider {name!r} is not configured"
        return ranked
    reordered, failure = rerank(ranked, query, provider, model)
    if failure:
        resolution.fallback_reason = failure
    else:
        resolution.rerank_applied = True
    return reordered
