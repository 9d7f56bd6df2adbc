"""Background threads yield the cores to requests: each lowers its own nice value
(Linux keeps one per thread), and the request's thread keeps its own."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.engine.background import BackgroundWorker
from memoryd.priority import BACKGROUND_NICE, lower_this_thread

pytestmark = pytest.mark.skipif(not hasattr(os, "setpriority"), reason="no per-thread nice")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_thread_lowers_only_itself() -> None:
    mine = _nice()
    seen: list[int | None] = []
    thread = threading.Thread(target=lambda: seen.append(lower_this_thread()))
    thread.start()
    thread.join()
    assert seen == [min(19, mine + BACKGROUND_NICE)]
    assert _nice() == mine  # the caller (a request's thread) is untouched


def test_background_jobs_run_below_the_request() -> None:
    worker = BackgroundWorker("priority-test")
    seen: list[int] = []
    try:
        assert worker.submit(lambda: seen.append(_nice()))
        assert worker.join(timeout=30)
    finally:
        worker.close()
    assert seen == [min(19, _nice() + BACKGROUND_NICE)]


def test_the_engines_background_threads_are_lowered(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"MEMORYD_DATA_DIR": str(data)}
    engine = build_engine(EngineConfig.from_env(env, data_dir=data), env)
    try:
        engine.drain(timeout=120)
        mine = _nice()
        lowered = {}
        for thread in threading.enumerate():
            if thread.name in ("memoryd-index", "memoryd-extraction") and thread.native_id:
                lowered[thread.name] = os.getpriority(os.PRIO_PROCESS, thread.native_id)
        assert set(lowered) == {"memoryd-index", "memoryd-extraction"}
        assert all(v == min(19, mine + BACKGROUND_NICE) for v in lowered.values()), lowered
    finally:
        engine.close()
