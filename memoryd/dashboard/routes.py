"""``/dashboard``: login, logout and the tab pages of Memory Studio.

Pages are rendered on the server (Jinja2, autoescaped) with the state that is cheap
to read here (settings, owners); the tab's JavaScript then talks to ``/api/*`` with
the session cookie and the CSRF token from the page's ``<meta name="csrf-token">``.
Every page is sent with a strict Content-Security-Policy: scripts and styles come
only from ``/dashboard/static``, so no inline script can run.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from memoryd import __version__
from memoryd.config.upstreams import Provider, stored_providers
from memoryd.http.deps import AuthThrottledError, auth_throttle, client_address
from memoryd.http.errors import error_body
from memoryd.http.session import (
    LOGIN_CSRF_COOKIE,
    MAX_AGE_S,
    SESSION_COOKIE,
    CsrfError,
    SessionStore,
    SharedSessions,
    current_session,
    store_of,
    token_matches,
)
from memoryd.models import utcnow
from memoryd.storage.base import Store, Writer

HERE = Path(__file__).parent
TABS: tuple[tuple[str, str], ...] = (
    ("memories", "Memories"),
    ("playground", "Playground"),
    ("engine", "Engine"),
    ("keys", "Keys"),
    ("settings", "Settings"),
)
TAB_IDS = frozenset(t for t, _ in TABS)
MAX_FORM_BYTES = 16 * 1024
MAX_OWNERS = 1000

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "object-src 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}

templates = Jinja2Templates(directory=str(HERE / "templates"))
router = APIRouter(prefix="/dashboard", tags=["dashboard"], include_in_schema=False)


#: Where logouts of shared sessions are kept (one setting per session, by digest).
LOGGED_OUT = "dashboard.loggedOut."


def _shared_sessions(store: Store, admin_token: str) -> SharedSessions:
    """Sessions every server on this shared store accepts; logouts kept in it."""

    def digest(cookie: str) -> str:
        return hashlib.sha256(cookie.encode()).hexdigest()[:32]

    def is_revoked(cookie: str) -> bool:
        return store.read().setting(LOGGED_OUT + digest(cookie)) is not None

    def revoke(cookie: str, until: float) -> None:
        now = time.time()

        def record(tx: Writer) -> None:
            stale = [k for k, v in tx.settings(LOGGED_OUT).items() if not _number(v) or v < now]
            tx.delete_settings(stale, LOGGED_OUT)
            tx.write_settings({digest(cookie): until}, utcnow(), LOGGED_OUT)

        store.write(record)

    return SharedSessions.for_token(admin_token, is_revoked, revoke)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def install_dashboard(app: FastAPI) -> None:
    """Mount Memory Studio on ``app``: the pages, the static files, the session store
    (shared by every server when the store is: ``auth.SharedSessions``)."""
    engine = app.state.engine
    shared = (
        _shared_sessions(engine.store, app.state.admin_token)
        if engine.store.capabilities.shared
        else None
    )
    app.state.dashboard_sessions = SessionStore(shared=shared)
    app.include_router(router)
    app.mount(
        "/dashboard/static",
        StaticFiles(directory=str(HERE / "static")),
        name="dashboard-static",
    )


def _tab(value: str | None) -> str:
    return value if value in TAB_IDS else "memories"


def _secure(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


def _is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def _owners(request: Request) -> list[str]:
    """Every owner the dashboard can offer: owners with memories and live key ids."""
    engine = request.app.state.engine
    owners = set(engine.owners())
    owners.update(k.id for k in engine.keys.list(include_revoked=False))
    return sorted(owners)[:MAX_OWNERS]


def _providers(store: Store, providers: dict[str, Provider]) -> dict[str, Any]:
    """The Settings tab's providers (keys masked) and the names stored in the database
    (the others come from the environment; the page never writes them back)."""
    return {
        "providers": [p.to_dict() for p in providers.values()],
        "storedProviders": [p.name for p in stored_providers(store)],
    }


def _login_page(request: Request, tab: str, error: str | None, status: int) -> Response:
    csrf = secrets.token_urlsafe(24)
    response = templates.TemplateResponse(
        request,
        "login.html",
        {"csrf": csrf, "tab": tab, "error": error, "version": __version__},
        status_code=status,
    )
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        csrf,
        max_age=3600,
        path="/dashboard",
        httponly=True,
        samesite="strict",
        secure=_is_https(request),
    )
    return _secure(response)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, tab: str | None = None) -> Response:
    if current_session(request) is not None:
        return _secure(RedirectResponse(f"/dashboard?tab={_tab(tab)}", status_code=303))
    return _login_page(request, _tab(tab), None, 200)


async def _form(request: Request) -> dict[str, str]:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return {}
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in parsed.items() if v}


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    """Check the admin token (constant time) and open a session. The form carries a
    one-time token matched against a cookie, so another site cannot post it."""
    form = await _form(request)
    tab = _tab(form.get("tab"))
    login_csrf = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    if not login_csrf or not token_matches(form.get("csrf"), login_csrf):
        return _login_page(request, tab, "The login form expired. Please try again.", 403)
    throttle, address = auth_throttle(request), client_address(request)
    try:
        throttle.check(address)
    except AuthThrottledError as exc:
        page = _login_page(request, tab, "Too many failed logins. " + exc.message, 429)
        page.headers.update(exc.headers)
        return page
    if not token_matches(form.get("token", "").strip(), request.app.state.admin_token):
        throttle.failed(address, "dashboard login")
        return _login_page(request, tab, "Invalid admin token.", 401)
    store = store_of(request)
    assert store is not None
    store.delete(request.cookies.get(SESSION_COOKIE))
    session = store.create()
    response = RedirectResponse(f"/dashboard?tab={tab}", status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        session.id,
        max_age=int(MAX_AGE_S),
        path="/",
        httponly=True,
        samesite="strict",
        secure=_is_https(request),
    )
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/dashboard", httponly=True, samesite="strict")
    return _secure(response)


@router.post("/logout")
async def logout(request: Request) -> Response:
    """End the session (the form or header must carry its CSRF token)."""
    session = current_session(request)
    if session is not None:
        form = await _form(request)
        given = form.get("csrf") or request.headers.get("x-csrf-token")
        if not token_matches(given, session.csrf_token):
            raise CsrfError("missing or invalid CSRF token")
        store = store_of(request)
        assert store is not None
        store.delete(session.id)
    response = RedirectResponse("/dashboard/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return _secure(response)


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def dashboard(request: Request, tab: str | None = None) -> Response:
    active = _tab(tab)
    session = current_session(request)
    if session is None:
        return _secure(RedirectResponse(f"/dashboard/login?tab={active}", status_code=303))
    engine = request.app.state.engine
    settings: dict[str, Any] = engine.settings.get().to_dict()
    owners = _owners(request)
    names = {k.id: k.name for k in engine.keys.list(include_revoked=True)}
    initial: dict[str, Any] = {
        "tab": active,
        "settings": settings,
        "owners": owners,
        "ownerNames": names,
    }
    if active == "settings":
        initial.update(_providers(engine.store, engine.providers()))
    context = {
        "tab": active,
        "tabs": TABS,
        "csrf": session.csrf_token,
        "version": __version__,
        "settings": settings,
        "owners": owners,
        "owner_names": names,  # the selects show "name (id)", as the table does
        "initial": initial,
    }
    return _secure(templates.TemplateResponse(request, "dashboard.html", context))


@router.get("/owners")
def owners(request: Request) -> Response:
    """``{owners: [...]}`` for the owner selectors (session required)."""
    if current_session(request) is None:
        return JSONResponse(error_body("log in first", "unauthorized"), status_code=401)
    keys = request.app.state.engine.keys.list(include_revoked=True)
    names = {k.id: k.name for k in keys}
    return _secure(JSONResponse({"owners": _owners(request), "ownerNames": names}))
