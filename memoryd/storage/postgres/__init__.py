"""PostgreSQL (with pgvector) as the shared primary store for several memoryd servers:
``store.PostgresStore`` implements the Store contract over a psycopg pool. Needs the
``postgres`` extra (psycopg 3 and psycopg-pool)."""
