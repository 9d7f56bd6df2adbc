"""A short run of the load benchmark (bench/load.py) in CI: a real `memoryd serve`, a
fake upstream process, concurrent chats (half streamed), REST writes, reads and
previews; every acknowledged write and chat fact must be stored exactly once and the
server's log must show no lock error and no 5xx. The 50-client, 60 s run is the
benchmark (`python -m bench.load`)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # bench/ is a top-level package of the repo, not installed
    sys.path.insert(0, str(REPO))

from bench import load  # noqa: E402


def test_a_short_load_run_loses_nothing_and_errs_nowhere() -> None:
    rows, checks = load.run(clients=8, seconds=4.0, keys=3)
    ops = {r["op"] for r in rows}
    assert {"chat", "chat_stream", "write", "read", "preview"} <= ops
    assert checks["errors"] == 0, checks["sample_errors"]
    assert checks["acknowledged_writes"] > 0
    assert checks["acknowledged_chats"] > 0
    assert checks["lost_writes"] == checks["duplicated_or_wrong"] == 0
    assert checks["lost_extractions"] == 0
    assert checks["integrity_check"] == "ok"
    assert checks["database_locked"] == checks["http_5xx"] == 0
    assert not load.failed(checks)


def test_log_checks_find_lock_errors_and_5xx() -> None:
    log = "\n".join(
        [
            '{"level": "info", "message": "request", "status": 200}',
            '{"level": "error", "message": "boom: database is locked"}',
            '{"level": "info", "message": "request", "status": 503}',
            "Traceback (most recent call last):",
        ]
    )
    assert load.log_checks(log) == {"database_locked": 1, "server_error_lines": 1, "http_5xx": 1}
