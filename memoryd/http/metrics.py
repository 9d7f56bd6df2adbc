"""Prometheus metrics in the text exposition format (version 0.0.4), stdlib only.

``install_metrics(app)`` adds a pure-ASGI middleware that counts every HTTP request
and observes its latency, labelled by the *route template* (``/api/memory/{memory_id}``,
never the raw path, so ids do not explode the label space; ``unmatched`` for 404s of
unknown paths), and ``GET /metrics`` (no auth) rendering:

- ``memoryd_http_requests_total{method,route,status}`` (counter)
- ``memoryd_http_request_duration_seconds{method,route}`` (histogram)
- ``memoryd_memories_stored`` (gauge: rows in ``memories``)
- ``memoryd_retrievals_total{tier}`` (counter: one per ``engine.retrieve()`` call,
  labelled by the tier that served it, ``none`` when nothing was found; plus
  whatever is recorded through ``Metrics.record_retrieval``)
- ``memoryd_extractions_total{result}`` (counter: scheduled, stored, failed)
- ``memoryd_extraction_llm_calls_total{outcome}`` (counter: LLM extraction runs, ``ok``
  or the fallback reason; ``cap`` and ``config`` runs made no upstream request) and
  ``memoryd_extraction_llm_tokens_total{kind}`` (counter: ``prompt``, ``completion``)
- ``memoryd_key_injected_tokens_total{key}``, ``memoryd_key_injected_requests_total{key}``
  and ``memoryd_key_llm_extraction_tokens_total{key,kind}`` (counters: cost per client key;
  key ids are the server's own, never a client-supplied value)
- ``memoryd_gateway_events_total{event}`` (counter: ``concurrency_limited``,
  ``pool_exhausted``, ``stream_broken``)
- ``memoryd_connections_closed_total{reason}`` (counter: ``over_cap``,
  ``header_timeout``, ``body_timeout``; ``memoryd serve`` only)
- ``memoryd_embedding_latency_ms_mean`` and ``memoryd_reindex_pending`` (gauges)

Counters live in a ``Metrics`` object at ``app.state.metrics`` behind one lock; the
gauges are read from the engine at scrape time, so recording costs a dict update.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.http.deps import bearer_token, is_admin_token

if TYPE_CHECKING:
    from memoryd.engine import MemoryEngine
    from memoryd.models import Hit

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4"
#: Seconds. Most routes answer in well under 10 ms; imports and reindex take longer.
DURATION_BUCKETS: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
UNMATCHED = "unmatched"
GATEWAY_EVENTS = ("concurrency_limited", "share_limited", "pool_exhausted", "stream_broken")


def escape_label(value: str) -> str:
    """A label value as the exposition format wants it: ``\\``, ``"`` and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{name}="{escape_label(value)}"' for name, value in pairs)
    return "{" + inner + "}" if inner else ""


class _Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self, size: int) -> None:
        self.counts = [0] * (size + 1)  # the last slot is +Inf
        self.sum = 0.0


class _Family:
    """Text of one metric family: HELP, TYPE, then its samples."""

    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.lines = [f"# HELP {name} {_escape_help(help_text)}", f"# TYPE {name} {kind}"]

    def sample(self, name: str, labels: Sequence[tuple[str, str]], value: float) -> None:
        self.lines.append(f"{name}{_labels(labels)} {format_value(value)}")


