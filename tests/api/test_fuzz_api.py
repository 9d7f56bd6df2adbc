"""Fuzzing the management API from its own OpenAPI document (schemathesis).

Every ``/api/*`` operation gets generated requests, valid and invalid (schemathesis'
positive and negative modes), sent with the admin token: none may answer 5xx, and
every error must be the one error shape (docs/design/interfaces.md#one-error-shape).
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from memoryd.app import create_app
from memoryd.engine import MemoryEngine
from tests.conftest import ADMIN

EXAMPLES = 25
STATUSES: list[int] = []


def check(case: Any) -> None:
    response = case.call(headers={"Authorization": f"Bearer {ADMIN}"})
    STATUSES.append(response.status_code)
    where = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, f"{where}: {response.status_code} {response.text}"
    assert "Traceback" not in response.text, where
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"}, f"{where}: {response.text}"
        assert isinstance(body["error"]["message"], str), where
        assert isinstance(body["error"]["code"], str), where
        assert isinstance(body["error"]["details"], list), where


def test_every_management_route_survives_fuzzing(engine: MemoryEngine) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(engine, admin_token=ADMIN))
    operations = [r.ok() for r in schema.include(path_regex="^/api/").get_all_operations()]
    assert len(operations) >= 20  # the scan itself works: every /api route is in the schema
    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode)

            @given(case=strategy)
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def run(case: Any) -> None:
                check(case)

            try:
                run()
            except Unsatisfiable:
                # nothing to make invalid (an operation without parameters or body)
                assert mode == schemathesis.GenerationMode.NEGATIVE
    # both kinds really ran: successes and client errors
    assert any(200 <= code < 300 for code in STATUSES)
    assert sum(400 <= code < 500 for code in STATUSES) > 50
