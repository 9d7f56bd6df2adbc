"""The primary store.

``contract/`` is the Store contract by concern (memories, history, keys, the queues,
quarantine, erasures, usage, ...), re-exported as one face by ``base``; ``sql/`` is the
SQL both backends run, ``sqlite/`` the embedded default and ``postgres/`` the shared
store. Only ``sql/``, ``sqlite/`` and ``postgres/`` hold SQL, and each backend alone
imports its driver (``tests/project/test_layout.py`` enforces both).
"""
