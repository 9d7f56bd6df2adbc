"""``GET /metrics`` and the request-id / access-log middleware, in process."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memoryd.app import create_app
from memoryd.engine import MemoryEngine
from memoryd.http.metrics import Metrics, escape_label, format_value, install_metrics
from memoryd.http.observability import (
    configure_logging,
    install_request_logging,
    redact,
    register_secret,
)
from tests.conftest import add

ADMIN = "admin-token-for-metrics-tests"
AUTH = {"Authorization": f"Bearer {ADMIN}"}

# name{labels} value  (labels optional; label values may contain escaped quotes)
SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r'(?:\{(?P<labels>(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})?'
    r" (?P<value>[-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|Inf|NaN))$"
)
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

FAMILIES = {
    "memoryd_http_requests_total": "counter",
    "memoryd_http_request_duration_seconds": "histogram",
    "memoryd_memories_stored": "gauge",
    "memoryd_retrievals_total": "counter",
    "memoryd_extractions_total": "counter",
    "memoryd_embedding_latency_ms_mean": "gauge",
    "memoryd_reindex_pending": "gauge",
}


def parse(text: str) -> tuple[dict[str, str], list[tuple[str, dict[str, str], float]]]:
    """(TYPE by family, samples); fails on any line that is not valid exposition."""
    types: dict[str, str] = {}
    helps: set[str] = set()
    samples = []
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helps.add(line.split()[2])
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert name in helps, f"TYPE before HELP for {name}"
            types[name] = kind
        else:
            match = SAMPLE.match(line)
            assert match, f"not an exposition line: {line!r}"
            labels = dict(LABEL.findall(match["labels"] or ""))
            samples.append((match["name"], labels, float(match["value"])))
    return types, samples


def value(
    samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str
) -> float | None:
    for sample_name, sample_labels, number in samples:
        if sample_name == name and all(sample_labels.get(k) == v for k, v in labels.items()):
            return number
    return None


@pytest.fixture
def client(engine: MemoryEngine) -> Iterator[TestClient]:
    with TestClient(create_app(engine, admin_token=ADMIN)) as c:
        yield c


def scrape(client: TestClient) -> tuple[dict[str, str], list[tuple[str, dict[str, str], float]]]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(response.text)


def test_metrics_needs_no_auth_and_has_every_family(client: TestClient) -> None:
    response = client.get("/metrics")  # no Authorization header
    assert response.status_code == 200
    types, _ = parse(response.text)
    for name, kind in FAMILIES.items():
        assert types.get(name) == kind, name


def test_metrics_is_not_in_the_openapi_schema(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "/metrics" not in paths
    assert "/healthz" in paths


def test_requests_are_counted_per_route_template(client: TestClient) -> None:
    client.get("/healthz")
    client.get("/healthz")
    client.get("/api/memory/no-such-id", headers=AUTH)
    client.get("/api/memory/another-id", headers=AUTH)
    client.get("/api/memory/x")  # 401: still the template, with its status
    client.get("/no/such/path")
    _, samples = scrape(client)
    total = "memoryd_http_requests_total"
    assert value(samples, total, method="GET", route="/healthz", status="200") == 2
    template = "/api/memory/{memory_id}"
    assert value(samples, total, method="GET", route=template, status="404") == 2
    assert value(samples, total, method="GET", route=template, status="401") == 1
    assert value(samples, total, method="GET", route="unmatched", status="404") == 1
    assert not any("no-such-id" in labels.get("route", "") for _, labels, _ in samples)

    hist = "memoryd_http_request_duration_seconds"
    assert value(samples, f"{hist}_count", method="GET", route="/healthz") == 2
    assert value(samples, f"{hist}_bucket", method="GET", route="/healthz", le="+Inf") == 2
    total_s = value(samples, f"{hist}_sum", method="GET", route="/healthz")
    assert total_s is not None
    assert total_s > 0
    buckets = [
        (float(labels["le"]), n)
        for name, labels, n in samples
        if name == f"{hist}_bucket" and labels["route"] == "/healthz"
    ]
    assert buckets == sorted(buckets)  # cumulative and ordered by le
    assert [n for _, n in buckets] == sorted(n for _, n in buckets)


def test_memories_stored_reflects_the_table(client: TestClient, engine: MemoryEngine) -> None:
    _, samples = scrape(client)
    assert value(samples, "memoryd_memories_stored") == 0
    add(engine, "alice", "I prefer dark mode")
    add(engine, "bob", "vim is my editor")
    created = client.post(
        "/api/memory",
        json={"apiKeyId": "alice", "content": "tea over coffee", "key": "drink"},
        headers=AUTH,
    )
    assert created.status_code == 201
    _, samples = scrape(client)
    assert value(samples, "memoryd_memories_stored") == 3


def test_retrievals_are_counted_by_tier(client: TestClient, engine: MemoryEngine) -> None:
    add(engine, "alice", "I prefer dark mode in every editor")
    _, samples = scrape(client)
    before = sum(n for name, _, n in samples if name == "memoryd_retrievals_total")
    hits = engine.retrieve("alice", "dark mode", strategy="hybrid")
    assert hits
    engine.retrieve("alice", "nothing matches zebra", strategy="hybrid")
    client.app.state.metrics.record_retrieval("qdrant")  # type: ignore[attr-defined]
    _, samples = scrape(client)
    after = sum(n for name, _, n in samples if name == "memoryd_retrievals_total")
    assert after == before + 3
    assert value(samples, "memoryd_retrievals_total", tier=hits[0].tier) == 1
    assert value(samples, "memoryd_retrievals_total", tier="qdrant") == 1


def test_extraction_and_engine_gauges(client: TestClient, engine: MemoryEngine) -> None:
    assert engine.submit_extraction("alice", user_text="I prefer dark mode") is not None
    engine.drain(10)
    _, samples = scrape(client)
    scheduled = value(samples, "memoryd_extractions_total", result="scheduled")
    stored = value(samples, "memoryd_extractions_total", result="stored")
    assert scheduled == engine.extraction_stats["scheduled"] >= 1
    assert stored == engine.extraction_stats["stored"]
    assert value(samples, "memoryd_extractions_total", result="failed") == 0
    assert value(samples, "memoryd_embedding_latency_ms_mean") == 0  # no embedding source
    pending = engine.status()["reindex"]["pending"]
    assert value(samples, "memoryd_reindex_pending") == pending


def test_a_broken_listener_never_breaks_retrieval(engine: MemoryEngine) -> None:
    def boom(_hits: object) -> None:
        raise RuntimeError("listener bug")

    engine.retrieval_listeners.append(boom)
    add(engine, "alice", "I prefer dark mode")
    assert engine.retrieve("alice", "dark mode")


def test_label_values_are_escaped() -> None:
    metrics = Metrics()
    metrics.record_request("GET", 'we"ird\\route\nx', 200, 0.01)
    metrics.record_retrieval('ti"er')
    text = metrics.render()
    assert 'route="we\\"ird\\\\route\\nx"' in text
    assert 'tier="ti\\"er"' in text
    assert escape_label('a"b') == 'a\\"b'
    parse(text)
    assert format_value(float("inf")) == "+Inf"
    assert format_value(2.0) == "2"
    assert format_value(0.25) == "0.25"


def test_histogram_bucket_bounds_are_inclusive() -> None:
    metrics = Metrics(buckets=(0.1, 1.0))
    for seconds in (0.1, 0.5, 1.0, 3.0):
        metrics.record_request("GET", "/r", 200, seconds)
    _, samples = parse(metrics.render())
    name = "memoryd_http_request_duration_seconds_bucket"
    assert value(samples, name, le="0.1") == 1
    assert value(samples, name, le="1") == 3
    assert value(samples, name, le="+Inf") == 4


def test_metrics_survive_a_closed_engine(engine: MemoryEngine) -> None:
    app = create_app(engine, admin_token=ADMIN)
    with TestClient(app) as c:
        engine.close()
        response = c.get("/metrics")
    assert response.status_code == 200
    types, _ = parse(response.text)
    assert "memoryd_http_requests_total" in types


# -- request ids and logs ----------------------------------------------------------------


def test_request_id_is_echoed_or_generated(client: TestClient) -> None:
    mine = client.get("/healthz", headers={"x-request-id": "req-123.abc"})
    assert mine.headers["x-request-id"] == "req-123.abc"
    fresh = client.get("/healthz")
    assert re.fullmatch(r"[0-9a-f]{32}", fresh.headers["x-request-id"])
    for bad in ("x" * 65, "has space", "semi;colon", "<script>"):
        replaced = client.get("/healthz", headers={"x-request-id": bad})
        assert replaced.headers["x-request-id"] != bad
        assert re.fullmatch(r"[0-9a-f]{32}", replaced.headers["x-request-id"])
    # errors carry it too
    missing = client.get("/api/memory/nope", headers=AUTH)
    assert missing.status_code == 404
    assert missing.headers["x-request-id"]


def _app_with_logging(token: str) -> tuple[FastAPI, io.StringIO]:
    stream = io.StringIO()
    handler = configure_logging("info", json_lines=True, stream=stream)
    register_secret(token)
    app = FastAPI()
    install_request_logging(app)
    install_metrics(app)

    @app.get("/echo/{item_id}")
    def echo(item_id: str) -> dict[str, str]:
        logging.getLogger("memoryd.test").info(
            "inside the request for %s", item_id, extra={"api_key": "mk_should_not_show_1"}
        )
        return {"id": item_id}

    app.state.log_handler = handler
    return app, stream


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.mark.usefixtures("restore_logging")
def test_access_log_is_one_json_line_per_request_with_its_id() -> None:
    app, stream = _app_with_logging("unused-admin-token-1")
    with TestClient(app) as c:
        c.get("/echo/42", headers={"x-request-id": "abc-1"})
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    access = [r for r in records if r["logger"] == "memoryd.access"]
    assert len(access) == 1
    line = access[0]
    assert line["request_id"] == "abc-1"
    assert line["method"] == "GET"
    assert line["route"] == "/echo/{item_id}"
    assert line["path"] == "/echo/42"
    assert line["status"] == 200
    assert line["duration_ms"] >= 0
    assert line["level"] == "info"
    assert line["ts"].endswith("Z")
    inner = next(r for r in records if r["logger"] == "memoryd.test")
    assert inner["request_id"] == "abc-1"  # records inside the request carry its id
    assert inner["api_key"] == "***"


@pytest.mark.usefixtures("restore_logging")
def test_the_direct_access_line_equals_the_logged_one() -> None:
    """With only memoryd's JSON handler in the way the access line is written directly;
    it must be the line the logging path writes, field for field, and anything else on
    the way (a filter here) sends it down that path."""
    from memoryd.http.observability import RequestLoggingMiddleware, _direct_handler, access_log

    root = logging.getLogger()
    others = list(root.handlers)  # pytest's capture handlers: not in a real server
    for handler in others:
        root.removeHandler(handler)
    try:
        _compare_access_lines(RequestLoggingMiddleware, _direct_handler, access_log)
    finally:
        for handler in others:
            root.addHandler(handler)


def _compare_access_lines(middleware_class: Any, direct_handler: Any, access_log: Any) -> None:
    stream = io.StringIO()
    configure_logging("info", json_lines=True, stream=stream)
    middleware = middleware_class(FastAPI())
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "root_path": ""}
    assert direct_handler(access_log) is not None
    middleware._access_line(scope, "", "rid-1", 200, 1.23456)
    seen: list[logging.LogRecord] = []

    def spy(record: logging.LogRecord) -> bool:
        seen.append(record)
        return True

    access_log.addFilter(spy)
    try:
        assert direct_handler(access_log) is None
        middleware._access_line(scope, "", "rid-1", 200, 1.23456)
    finally:
        access_log.removeFilter(spy)
    assert len(seen) == 1  # the second went through logging
    direct, logged = (json.loads(line) for line in stream.getvalue().splitlines())
    assert list(direct) == list(logged)  # the same fields in the same order
    assert direct.pop("ts").endswith("Z")
    logged.pop("ts")
    assert direct == logged
    assert direct["message"] == "POST /v1/chat/completions 200 1.2ms"
    assert direct["duration_ms"] == 1.235


@pytest.mark.usefixtures("restore_logging")
def test_secrets_never_reach_the_log_output() -> None:
    admin = "s3cr3t-admin-token-value-xyz"
    client_key = "mk_live_9f8e7d6c5b4a39281706"
    provider_key = "sk-proj-abcdefghijklmnop1234"
    app, stream = _app_with_logging(admin)
    log = logging.getLogger("memoryd.test")
    with TestClient(app) as c:
        c.get(f"/echo/{client_key}", headers={"Authorization": f"Bearer {admin}"})
    log.info("headers: %s", {"Authorization": f"Bearer {client_key}", "x": "1"})
    log.warning("upstream said no for key %s", provider_key)
    log.info("plain authorization: Basic dXNlcjpwYXNz and token %s", admin)
    log.info("details", extra={"headers": {"authorization": admin}, "note": f"k={client_key}"})
    try:
        raise ValueError(f"bad key {client_key}")
    except ValueError:
        log.exception("failure")
    output = stream.getvalue()
    assert output.count("\n") >= 6
    for secret in (admin, client_key, provider_key, "dXNlcjpwYXNz", "mk_live", "sk-proj"):
        assert secret not in output, secret
    assert "***" in output
    for line in output.splitlines():
        json.loads(line)


@pytest.mark.usefixtures("restore_logging")
def test_text_format_on_a_tty() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    configure_logging("info", stream=stream)
    logging.getLogger("memoryd.test").info("hello %s", "Bearer abcdefghijkl")
    output = stream.getvalue()
    assert "memoryd.test" in output
    assert "hello Bearer ***" in output
    assert not output.startswith("{")


def test_redact_patterns() -> None:
    assert redact("Authorization: Bearer abc.def") == "Authorization: ***"
    assert redact("{'authorization': 'Bearer abc'}") == "{'authorization': '***'}"
    assert redact("use bearer tok_123456") == "use bearer ***"
    assert redact("key mk_abcdef123456 ok") == "key *** ok"
    assert redact("sk-abcdefgh1234") == "***"
    assert redact("nothing to hide here") == "nothing to hide here"
