"""The REST management API: one router per resource (``routes_*``) over the engine,
with the request and response models in ``schemas``. The app that mounts it beside
the gateway, MCP and the dashboard is composed in ``memoryd.app``."""
