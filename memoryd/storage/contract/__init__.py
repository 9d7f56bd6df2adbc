"""The Store contract by concern, one module per module of ``storage/sql/`` (memories,
history, keys, queue, flags, quarantine, erasures, kv, usage, context) plus the
external tier's outbox and ``store`` (``Store``, ``Reader`` and ``Writer`` composed
from the rest). ``memoryd.storage.base`` re-exports every name: import from there.

Each module holds its concern's read and write protocols and the rows they take and
return, all frozen dataclasses, so a caller names fields instead of counting columns.
``tests/storage/contract/`` mirrors these modules, run against every backend.
"""
