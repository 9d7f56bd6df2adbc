"""The load benchmark's RSS summary (bench/rss.py): RSS after the warm-up, peak, last,
growth and the least-squares slope, from ``(seconds, MB)`` samples. Pure arithmetic:
no processes, no clocks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # bench/ is a top-level package of the repo, not installed
    sys.path.insert(0, str(REPO))

from bench.rss import rss_line, slope_per_min, summarize  # noqa: E402


def test_flat_memory_after_warm_up_has_no_growth_and_zero_slope() -> None:
    samples = [(0.0, 80.0), (30.0, 150.0), (60.0, 200.0), (90.0, 200.0), (120.0, 200.0)]
    s = summarize(samples, warmup_s=60.0)
    assert s["post_warmup_at_s"] == 60.0
    assert s["rss_post_warmup_mb"] == 200.0
    assert s["rss_peak_mb"] == 200.0
    assert s["rss_last_mb"] == 200.0
    assert s["rss_growth_mb"] == 0.0
    assert s["slope_mb_per_min"] == 0.0
    assert s["post_warmup_samples"] == 3


def test_a_steady_leak_shows_as_growth_and_its_rate_per_minute() -> None:
    # 100 MB at 60 s, then +0.5 MB every 10 s: 3 MB/min; the warm-up climb is ignored
    samples = [(0.0, 40.0), (30.0, 90.0)] + [(60.0 + 10 * i, 100.0 + 0.5 * i) for i in range(55)]
    s = summarize(samples, warmup_s=60.0)
    assert s["rss_post_warmup_mb"] == 100.0
    assert s["rss_last_mb"] == 127.0
    assert s["rss_growth_mb"] == 27.0
    assert s["rss_peak_mb"] == 127.0
    assert s["slope_mb_per_min"] == pytest.approx(3.0)


def test_the_baseline_is_the_first_sample_at_or_after_the_warm_up() -> None:
    samples = [(0.0, 50.0), (55.0, 60.0), (65.2, 70.0), (75.0, 69.0)]
    s = summarize(samples, warmup_s=60.0)
    assert s["post_warmup_at_s"] == 65.2
    assert s["rss_post_warmup_mb"] == 70.0
    assert s["rss_growth_mb"] == -1.0
    assert s["post_warmup_samples"] == 2


def test_the_peak_counts_warm_up_samples_too() -> None:
    samples = [(0.0, 50.0), (20.0, 300.0), (60.0, 120.0), (70.0, 121.0)]
    s = summarize(samples, warmup_s=60.0)
    assert s["rss_peak_mb"] == 300.0
    assert s["rss_growth_mb"] == 1.0


def test_a_run_shorter_than_the_warm_up_uses_the_first_sample() -> None:
    samples = [(0.0, 50.0), (10.0, 56.0), (20.0, 62.0)]
    s = summarize(samples, warmup_s=60.0)
    assert s["post_warmup_at_s"] == 0.0
    assert s["rss_post_warmup_mb"] == 50.0
    assert s["rss_growth_mb"] == 12.0
    assert s["slope_mb_per_min"] == pytest.approx(36.0)
    assert s["post_warmup_samples"] == 3


def test_one_sample_has_no_slope_and_none_has_no_figures() -> None:
    one = summarize([(61.0, 90.0)], warmup_s=60.0)
    assert one["rss_post_warmup_mb"] == one["rss_peak_mb"] == one["rss_last_mb"] == 90.0
    assert one["rss_growth_mb"] == 0.0
    assert one["slope_mb_per_min"] is None
    empty = summarize([])
    assert empty["rss_last_mb"] is None
    assert empty["slope_mb_per_min"] is None
    assert empty["post_warmup_samples"] == 0


def test_slope_is_the_least_squares_fit_not_the_end_points() -> None:
    # the end points alone say +2 MB/min; around the middle the samples balance out
    samples = [(0.0, 96.0), (60.0, 108.0), (120.0, 100.0), (180.0, 92.0), (240.0, 104.0)]
    assert slope_per_min(samples) == pytest.approx(0.0, abs=1e-9)
    assert slope_per_min([(0.0, 100.0), (60.0, 104.0), (120.0, 96.0)]) == pytest.approx(-2.0)
    assert slope_per_min([(5.0, 1.0), (5.0, 2.0)]) is None


def test_the_summary_line_names_every_figure() -> None:
    s = summarize([(0.0, 50.0), (60.0, 100.0), (120.0, 101.0)], warmup_s=60.0)
    text = rss_line(s | {"every_s": 10.0})
    for part in ("100.0", "peak 101.0", "last 101.0", "growth 1.0", "+1.000 MB/min"):
        assert part in text
