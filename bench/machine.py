"""Where and on what a benchmark ran: git commit, CPU, memory, load, Python.

``machine()`` is computed once per process (at the first call, which ``python -m
bench`` makes before any stage starts), so ``load_average_start`` is the load when the
run began. ``load_average_now()`` is stamped on every results file as it is written.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def git_info() -> dict[str, Any]:
    """The commit the tree is at and whether tracked files differ from it."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    changed = [line[3:] for line in (status or "").splitlines() if line.strip()]
    return {
        "commit": commit.strip() if commit else None,
        "dirty": bool(changed) if status is not None else None,
        # other work may be in progress in the tree: say whether the benchmarked code was
        "dirty_in_bench_or_memoryd": any(p.startswith(("bench/", "memoryd/")) for p in changed),
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _ram_mb() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def load_average_now() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


@functools.cache
def machine() -> dict[str, Any]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        **git_info(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "ram_mb": _ram_mb(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_start": load_average_now(),
        "date": time.strftime("%Y-%m-%d"),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    """This process's resident set size now (Linux ``/proc``), in MB."""
    return _status_mb("VmRSS")


def peak_rss_mb() -> float:
    """This process's peak resident set size since start or the last reset, in MB."""
    return _status_mb("VmHWM")


def reset_peak_rss() -> bool:
    """Restart the peak (``VmHWM``) from the current RSS; false when the kernel refuses."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True
