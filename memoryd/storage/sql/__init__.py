"""Portable SQL: the statements both backends run unchanged (SQLite 3.39+ and
PostgreSQL 13+), written with ``?`` placeholders. The PostgreSQL store's connection
wrapper turns those into psycopg's ``%s``; what the dialects do differently (keyword
search, the outbox's triggers, vectors) stays in ``storage/sqlite`` and
``storage/postgres``. ``session.SqlSession`` is the contract over all of it."""
