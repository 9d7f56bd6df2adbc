"""The app factory: ``create_app(engine, admin_token=...)`` builds the one ASGI app.

No side effects at import; everything the app needs is passed in. The lifespan
drains background work (extraction, embedding) before the engine closes, so a
SIGTERM loses nothing that was acknowledged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import Depends, FastAPI
from starlette.concurrency import run_in_threadpool

from memoryd import __version__
from memoryd.api import routes_keys, routes_memory, routes_settings
from memoryd.api.deps import require_admin
from memoryd.api.errors import install_error_handlers
from memoryd.api.metrics import install_metrics
from memoryd.api.observability import install_request_logging
from memoryd.api.schemas import ERROR_RESPONSES
from memoryd.engine import MemoryEngine
from memoryd.gateway import routes as gateway


def create_app(
    engine: MemoryEngine,
    *,
    admin_token: str,
    close_engine: bool = False,
    upstream_timeout_s: float = 300.0,
) -> FastAPI:
    """``close_engine``: the app owns the engine and closes it on shutdown (serve).
    ``upstream_timeout_s``: read timeout of upstream LLM calls."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # One pooled client for every upstream call (keep-alive across requests).
        timeout = httpx.Timeout(connect=10.0, read=upstream_timeout_s, write=60.0, pool=30.0)
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
        async with httpx.AsyncClient(timeout=timeout, limits=limits) as http:
            app.state.http = http
            yield
        await run_in_threadpool(engine.drain, 60.0)
        if close_engine:
            await run_in_threadpool(engine.close)

    app = FastAPI(
        title="memoryd",
        version=__version__,
        description="Long-term memory for LLM traffic: management API.",
        lifespan=lifespan,
    )
    app.state.engine = engine
    app.state.admin_token = admin_token
    install_error_handlers(app)
    install_request_logging(app)
    install_metrics(app)

    admin = [Depends(require_admin)]
    for router in (routes_memory.router, routes_settings.router, routes_keys.router):
        app.include_router(router, dependencies=admin, responses=ERROR_RESPONSES)

    app.include_router(gateway.router)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """Liveness: the process is up and the database answers."""
        engine.db.read().execute("SELECT 1").fetchall()
        return {"status": "ok", "version": __version__}

    return app
