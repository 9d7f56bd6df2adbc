"""Numbered PostgreSQL migrations (``NNNN_name.sql``), applied by ``database.apply_migrations``."""
