"""The memory side of one gateway request, free of HTTP: which provider serves it, what
memory it gets (``plan`` on the event loop, ``inject`` in a worker thread), and the
durable queueing of its extraction once the answer is complete."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memoryd.config.settings import MemorySettings
from memoryd.config.upstreams import Provider
from memoryd.core.injection import Sections, filter_new
from memoryd.engine import MemoryEngine
from memoryd.gateway.pipeline import (
    MODE_HEADER,
    MODES,
    SESSION_HEADERS,
    bounded_id,
    header,
    plan_memory,
    route_model,
)
from memoryd.gateway.wire import CHAT, GatewayError, WireFormat
from memoryd.models import Hit, Origin, utcnow

log = logging.getLogger("memoryd.gateway")


@dataclass
class Prepared:
    """Everything decided before the upstream call."""

    body: dict[str, Any]
    provider: Provider
    owner: str
    session_id: str
    user_text: str  # the user's new turn, to extract from ("" = none)
    extract: bool
    user_id: str = ""  # the key's end user this request names ("" = none)
    hits: list[Hit] = field(default_factory=list)
    #: The profile section's memories, and how many the profile budget left out.
    profile: list[Hit] = field(default_factory=list)
    profile_dropped: int = 0
    memory_error: str | None = None
    #: When the request came in (an erasure of its end user after that drops its facts),
    #: and its id (``x-memoryd-request-id``): the captured facts' origin.
    started: datetime = field(default_factory=utcnow)
    request_id: str | None = None

    def headers(self) -> dict[str, str]:
        every = [*self.profile, *self.hits]
        out = {
            "x-memoryd-memory-count": str(len(every)),
            "x-memoryd-memory-tokens": str(sum(h.tokens for h in every)),
            "x-memoryd-memory-ids": ",".join(h.memory.id for h in every),
            "x-memoryd-profile-ids": ",".join(h.memory.id for h in self.profile),
            "x-memoryd-profile-dropped": str(self.profile_dropped),
        }
        if self.session_id:
            out["x-memoryd-session-id"] = self.session_id
        if self.memory_error:
            out["x-memoryd-memory-error"] = "retrieval failed; request sent without memory"
        return out


def route(engine: MemoryEngine, body: dict[str, Any], fmt: WireFormat) -> tuple[Provider, Any]:
    """The provider for this request and the model id it is sent with; a 503 when none
    of the format's kind is configured, a 400 when the named one cannot speak it."""
    provider, model = route_model(body.get("model"), engine.providers(), fmt.kind)
    if provider is None:
        if fmt.kind == "anthropic":
            how = (
                "set MEMORYD_ANTHROPIC_BASE_URL (and MEMORYD_ANTHROPIC_API_KEY) or add a "
                "provider of kind anthropic with `memoryd providers add NAME URL --kind "
                "anthropic` / PUT /api/settings/providers"
            )
        else:
            how = (
                "set MEMORYD_UPSTREAM_BASE_URL (and MEMORYD_UPSTREAM_API_KEY) or add "
                "providers with `memoryd providers add` / PUT /api/settings/providers"
            )
        raise GatewayError(
            503,
            f"no upstream provider of kind {fmt.kind} configured: {how}",
            "server_error",
            "no_upstream",
        )
    if provider.kind != fmt.kind:
        raise GatewayError(
            400,
            f"provider {provider.name!r} is of kind {provider.kind}; "
            f"/v1{fmt.path} needs a provider of kind {fmt.kind}",
            "invalid_request_error",
            "provider_kind_mismatch",
            param="model",
        )
    return provider, model


def plan(
    engine: MemoryEngine, key: Any, body: dict[str, Any], headers: Any, fmt: WireFormat = CHAT
) -> tuple[Prepared, MemorySettings | None]:
    """Routing and the memory plan: the request as it goes out without memory, and the
    settings to retrieve with (``None``: nothing to retrieve). Microseconds of work
    on cached state, so it runs on the event loop."""
    provider, model = route(engine, body, fmt)
    forwarded = dict(body)
    if model is not None:
        forwarded["model"] = model
    mode = (header(headers, MODE_HEADER) or "").lower()
    if mode not in MODES:  # a typo must not silently mean "both"
        raise GatewayError(
            400,
            f"{MODE_HEADER}: must be inject-only or extract-only (got {mode[:40]!r})",
            "invalid_request_error",
            "invalid_memory_mode",
        )
    settings = engine.settings.get()
    memory = plan_memory(settings, key.memory_enabled, headers)
    session_id = bounded_id(header(headers, *SESSION_HEADERS) or "")
    turn = fmt.new_turn(body)
    prepared = Prepared(
        forwarded,
        provider,
        key.id,
        session_id,
        turn,
        extract=memory.extract and bool(turn),
        user_id=fmt.end_user(headers, body),
    )
    return prepared, settings if memory.inject else None


def inject(
    engine: MemoryEngine,
    prepared: Prepared,
    body: dict[str, Any],
    settings: MemorySettings,
    fmt: WireFormat = CHAT,
) -> Prepared:
    """Retrieval and injection (database and model work: runs in a worker thread).
    A failure sends the request on without memory and says so in a header. Also
    decides, off the event loop, whether the turn is worth an extraction job."""
    if prepared.extract:
        try:
            prepared.extract = engine.worth_extracting(prepared.user_text, settings)
        except Exception:  # when in doubt, queue it: the job decides again
            log.warning("extraction pre-check failed", exc_info=True)
    try:
        profile, hits = engine.recall(
            prepared.owner,
            fmt.query(body),
            session_id=prepared.session_id or None,
            settings=settings,
            user_id=prepared.user_id,
        )
        always = filter_new(profile.hits, body, lambda h: h.memory.content)
        hits = filter_new(hits, body, lambda h: h.memory.content)
        placed = fmt.inject(
            prepared.body,
            Sections([h.memory.content for h in always], [h.memory.content for h in hits]),
            prepared.provider,
            prepared.body.get("model"),
        )
        prepared.body = placed.body
        if placed.placement != "none":
            prepared.hits, prepared.profile = hits, always
            prepared.profile_dropped = len(profile.dropped)
    except Exception as exc:  # memory must never fail the chat request
        log.exception("memory retrieval failed; forwarding without memory")
        engine.extraction_stats.setdefault("retrievalFailures", 0)
        engine.extraction_stats["retrievalFailures"] += 1
        prepared.memory_error = str(exc)
    return prepared


#: How long the answer's last byte may wait for the extraction job's commit.
DURABLE_WAIT_S = 5.0


async def extract(engine: MemoryEngine, prepared: Prepared, assistant_text: str) -> None:
    """Queue the exchange's extraction and wait (briefly, without blocking the loop)
    until the job is committed, so an acknowledged exchange survives a crash."""
    if not prepared.extract:
        return
    durable = engine.submit_extraction(
        prepared.owner,
        user_text=prepared.user_text,
        assistant_text=assistant_text or None,
        session_id=prepared.session_id,
        user_id=prepared.user_id,
        origin=Origin(prepared.started, prepared.request_id),
    )
    if durable is not None:
        try:
            # shielded: a client that disconnects meanwhile must not cancel the job
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(durable)), DURABLE_WAIT_S)
        except TimeoutError:  # the writer is stalled: answer anyway, the job is queued
            log.warning("extraction job not committed within %.0f s", DURABLE_WAIT_S)
