"""The composition of the one ASGI app: ``create_app(engine, admin_token=...)`` mounts
the gateway, the REST API, the dashboard and MCP over one engine, one small install
step each.

No side effects at import; everything the app needs is passed in. Serving, the
lifespan stops within ``MEMORYD_SHUTDOWN_S`` (``MemoryEngine.shutdown``): what it does
not finish stays queued in the store for the next start, so a SIGTERM loses nothing
that was acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route

from memoryd import __version__
from memoryd.api import (
    routes_import,
    routes_keys,
    routes_memory,
    routes_qdrant,
    routes_quarantine,
    routes_requests,
    routes_settings,
)
from memoryd.api.docs import bundled_assets, install_docs
from memoryd.api.schemas import ERROR_RESPONSES
from memoryd.dashboard.routes import install_dashboard
from memoryd.engine import MemoryEngine
from memoryd.engine.recent import RecentRequests
from memoryd.errors import UnavailableError
from memoryd.gateway import routes as gateway
from memoryd.gateway import upstream
from memoryd.gateway.client import UpstreamClient
from memoryd.gateway.inline import InlineGate
from memoryd.http.deps import AuthThrottle, require_admin
from memoryd.http.errors import install_error_handlers
from memoryd.http.limits import install_body_limit, install_json_depth
from memoryd.http.metrics import install_metrics
from memoryd.http.observability import install_request_logging, register_secret
from memoryd.mcp import MCP_PATH, McpHttpEndpoint

log = logging.getLogger(__name__)


def _warm_up(engine: MemoryEngine) -> None:
    """Build the rule table and load the embedder before the first request (the
    first chat of a fresh server paid ~1 s for them); a failure only costs the warm-up."""
    from memoryd.core.extraction import warm_up
    from memoryd.core.lookalike import defuse

    try:
        warm_up()
        defuse("caf\u00e9")  # the look-alike table, before the first accented memory
        engine.preview("memoryd-warm-up", "warm up")
    except Exception:
        log.warning("warm-up failed; the first request builds what it needs", exc_info=True)


async def _sweep_decay(engine: MemoryEngine) -> None:
    """Typed decay every ``MEMORY_TYPED_DECAY_SWEEP_INTERVAL`` seconds while the server
    runs (opt-in: decay enabled and an interval over 0); a failed sweep is logged and
    the next one runs on time."""
    config = engine.config.decay
    if not config.enabled or config.sweep_interval_s <= 0:
        return
    while True:
        await asyncio.sleep(config.sweep_interval_s)
        try:
            result = await run_in_threadpool(engine.sweep_decay)
            if result.decayed:
                log.info("decay sweep removed %d memories", result.decayed)
        except Exception:
            log.exception("decay sweep failed")


def create_app(
    engine: MemoryEngine,
    *,
    admin_token: str,
    close_engine: bool = False,
    upstream_timeout_s: float | None = None,
    max_body_bytes: int | None = None,
    auth_throttle: AuthThrottle | None = None,
) -> FastAPI:
    """``close_engine``: the app owns the engine and closes it on shutdown (serve).
    ``upstream_timeout_s``: read timeout of upstream LLM calls; ``max_body_bytes``: the
    request body limit of every route (413 beyond it). Both default to the engine's
    configuration (``MEMORYD_UPSTREAM_TIMEOUT_S``, ``MEMORYD_MAX_BODY_BYTES``).
    ``auth_throttle``: how failed authentications are slowed (default: the engine's
    ``MEMORYD_AUTH_FAILURES_PER_MIN``)."""
    config = engine.config
    if upstream_timeout_s is None:
        upstream_timeout_s = config.upstream_timeout_s
    if max_body_bytes is None:
        max_body_bytes = config.max_body_bytes
    app = _new_app(engine, close_engine, upstream_timeout_s)
    _install_state(app, engine, admin_token, auth_throttle)
    _install_middleware(app, engine, max_body_bytes)
    _install_gateway(app)
    _install_rest(app)
    install_dashboard(app)  # Memory Studio at /dashboard
    _install_mcp(app, engine, admin_token)
    _openapi_without_422(app)
    _install_health(app, engine)
    return app


def _new_app(engine: MemoryEngine, close_engine: bool, upstream_timeout_s: float) -> FastAPI:
    """The FastAPI app with its lifespan: the pooled upstream client, the MCP session
    manager and the decay sweeper run inside it; serving, the engine stops with it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # One pooled client for every upstream call (keep-alive across requests).
        client = UpstreamClient(
            max_connections=engine.config.upstream_max_connections,
            read_timeout_s=upstream_timeout_s,
            pool_wait_s=upstream.POOL_WAIT_S,
        )
        async with (
            client as http,
            app.state.mcp.lifespan(),  # the MCP session manager runs only inside it
        ):
            app.state.http = http
            if close_engine:  # serving: the first chat must not build what every chat uses
                await run_in_threadpool(_warm_up, engine)
            sweeper = asyncio.create_task(_sweep_decay(engine))
            try:
                yield
            finally:
                sweeper.cancel()
        if close_engine:  # serving: stop within MEMORYD_SHUTDOWN_S, leaving the rest queued
            try:
                await run_in_threadpool(engine.shutdown, engine.config.shutdown_s / 2)
            finally:
                await run_in_threadpool(engine.close)
        else:
            await run_in_threadpool(engine.drain, 60.0)

    assets = bundled_assets()  # Swagger UI and ReDoc without a CDN (api.docs)
    offline = {"docs_url": None, "redoc_url": None} if assets is not None else {}
    app = FastAPI(
        title="memoryd",
        version=__version__,
        description="Long-term memory for LLM traffic: management API.",
        lifespan=lifespan,
        **offline,  # type: ignore[arg-type]
    )
    install_docs(app, assets)
    return app


