"""Background threads yield the cores to requests.

Extraction, indexing and the sweeps run on their own threads in the server process; a
chat request waiting on the event loop must not queue behind them for a core. Linux
keeps a nice value per thread, so each background thread lowers its own priority when
it starts (the scheduler then gives a contended core to a request thread about 10 times
as often). Work such a thread starts inherits it: a single-threaded ONNX session runs in
the caller's thread. Elsewhere, or when the call is refused, nothing changes.
"""

from __future__ import annotations

import contextlib
import os
import threading

#: Added to a background thread's nice value (0 is a request's; 19 the lowest).
BACKGROUND_NICE = 10


def lower_this_thread(increment: int = BACKGROUND_NICE) -> int | None:
    """Raise the calling thread's nice value by ``increment`` (capped at 19); its new
    nice value, or None where threads have no nice value of their own."""
    if not hasattr(os, "setpriority") or not hasattr(threading, "get_native_id"):
        return None
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + increment))
        return os.getpriority(os.PRIO_PROCESS, tid)
    return None