class Metrics:
    """Thread-safe counters and histograms; gauges are pulled from the engine."""

    def __init__(self, buckets: Sequence[float] = DURATION_BUCKETS) -> None:
        self.buckets = tuple(sorted(buckets))
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str], int] = {}
        self._durations: dict[tuple[str, str], _Histogram] = {}
        self._retrievals: dict[str, int] = {}
        self._gateway: dict[str, int] = {}
        self._injected: dict[str, list[int]] = {}  # per key: requests, tokens

    # -- recording ---------------------------------------------------------------------

    def record_injected(self, key_id: str, tokens: int) -> None:
        """A gateway request of ``key_id`` carried ``tokens`` of memory (cost per key:
        key ids are the server's own, so the label space is the number of keys)."""
        with self._lock:
            seen = self._injected.setdefault(key_id, [0, 0])
            seen[0] += 1
            seen[1] += tokens

    def injected_for(self, key_id: str) -> tuple[int, int]:
        """``(requests, tokens)`` of memory ``key_id``'s gateway requests carried."""
        with self._lock:
            requests, tokens = self._injected.get(key_id, (0, 0))
            return requests, tokens

    def record_request(self, method: str, route: str, status: int, seconds: float) -> None:
        # bisect_left: a value equal to a bound belongs to that bucket (le = "<=").
        index = bisect_left(self.buckets, seconds)
        with self._lock:
            key = (method, route, str(status))
            self._requests[key] = self._requests.get(key, 0) + 1
            hist = self._durations.get((method, route))
            if hist is None:
                hist = self._durations[(method, route)] = _Histogram(len(self.buckets))
            hist.counts[index] += 1
            hist.sum += seconds

    def record_retrieval(self, tier: str) -> None:
        """Count one retrieval served by ``tier`` (``engine.retrieve()`` calls are
        counted automatically; use this for retrievals that bypass it)."""
        with self._lock:
            self._retrievals[tier] = self._retrievals.get(tier, 0) + 1

    def record_gateway(self, event: str) -> None:
        """Count a gateway event: ``concurrency_limited`` (a key's 429),
        ``pool_exhausted`` (503), ``stream_broken`` (an upstream stream cut off)."""
        with self._lock:
            self._gateway[event] = self._gateway.get(event, 0) + 1

    def gateway_count(self, event: str) -> int:
        with self._lock:
            return self._gateway.get(event, 0)

    def on_retrieve(self, hits: list[Hit]) -> None:
        """An ``engine.retrieval_listeners`` callback."""
        self.record_retrieval(hits[0].tier if hits else "none")

    def request_count(self, route: str, method: str = "GET", status: int | None = None) -> int:
        with self._lock:
            return sum(
                n
                for (m, r, s), n in self._requests.items()
                if r == route and m == method and (status is None or s == str(status))
            )

    # -- rendering ---------------------------------------------------------------------

    def render(
        self, engine: MemoryEngine | None = None, inline_gate: Any = None, per_key: bool = False
    ) -> str:
        """``inline_gate``: the gateway's ``InlineGate`` (where memory work ran);
        ``per_key``: the series labelled by client key (an admin's scrape only)."""
        with self._lock:
            requests = sorted(self._requests.items())
            durations = sorted((key, list(h.counts), h.sum) for key, h in self._durations.items())
            retrievals = sorted(self._retrievals.items())
            gateway = dict(self._gateway)
            injected = sorted((k, list(v)) for k, v in self._injected.items()) if per_key else []

        families: list[_Family] = []
        fam = _Family(
            "memoryd_http_requests_total", "counter", "HTTP requests by method, route and status."
        )
        for (method, route, status), count in requests:
            labels = (("method", method), ("route", route), ("status", status))
            fam.sample("memoryd_http_requests_total", labels, count)
        families.append(fam)

        name = "memoryd_http_request_duration_seconds"
        fam = _Family(name, "histogram", "HTTP request latency in seconds by method and route.")
        for (method, route), counts, total in durations:
            base = (("method", method), ("route", route))
            cumulative = 0
            for bound, count in zip((*self.buckets, math.inf), counts, strict=True):
                cumulative += count
                fam.sample(f"{name}_bucket", (*base, ("le", format_value(bound))), cumulative)
            fam.sample(f"{name}_sum", base, total)
            fam.sample(f"{name}_count", base, cumulative)
        families.append(fam)

        fam = _Family(
            "memoryd_retrievals_total",
            "counter",
            "Memory retrievals by the tier that served them (none: nothing found).",
        )
        for tier, count in retrievals:
            fam.sample("memoryd_retrievals_total", (("tier", tier),), count)
        families.append(fam)

        name = "memoryd_gateway_events_total"
        fam = _Family(
            name,
            "counter",
            "Gateway protection events: concurrency_limited and share_limited (429), "
            "pool_exhausted (503), "
            "stream_broken (an upstream stream cut off and reported to the client).",
        )
        for event in GATEWAY_EVENTS:
            fam.sample(name, (("event", event),), gateway.get(event, 0))
        families.append(fam)

        name = "memoryd_key_injected_tokens_total"
        fam = _Family(name, "counter", "Memory tokens the gateway injected, per client key.")
        carried = "memoryd_key_injected_requests_total"
        requests_fam = _Family(carried, "counter", "Gateway requests that carried memory, per key.")
        for key, (n, tokens) in injected:
            fam.sample(name, (("key", key),), tokens)
            requests_fam.sample(carried, (("key", key),), n)
        if per_key:
            families += [fam, requests_fam]

        if inline_gate is not None:
            work = inline_gate.stats()
            name = "memoryd_gateway_memory_work_total"
            fam = _Family(
                name,
                "counter",
                "Chat calls whose memory work (retrieval and injection) ran on the event "
                "loop (inline: cheap for its key) or on a worker thread.",
            )
            fam.sample(name, (("where", "inline"),), work["inline"])
            fam.sample(name, (("where", "thread"),), work["thread"])
            families.append(fam)
        families.append(_connection_family())
        if engine is not None:
            families.extend(_engine_families(engine, per_key))
        return "\n".join(line for f in families for line in f.lines) + "\n"


