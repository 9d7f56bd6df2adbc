"""Per-key quotas: what one client key may keep (memories, bytes) and how
fast it may write, through the running app: MCP with the SDK's own client as the key,
the gateway with the official ``openai`` client (capture stops storing past the quota,
and still takes things back), the key's usage over REST; an admin is not limited."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memoryd.app import create_app
from memoryd.config import QuotaLimits
from memoryd.engine import MemoryEngine
from memoryd.engine.quotas import QuotaExceededError, Quotas
from memoryd.storage.base import Usage
from memoryd.testing import serve_asgi
from tests.conftest import ADMIN, make_engine
from tests.embedders import no_source
from tests.gateway_support import running_gateway
from tests.mcp_support import Session, over_http


def _engine(tmp_path: Path, **env: str) -> MemoryEngine:
    return make_engine(tmp_path / "data", env, resolver=no_source)


@pytest.fixture
def small(tmp_path: Path) -> Iterator[MemoryEngine]:
    eng = _engine(
        tmp_path,
        MEMORYD_KEY_MAX_MEMORIES="3",
        MEMORYD_KEY_MAX_BYTES="100000",
        MEMORYD_KEY_WRITES_PER_MIN="1000",
    )
    try:
        yield eng
    finally:
        eng.close()


def test_a_key_past_its_memory_quota_is_refused_over_mcp_and_named(small: MemoryEngine) -> None:
    record, secret = small.keys.create("app")
    refused: list[str] = []

    async def body(session: Session) -> None:
        for i in range(3):
            await session.ok("memory_add", {"content": f"User note {i}", "key": f"n:{i}"})
        refused.append(await session.err("memory_add", {"content": "User note 3", "key": "n:3"}))
        # a replacement of a kept key is a new row too (its history stays): refused as well
        refused.append(await session.err("memory_add", {"content": "changed", "key": "n:0"}))

    with serve_asgi(create_app(small, admin_token=ADMIN)) as url:
        over_http(url, secret, body)

        async def admin(session: Session) -> None:  # the operator is not limited
            await session.ok(
                "memory_add", {"apiKeyId": record.id, "content": "User note 4", "key": "n:4"}
            )

        over_http(url, ADMIN, admin)
        usage = httpx.get(
            f"{url}/api/keys/{record.id}/usage",
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=30,
        ).json()
    assert all("quota exceeded (memories)" in r for r in refused), refused
    assert "MEMORYD_KEY_MAX_MEMORIES" in refused[0]
    assert usage["quota"]["memories"] == {"used": 4, "limit": 3}
    assert usage["quota"]["bytes"]["limit"] == 100000
    assert usage["quota"]["bytes"]["used"] > len("User note 0") * 4


def test_bytes_and_the_write_rate_are_quotas_too(tmp_path: Path) -> None:
    eng = _engine(
        tmp_path,
        MEMORYD_KEY_MAX_MEMORIES="0",  # no limit on the count
        MEMORYD_KEY_MAX_BYTES="3000",
        MEMORYD_KEY_WRITES_PER_MIN="4",
    )
    try:
        _, big_key = eng.keys.create("big")
        _, fast_key = eng.keys.create("fast")
        said: dict[str, list[str]] = {"big": [], "fast": []}

        async def big(session: Session) -> None:
            await session.ok("memory_add", {"content": "x" * 1500, "key": "a"})
            said["big"].append(await session.err("memory_add", {"content": "y" * 1600}))

        async def fast(session: Session) -> None:
            for i in range(4):
                await session.ok("memory_add", {"content": f"User fact {i}", "key": f"f:{i}"})
            said["fast"].append(await session.err("memory_add", {"content": "one more"}))

        with serve_asgi(create_app(eng, admin_token=ADMIN)) as url:
            over_http(url, big_key, big)
            over_http(url, fast_key, fast)
    finally:
        eng.close()
    assert "quota exceeded (bytes)" in said["big"][0]
    assert "MEMORYD_KEY_MAX_BYTES" in said["big"][0]
    assert "quota exceeded (writes)" in said["fast"][0]
    assert "retry in" in said["fast"][0]


def test_capture_stops_storing_past_the_quota_and_still_takes_things_back(
    tmp_path: Path,
) -> None:
    eng = _engine(tmp_path, MEMORYD_KEY_MAX_MEMORIES="1")
    try:
        with running_gateway(eng, "quota") as gateway:
            gateway.send("I'm allergic to kiwi.")
            assert [m["content"] for m in gateway.export()] == ["User is allergic to kiwi"]
            gateway.send("I'm also allergic to mango.")
            assert [m["content"] for m in gateway.export()] == ["User is allergic to kiwi"]
            assert eng.extraction_stats["overQuota"] == 1
            gateway.send("Forget that I said I'm allergic to kiwi.")  # a retraction adds none
            exported = gateway.export()
            assert len(exported) == 1
            assert exported[0].get("supersededAt")  # retired, kept as history
    finally:
        eng.close()


def test_the_rate_refills_and_a_delete_frees_room() -> None:
    class Kept:
        rows = 0

        def read(self) -> Kept:
            return self

        def usage(self, owner: str) -> Usage:
            return Usage(self.rows, self.rows * 10)

    now = [0.0]
    store = Kept()
    limits = QuotaLimits(memories=3, bytes=0, writes_per_min=2)
    quotas = Quotas(store, limits, clock=lambda: now[0])  # type: ignore[arg-type]
    quotas.check("k", [10])
    quotas.check("k", [10])  # counted forward: 2 kept, no second read
    with pytest.raises(QuotaExceededError) as rate:
        quotas.check("k", [10])
    assert (rate.value.quota, rate.value.status) == ("writes", 429)
    assert rate.value.headers["retry-after"] == "30"
    now[0] += 30.0  # one write a half minute comes back; the kept count is read again
    store.rows = 3  # another server's writes
    with pytest.raises(QuotaExceededError) as kept:
        quotas.check("k", [10])
    assert (kept.value.quota, kept.value.status) == ("memories", 413)
    assert kept.value.headers["x-memoryd-limit"] == "quota-memories"
    store.rows = 2  # a delete: read again before refusing
    now[0] += 2.0
    quotas.check("k", [10])  # and the refused write did not spend the write it had