def _install_state(
    app: FastAPI, engine: MemoryEngine, admin_token: str, auth_throttle: AuthThrottle | None
) -> None:
    """What the routes share, per app: the engine, the admin token, the throttle of
    failed authentications, the per-key upstream slots, the inline gate and the window
    of recent requests."""
    config = engine.config
    app.state.engine = engine
    app.state.admin_token = admin_token
    app.state.auth_throttle = auth_throttle or AuthThrottle.per_minute(
        config.auth_failures_per_min  # failed authentications per client address
    )
    app.state.key_slots = upstream.KeySlots(
        config.key_max_concurrent, config.upstream_max_connections
    )
    app.state.inline_gate = InlineGate(config.inline_retrieval_ms)
    app.state.recent = RecentRequests()  # what each recent chat carried (GET /api/requests)
    upstream.quiet_aborted_relays()
    register_secret(admin_token)  # masked in every log record, embedded use included


def _install_middleware(app: FastAPI, engine: MemoryEngine, max_body_bytes: int) -> None:
    """Errors in one shape, then the body and JSON depth limits innermost (so the access
    log and the metrics see every 413), request logging and metrics outside them."""
    install_error_handlers(app)
    # The JSONL import streams a whole export: it keeps its own, larger limit.
    import_limit = max(max_body_bytes, routes_memory.MAX_IMPORT_BYTES)
    import_path = f"{routes_memory.router.prefix}/import"
    # the uploads are checked off the event loop, in their routes
    exempt = {import_path, routes_import.OMNIROUTE_PATH, routes_import.MEM0_PATH}
    install_json_depth(app, exempt=frozenset(exempt))
    routes_import.clear_uploads(engine.config.data_dir)  # left by a killed process
    install_body_limit(
        app,
        max_body_bytes,
        {
            import_path: import_limit,
            routes_import.OMNIROUTE_PATH: routes_import.MAX_UPLOAD_BYTES,
            routes_import.MEM0_PATH: import_limit,
        },
    )
    install_request_logging(app)
    install_metrics(app)


def _install_gateway(app: FastAPI) -> None:
    """The gateway's routes first: a chat call is matched before the management API's
    forty-odd routes are tried (no path is shared: /v1 against /api)."""
    app.include_router(gateway.router)
    app.router.routes[0:0] = gateway.direct_routes()  # tried before any other route


def _install_rest(app: FastAPI) -> None:
    """The management API, every route behind the admin token."""
    admin = [Depends(require_admin)]
    for router in (
        routes_quarantine.router,  # before /api/memory/{memory_id}
        routes_import.router,
        routes_memory.router,
        routes_settings.router,
        routes_qdrant.router,
        routes_keys.router,
        routes_requests.router,
    ):
        app.include_router(router, dependencies=admin, responses=ERROR_RESPONSES)


def _install_mcp(app: FastAPI, engine: MemoryEngine, admin_token: str) -> None:
    """Streamable-HTTP MCP: the admin token or a client key, checked per request.
    Session caps and idle timeout: MEMORYD_MCP_* via engine.config (docs/operations.md)."""
    mcp = McpHttpEndpoint(engine, admin_token=admin_token, throttle=app.state.auth_throttle)
    app.state.mcp = mcp
    app.router.routes.append(Route(MCP_PATH, endpoint=mcp, include_in_schema=False))


def _install_health(app: FastAPI, engine: MemoryEngine) -> None:
    @app.get("/healthz", tags=["health"])
    def healthz() -> Any:
        """Liveness: the process is up and the database answers. A storage fault that
        fails writes (disk full) is ``degraded`` with its reason, still 200: reads work,
        and a restart would not free the disk. It probes a cheap write every few
        seconds, so it turns ``ok`` again without traffic. A database that does not
        answer within half a second is ``down`` (503), never a wait."""
        try:
            engine.store.ping()
        except UnavailableError as exc:
            down = {"status": "down", "reason": f"{exc.code}: {exc.message}"}
            return JSONResponse({**down, "version": __version__}, status_code=503)
        fault = engine.store.probe()
        if fault is not None:
            return {
                "status": "degraded",
                "reason": fault.reason,
                "since": fault.since,
                "version": __version__,
            }
        return {"status": "ok", "version": __version__}


def _openapi_without_422(app: FastAPI) -> None:
    """FastAPI documents a 422 on every route; memoryd answers validation errors with
    400 in its one error shape, so the schema says exactly that."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                responses = operation.get("responses", {}) if isinstance(operation, dict) else {}
                if responses.pop("422", None) is not None and "400" not in responses:
                    responses["400"] = {
                        "description": "Invalid request",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/ErrorBody"}
                            }
                        },
                    }
        schemas = schema.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
