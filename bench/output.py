"""Where the benchmarks' results go and how one is written: every stage, whether
``python -m bench`` runs it or it runs alone (``python -m bench.load``, ...), writes
through ``write``, so ``bench/__main__.py`` only parses flags and dispatches.

``RESULTS`` is the directory ``write`` uses; a runner with a ``--results`` flag points
it elsewhere (``output.RESULTS = ...``) before the first write.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.machine import load_average_now, machine

RESULTS = Path(__file__).resolve().parent / "results"


def table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def write(name: str, rows: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": name,
        "machine": machine(),
        "load_average_end": load_average_now(),
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "rows": rows,
        **(extra or {}),
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\n## {name}\n\n{table(rows)}\n", flush=True)
