"""The API's interactive documentation, served offline.

FastAPI's ``/docs`` and ``/redoc`` load Swagger UI and ReDoc from a CDN: a self-hosted
install without internet showed a blank page. ``fastapi-offline`` ships both bundles;
they are served from ``/docs/static`` instead (FastAPI's own pages are the fallback
when the package is missing).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import HTMLResponse

STATIC = "/docs/static"


def bundled_assets() -> Path | None:
    """The directory of the bundled Swagger UI and ReDoc files, or None."""
    try:
        import fastapi_offline
    except ImportError:
        return None
    folder = Path(fastapi_offline.__file__).parent / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


def install_docs(app: FastAPI, assets: Path | None) -> None:
    """``/docs``, its OAuth2 redirect and ``/redoc`` on local assets (``app`` was built
    with ``docs_url=None, redoc_url=None`` because ``assets`` exists)."""
    if assets is None:
        return
    app.mount(STATIC, StaticFiles(directory=assets), name="docs-static")
    title = app.title

    @app.api_route("/docs", methods=["GET", "HEAD"], include_in_schema=False)
    async def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{title} - Swagger UI",
            oauth2_redirect_url=f"{root}/docs/oauth2-redirect",
            swagger_js_url=f"{root}{STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC}/favicon.png",
        )

    @app.api_route("/docs/oauth2-redirect", methods=["GET", "HEAD"], include_in_schema=False)
    async def redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.api_route("/redoc", methods=["GET", "HEAD"], include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{title} - ReDoc",
            redoc_js_url=f"{root}{STATIC}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{STATIC}/favicon.png",
            with_google_fonts=False,
        )
