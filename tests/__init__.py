"""memoryd's test suite, a package: shared helpers are imported as ``tests.<module>``
(``tests.conftest``, ``tests.fakes``, ``tests.embedders``, ``tests.gateway_support``,
``tests.mcp_support``, ``tests.studio_support``), and the repository root is on
``sys.path`` for the suite, so ``bench`` imports without path tricks."""
