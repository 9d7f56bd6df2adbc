"""What every HTTP interface shares: the REST API, the gateway, the dashboard and MCP
all authenticate (``deps``, ``session``), answer errors (``errors``), bound bodies
(``limits``), log and count requests (``observability``, ``metrics``) and show
memories (``public``) the same way; ``protocol`` is the hardened HTTP protocol
``serve`` runs them on. It imports no interface: where a rule differs by interface (an
error under ``/v1/`` answers in the client's wire shape), it goes by the path."""
