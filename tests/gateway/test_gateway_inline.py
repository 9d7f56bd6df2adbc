"""Memory work on the event loop (``gateway.inline``, ``engine.locality``): which calls
may skip the worker thread, and that the answer is the same either way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from memoryd.app import create_app
from memoryd.config.upstreams import Provider, save_providers
from memoryd.engine.locality import in_process
from memoryd.gateway import inline
from memoryd.gateway.inline import InlineGate
from tests import embedders
from tests.conftest import ADMIN, add, make_engine
from tests.fakes import FakeUpstream, serve_asgi

MS = 0.001


def test_a_key_runs_inline_after_cheap_calls_and_leaves_after_slow_ones() -> None:
    gate = InlineGate(2.0)
    assert not gate.cheap("k")  # unknown: a worker thread first
    for _ in range(inline.SAMPLES - 1):
        gate.record("k", 0.5 * MS, inline=False)
        assert not gate.cheap("k")
    gate.record("k", 0.5 * MS, inline=False)
    assert gate.cheap("k")
    assert not gate.cheap("other")  # per key
    gate.record("k", 40 * MS, inline=True)  # one slow call: back to a thread
    assert not gate.cheap("k")
    for _ in range(30):
        gate.record("k", 0.5 * MS, inline=False)
    assert gate.cheap("k")  # and inline again once the average came down
    stats = gate.stats()
    assert stats["inline"] == 1
    assert stats["thread"] == inline.SAMPLES + 30
    assert stats["keys"] == 1


def test_an_inline_call_that_waited_counts_at_its_wall_time() -> None:
    gate = InlineGate(2.0)
    for _ in range(inline.SAMPLES):
        gate.record("k", 0.5 * MS, inline=False, wall=30 * MS)  # a worker's waits: ignored
    assert gate.cheap("k")
    gate.record("k", 0.5 * MS, inline=True, wall=5 * MS)  # GIL waits under load: CPU counts
    assert gate.cheap("k")
    gate.record("k", 0.5 * MS, inline=True, wall=60 * MS)  # it held the loop: wall counts
    assert not gate.cheap("k")


def test_a_zero_budget_keeps_every_call_on_a_thread() -> None:
    gate = InlineGate(0)
    for _ in range(10):
        gate.record("k", 0.0, inline=False)
    assert not gate.cheap("k")
    assert gate.stats()["keys"] == 0


def test_the_gate_forgets_the_least_recent_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inline, "MAX_KEYS", 3)
    gate = InlineGate(2.0)
    for key in ("a", "b", "c", "d"):
        for _ in range(inline.SAMPLES):
            gate.record(key, 0.1 * MS, inline=False)
    assert [gate.cheap(k) for k in ("a", "b", "c", "d")] == [False, True, True, True]


def test_only_work_inside_the_process_may_run_inline(tmp_path: Path) -> None:
    local = make_engine(tmp_path / "a", resolver=embedders.no_source)
    remote = make_engine(tmp_path / "b", resolver=embedders.fixed_resolver("remote"))
    static = make_engine(tmp_path / "c", resolver=embedders.fixed_resolver("static"))
    try:
        settings = local.settings.get()
        assert in_process(local, settings)
        assert in_process(static, static.settings.get())
        assert not in_process(remote, remote.settings.get())  # a provider's round trip
        local.settings.update({"rerankEnabled": True, "rerankProviderModel": "p/rerank"})
        assert not in_process(local, local.settings.get())  # a remote reranker
    finally:
        for eng in (local, remote, static):
            eng.close()


def test_a_shared_store_never_runs_inline(tmp_path: Path, pg_url: str) -> None:
    eng = make_engine(
        tmp_path / "pg", {"MEMORYD_DATABASE_URL": pg_url}, resolver=embedders.no_source
    )
    try:
        assert eng.store.capabilities.shared
        assert not in_process(eng, eng.settings.get())
    finally:
        eng.close()


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, str, object]]:
    budget = str(getattr(request, "param", "50"))
    eng = make_engine(
        tmp_path / "data", {"MEMORYD_INLINE_RETRIEVAL_MS": budget}, resolver=embedders.no_source
    )
    upstream = FakeUpstream()
    try:
        with serve_asgi(upstream.app) as upstream_url:
            save_providers(eng.store, [Provider("default", f"{upstream_url}/v1", "secret")])
            record, secret = eng.keys.create("app")
            add(eng, record.id, "User's sister Anna lives in Lisbon.")
            add(eng, record.id, "User drinks oat milk coffee.")
            app = create_app(eng, admin_token=ADMIN)
            with serve_asgi(app) as url:
                yield url, secret, (app, upstream)
    finally:
        eng.close()


def _ask(url: str, secret: str, upstream: FakeUpstream) -> str:
    with openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0) as client:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "where does my sister live?"}]
        )
    messages = upstream.requests[-1]["body"]["messages"]
    return next((m["content"] for m in messages if m["role"] == "system"), "")


@pytest.mark.parametrize("served", ["50", "0"], indirect=True)
def test_the_same_memory_is_injected_inline_or_not(
    served: tuple[str, str, object], request: pytest.FixtureRequest
) -> None:
    url, secret, (app, upstream) = served  # type: ignore[misc]
    blocks = [_ask(url, secret, upstream) for _ in range(inline.SAMPLES + 5)]
    assert "Anna lives in Lisbon" in blocks[0]
    assert all(block == blocks[0] for block in blocks)
    stats = app.state.inline_gate.stats()
    if request.node.callspec.params["served"] == "0":
        assert stats["inline"] == 0  # the setting turns it off
        assert stats["thread"] == len(blocks)
    else:  # keyword search over two memories: well under 50 ms, inline after the samples
        assert stats["inline"] >= 1
        assert stats["thread"] >= inline.SAMPLES
    # /metrics says where the memory work ran, the same counts
    metrics = httpx.get(f"{url}/metrics", timeout=30).text
    work = {
        line.split('where="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("memoryd_gateway_memory_work_total{")
    }
    assert work == {"inline": stats["inline"], "thread": stats["thread"]}