def _connection_family() -> _Family:
    """Connections ``memoryd serve``'s guarded protocol closed (all 0 when the app runs
    under another server): over the cap, headers too slow, body too slow."""
    from memoryd.http.protocol import STATS

    name = "memoryd_connections_closed_total"
    fam = _Family(name, "counter", "Client connections memoryd closed to protect itself.")
    fam.sample(name, (("reason", "over_cap"),), STATS.rejected)
    fam.sample(name, (("reason", "header_timeout"),), STATS.header_timeouts)
    fam.sample(name, (("reason", "body_timeout"),), STATS.body_timeouts)
    return fam


def _engine_families(engine: MemoryEngine, per_key: bool = False) -> list[_Family]:
    """Gauges read at scrape time. A failing source (engine closing) is skipped, not
    fatal: the request counters still render."""
    families: list[_Family] = []
    fault = engine.store.probe()  # a database known to be down is not asked (no waits)
    down = fault is not None and fault.code == "storage_unavailable"
    fam = _Family("memoryd_store_up", "gauge", "1 while the database answers, 0 while down.")
    fam.sample("memoryd_store_up", (), 0 if down else 1)
    families.append(fam)
    if down:
        return families
    try:
        count = engine.store.read().count()
    except Exception as exc:
        log.debug("metrics: memories count unavailable: %s", exc)
    else:
        fam = _Family("memoryd_memories_stored", "gauge", "Memories stored (rows, every owner).")
        fam.sample("memoryd_memories_stored", (), int(count))
        families.append(fam)

    stats = dict(engine.extraction_stats)
    fam = _Family(
        "memoryd_extractions_total",
        "counter",
        "Background extraction: jobs scheduled, memories stored, jobs failed.",
    )
    for result in ("scheduled", "stored", "failed"):
        fam.sample("memoryd_extractions_total", (("result", result),), stats.get(result, 0))
    families.append(fam)
    families.extend(_llm_families(engine, per_key))

    try:
        status: dict[str, Any] = engine.status()
    except Exception as exc:
        log.debug("metrics: engine status unavailable: %s", exc)
        return families
    embedding = status.get("embedding") or {}
    mean = embedding.get("meanLatencyMs") if isinstance(embedding, dict) else None
    fam = _Family(
        "memoryd_embedding_latency_ms_mean",
        "gauge",
        "Mean embedding call latency in milliseconds (0 before the first call).",
    )
    fam.sample("memoryd_embedding_latency_ms_mean", (), _number(mean))
    families.append(fam)

    reindex = status.get("reindex") or {}
    pending = reindex.get("pending") if isinstance(reindex, dict) else None
    fam = _Family(
        "memoryd_reindex_pending", "gauge", "Memories waiting to be (re)embedded and indexed."
    )
    fam.sample("memoryd_reindex_pending", (), _number(pending))
    families.append(fam)
    return families


