"""How a migration file is named, for both stores' runners and ``memoryd doctor``
(which counts the files a package ships without importing a driver)."""

from __future__ import annotations

import re

#: ``NNNN_name.sql``: the number orders and records it, the name is for people.
MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
