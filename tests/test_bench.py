"""``python -m bench`` at a tiny size: results JSON with the commit, the machine and
percentiles, a PNG plot and the generated Markdown region (issue 9)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytest.importorskip("matplotlib")


@pytest.mark.slow
def test_bench_tiny_run_writes_results_plot_and_tables(tmp_path: Path) -> None:
    results, plots, docs = tmp_path / "results", tmp_path / "plots", tmp_path / "bench.md"
    docs.write_text(
        "# Benchmarks\n\nhand-written\n\n<!-- bench:start -->\nold\n<!-- bench:end -->\n\ntail\n"
    )
    command = [sys.executable, "-m", "bench", "--sizes", "200", "--queries", "20"]
    command += ["--only", "retrieval,plots,tables", "--results", str(results)]
    command += ["--plots", str(plots), "--docs", str(docs)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    payload = json.loads((results / "retrieval.json").read_text())
    machine = payload["machine"]
    assert len(machine["commit"]) == 40
    assert isinstance(machine["dirty"], bool)
    for field in ("cpu_model", "cores", "ram_mb", "python", "platform", "load_average_start"):
        assert machine[field], field
    assert len(machine["load_average_start"]) == 3
    rows = payload["rows"]
    assert {"recent", "hybrid"} <= {r["strategy"] for r in rows}
    for row in rows:
        assert row["memories"] == 200
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"]

    ingest = json.loads((results / "ingest.json").read_text())["rows"]
    keyword = next(r for r in ingest if r["embedder"] == "keyword-only")
    assert keyword["ingest_per_s"] > 0
    assert keyword["rss_after_mb"] > 0
    assert keyword["rss_mb_per_100k"] is None  # not scaled from a corpus this small

    png = plots / "latency-vs-size.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written\n")
    assert text.endswith("<!-- bench:end -->\n\ntail\n")
    assert "\nold\n" not in text
    assert "| 200 | keyword-only | recent |" in text
    assert "(plots/latency-vs-size.png)" in text
    assert machine["commit"][:10] in text
