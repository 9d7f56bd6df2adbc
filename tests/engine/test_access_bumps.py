"""Coalesced access bookkeeping: retrievals sum their bumps in memory and
one transaction writes them, on the timer or when the engine drains or closes."""

from __future__ import annotations

import time
from pathlib import Path

from memoryd.engine import MemoryEngine
from memoryd.engine.access import AccessBumps
from tests.conftest import add


def count_of(engine: MemoryEngine, memory_id: str) -> int:
    rows = engine.store.db.read().execute(
        "SELECT access_count FROM memories WHERE id = ?", (memory_id,)
    )
    return int(next(iter(rows))[0])


def test_bumps_wait_in_memory_until_flushed_then_land_summed(engine: MemoryEngine) -> None:
    engine.bumps.interval_s = 3600.0  # only an explicit flush writes
    often = add(engine, "k", "User drinks espresso every morning")
    once = add(engine, "k", "User drinks tea at night")
    for _ in range(5):
        engine.retrieve("k", "espresso", strategy="hybrid")  # keyword search here
    engine.retrieve("k", "tea night", strategy="hybrid")
    engine.store.flush()
    assert count_of(engine, often.id) == 0  # nothing written per request
    engine.drain()
    assert count_of(engine, often.id) == 5
    assert count_of(engine, once.id) == 1
    cached = engine.get(often.id)  # the read cache was told
    assert cached is not None
    assert cached.access_count == 5


def test_the_timer_writes_without_a_drain(engine: MemoryEngine) -> None:
    engine.bumps.interval_s = 0.05
    memory = add(engine, "k", "User drinks espresso every morning")
    engine.retrieve("k", "espresso", strategy="exact")
    deadline = time.monotonic() + 30
    while count_of(engine, memory.id) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert count_of(engine, memory.id) == 1


def test_closing_the_engine_writes_what_is_pending(tmp_path: Path) -> None:
    from memoryd.bootstrap import build_engine
    from memoryd.config import EngineConfig

    config = EngineConfig.from_env({}, data_dir=tmp_path)
    first = build_engine(config, {})
    first.bumps.interval_s = 3600.0
    memory = add(first, "k", "User drinks espresso every morning")
    first.retrieve("k", "espresso", strategy="exact")
    first.close()
    with build_engine(config, {}) as again:
        assert count_of(again, memory.id) == 1


def test_an_empty_flush_writes_nothing(engine: MemoryEngine) -> None:
    bumps = AccessBumps(engine.store, lambda ids: None)
    assert bumps.flush() is None
    bumps.add([])
    assert bumps.flush() is None
