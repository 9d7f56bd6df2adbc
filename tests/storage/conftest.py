"""The primary stores on real files and a real PostgreSQL: migrations, faults and
outages, keyword indexes, crash safety, backup and moving a data dir to PostgreSQL.
The Store contract itself runs against both stores from ``contract/``."""
