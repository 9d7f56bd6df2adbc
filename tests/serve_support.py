"""``memoryd serve`` as a real process for the tests that need one: a clean environment
(none of the runner's ``MEMORYD_``/``MEMORY_``/``QDRANT_`` variables), its log to a
file, and its URL once the ready banner is printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

MEMORYD = Path(sys.executable).with_name("memoryd")
READY = re.compile(r"memoryd listening on (http://\S+)")


def start_serve(
    data: Path,
    log: Path,
    sink: IO[bytes],
    env: dict[str, str],
    *args: str,
    ready_s: float = 120.0,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``memoryd --data-dir DATA serve --port 0 ARGS`` with ``env`` over a clean
    environment, stderr to ``sink`` (the file ``log``); ``(process, url)`` once ready."""
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "MEMORY_", "QDRANT_"))
    }
    cmd = [str(MEMORYD), "--data-dir", str(data), "serve", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=sink, env=clean | env)
    deadline = time.monotonic() + ready_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited: {log.read_text()}")
        found = READY.search(log.read_text(errors="replace"))
        if found:
            return proc, found[1]
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"server not ready: {log.read_text()}")
