"""A quick run of the abuse benchmark (bench/abuse.py): a real `memoryd serve`,
a fake provider process, polite clients alone and then beside one greedy key holding
more streams than its share and sockets that never finish their headers. Asserted: the
results JSON has its fields, no polite request failed, the greedy key was held to its
share and the slow sockets were closed by the header deadline. Timings are the
benchmark's output, never asserted here (CI shares 2 cores)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_abuse_run_keeps_polite_clients_error_free(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "bench.abuse", "--quick", "--results", str(tmp_path)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]

    payload = json.loads((tmp_path / "abuse.json").read_text())
    assert payload["benchmark"] == "abuse"
    assert payload["machine"]["cores"]
    rows = {r["phase"]: r for r in payload["rows"]}
    assert set(rows) == {"quiet", "abuse"}
    for row in rows.values():
        assert row["polite_requests"] > 0
        assert row["polite_errors"] == 0
        for field in ("p50_ms", "p95_ms", "p99_ms", "server_rss_mb", "server_peak_fds"):
            assert row[field] > 0, field

    detail = payload["abuse"]
    assert detail["polite_errors"] == 0, detail["sample_errors"]
    assert detail["p99_ratio"] > 0
    assert set(detail["target"]) == {"p99_ratio_max", "polite_errors", "met"}
    greedy = detail["greedy"]
    streams = detail["settings"]["streams"]
    assert streams > 32  # more than the default per-key share
    assert 0 < greedy["peak_open_streams"] <= 32
    assert greedy["streams_refused_429"] > 0
    # the server counted each of them (and the probe after the attack, if refused)
    assert detail["gateway_events"]["concurrency_limited"] >= greedy["streams_refused_429"]
    assert greedy["slow_closed_408"] > 0  # the header deadline, not the client, closed them
    for point in ("before", "after_quiet", "peak_during_abuse", "after"):
        assert detail["rss_mb"][point] > 0, point
    assert detail["server_log"]["http_5xx"] == 0
    assert "greedy_probe_status" in detail["after_attack"]
