"""The primary store.

The Store contract (the typed protocol the engine asks of its primary store) will live
here, so that a second implementation can plug in beside SQLite. The SQLite
implementation is ``storage/sqlite/``: the only package that imports apsw or holds SQL
(``tests/test_layout.py`` enforces both).
"""
