"""Memory Studio: the web dashboard served at ``/dashboard``
(docs/design/interfaces.md#memory-studio).

Server-rendered Jinja2 pages plus small vanilla JavaScript and CSS served from
``static/``: nothing to build, nothing fetched from a CDN. The browser logs in once
with the admin token and then holds only an HttpOnly session cookie; its JavaScript
calls the ordinary ``/api/*`` JSON routes, which accept that cookie (plus an
``X-CSRF-Token`` header on writes) as an alternative to the Bearer token.

``memoryd.dashboard.routes.install_dashboard(app)`` wires it into an app; the session
store the API also accepts lives in ``memoryd.http.session``.
"""
