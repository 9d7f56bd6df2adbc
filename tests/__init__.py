"""memoryd's test suite, shaped like the code: one package per package of ``memoryd/``
(core, config, storage, embedding, vectors, engine, http, api, gateway, mcp, dashboard,
cli, server, eval), plus ``bench`` (the benchmarks' own checks) and ``project`` (the
repository: docs, packaging, the import graph). Each package's conftest holds what its
tests share; helpers every package uses are imported as ``tests.<module>``
(``tests.conftest``, ``tests.fakes``, ``tests.embedders``, ``tests.gateway_support``,
``tests.mcp_support``, ``tests.serve_support``, ``tests.wire_support``). The repository
root is on ``sys.path`` for the suite, so ``bench`` imports without path tricks. Every
test carries its package as a marker: ``pytest -m gateway`` runs the gateway's."""
