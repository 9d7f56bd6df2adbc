"""Resident set size of server processes over a run (Linux ``/proc``).

``RssSampler`` reads ``VmRSS`` of each server process and its descendants (the workers
of ``memoryd serve --workers N``) every few seconds from a thread of its own, so a busy
event loop does not delay the samples; ``summarize`` turns ``(seconds, mb)`` samples
into what the load benchmark reports: RSS after a warm-up, the peak, the last, the
growth since the warm-up and a least-squares slope in MB per minute.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: RSS before this many seconds of load is start-up and cache filling, not growth.
WARMUP_S = 60.0


def status_mb(pid: int, field: str = "VmRSS") -> float | None:
    """A ``/proc/<pid>/status`` size field in MB; None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return None  # a zombie has no VmRSS line


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (one pass over ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def tree_mb(pid: int) -> float:
    """Summed RSS of ``pid`` and its descendants, in MB."""
    return sum(mb for p in descendants(pid) if (mb := status_mb(p)) is not None)


class RssSampler:
    """Samples the summed RSS of ``pids`` (each with its descendants) every ``every``
    seconds, from ``start()`` (t = 0) until ``stop()``, which takes one last sample."""

    def __init__(self, pids: Sequence[int], every: float) -> None:
        self.pids = list(pids)
        self.every = every
        self.samples: list[tuple[float, float]] = []
        self.per_server: list[list[float]] = []  # MB of each server tree, per sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)
        self._t0 = 0.0

    def sample(self) -> None:
        each = [round(tree_mb(pid), 1) for pid in self.pids]
        self.samples.append((round(time.monotonic() - self._t0, 1), round(sum(each), 1)))
        self.per_server.append(each)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def start(self) -> None:
        self._t0 = time.monotonic()
        self.sample()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if not self.samples or time.monotonic() - self._t0 - self.samples[-1][0] > 0.5:
            self.sample()

    def result(self, warmup_s: float = WARMUP_S) -> dict[str, Any]:
        """The summary, the settings and every sample (``[seconds, mb]``) for the JSON."""
        return {
            **summarize(self.samples, warmup_s),
            "every_s": self.every,
            "servers": len(self.pids),
            "samples": [list(s) for s in self.samples],
            "per_server_mb": self.per_server if len(self.pids) > 1 else None,
        }


def slope_per_min(samples: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of MB over time, in MB per minute; None with fewer than two
    distinct sample times."""
    n = len(samples)
    if n < 2:
        return None
    mean_t = sum(t for t, _ in samples) / n
    mean_mb = sum(mb for _, mb in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if var == 0:
        return None
    cov = sum((t - mean_t) * (mb - mean_mb) for t, mb in samples)
    return cov / var * 60.0


def summarize(samples: Sequence[tuple[float, float]], warmup_s: float = WARMUP_S) -> dict[str, Any]:
    """From ``(seconds since start, MB)`` samples in time order: the RSS at the first
    sample at or after ``warmup_s`` (the first sample when none is that late), the
    peak and the last RSS, ``rss_growth_mb`` (last minus post-warm-up) and the
    least-squares slope over the post-warm-up samples in MB per minute."""
    if not samples:
        return {
            "warmup_s": warmup_s,
            "post_warmup_at_s": None,
            "rss_post_warmup_mb": None,
            "rss_peak_mb": None,
            "rss_last_mb": None,
            "rss_growth_mb": None,
            "slope_mb_per_min": None,
            "post_warmup_samples": 0,
        }
    start = next((i for i, (t, _) in enumerate(samples) if t >= warmup_s), 0)
    after = samples[start:]
    slope = slope_per_min(after)
    return {
        "warmup_s": warmup_s,
        "post_warmup_at_s": after[0][0],
        "rss_post_warmup_mb": round(after[0][1], 1),
        "rss_peak_mb": round(max(mb for _, mb in samples), 1),
        "rss_last_mb": round(samples[-1][1], 1),
        "rss_growth_mb": round(samples[-1][1] - after[0][1], 1),
        "slope_mb_per_min": None if slope is None else round(slope, 3),
        "post_warmup_samples": len(after),
    }


def rss_line(rss: dict[str, Any]) -> str:
    """One sentence for the tables and the console."""
    slope = rss.get("slope_mb_per_min")
    return (
        f"server RSS MB after {rss['warmup_s']:.0f} s warm-up (at {rss['post_warmup_at_s']} s) "
        f"{rss['rss_post_warmup_mb']}, peak {rss['rss_peak_mb']}, last {rss['rss_last_mb']}, "
        f"growth {rss['rss_growth_mb']}, slope "
        f"{'n/a' if slope is None else f'{slope:+.3f}'} MB/min "
        f"({rss['post_warmup_samples']} samples after warm-up, every {rss['every_s']:g} s)"
    )