def _llm_families(engine: MemoryEngine, per_key: bool = False) -> list[_Family]:
    """LLM extraction (opt-in): runs by outcome and tokens spent."""
    try:
        snap = engine.llm_stats.snapshot()
    except Exception as exc:  # the first read of the day's total needs the database
        log.debug("metrics: LLM extraction stats unavailable: %s", exc)
        return []
    name = "memoryd_extraction_llm_calls_total"
    calls = _Family(name, "counter", "LLM extraction runs by outcome: ok or the fallback reason.")
    calls.sample(name, (("outcome", "ok"),), snap["ok"])
    for reason, count in sorted(snap["fallbacks"].items()):
        calls.sample(name, (("outcome", reason),), count)
    name = "memoryd_extraction_llm_tokens_total"
    tokens = _Family(name, "counter", "Tokens spent by LLM extraction (provider usage).")
    tokens.sample(name, (("kind", "prompt"),), snap["promptTokens"])
    tokens.sample(name, (("kind", "completion"),), snap["completionTokens"])
    name = "memoryd_key_llm_extraction_tokens_total"
    keyed = _Family(name, "counter", "Tokens LLM extraction spent per client key.")
    for key, spent in sorted(snap.get("byKey", {}).items()):
        keyed.sample(name, (("key", key), ("kind", "prompt")), spent["promptTokens"])
        keyed.sample(name, (("key", key), ("kind", "completion")), spent["completionTokens"])
    return [calls, tokens, keyed] if per_key else [calls, tokens]


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


def route_template(scope: Scope, root_path: str = "") -> str:
    """The matched route's path template (with any mount prefix), or ``unmatched``."""
    route = scope.get("route")
    if route is None:
        return UNMATCHED
    prefix = str(scope.get("root_path", ""))[len(root_path) :]
    if isinstance(route, Mount):
        return prefix or str(route.path) or UNMATCHED
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    if not isinstance(template, str):
        return UNMATCHED
    return prefix + template


class MetricsMiddleware:
    """Pure ASGI (no response buffering): times the call and reads the status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        root_path = str(scope.get("root_path", ""))
        status = 500  # an exception before the response started becomes a 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.record_request(
                str(scope.get("method", "")),
                route_template(scope, root_path),
                status,
                time.perf_counter() - start,
            )


def install_metrics(app: FastAPI) -> None:
    metrics = Metrics()
    app.state.metrics = metrics
    engine: MemoryEngine | None = getattr(app.state, "engine", None)
    if engine is not None:
        listeners = getattr(engine, "retrieval_listeners", None)
        if isinstance(listeners, list):
            listeners.append(metrics.on_retrieve)
    app.add_middleware(MetricsMiddleware, metrics=metrics)

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics(request: Request) -> PlainTextResponse:
        """Prometheus text exposition; no auth (bind to localhost or firewall it). The
        series labelled by client key (cost per key) only with the admin token: an
        open scrape must not list the tenants."""
        current: MemoryEngine | None = getattr(request.app.state, "engine", None)
        gate = getattr(request.app.state, "inline_gate", None)
        admin = is_admin_token(request, bearer_token(request), "metrics admin token")
        text = metrics.render(current, gate, per_key=admin)
        return PlainTextResponse(text, media_type=CONTENT_TYPE)
