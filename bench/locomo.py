"""The ``locomo`` bench stage: ``memoryd eval locomo --strategy all --json``.

Run as a child process through the CLI, so the stage measures exactly what a user
runs (and the eval's own temporary data dir and progress bar stay its own). The JSON
the CLI prints is kept whole under ``"locomo"`` in ``bench/results/locomo.json``; its
``rows`` are recall@k and tokens@k per strategy, overall and per category.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo"
CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}


def run_locomo(data: Path, extra_args: list[str] | None = None) -> dict[str, Any]:
    """The eval's JSON result; its progress goes straight to our stderr."""
    command = [
        sys.executable,
        "-c",
        "from memoryd.cli import main; main(prog_name='memoryd')",
        "eval",
        "locomo",
        "--data",
        str(data),
        "--strategy",
        "all",
        "--json",
        *(extra_args or []),
    ]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True, cwd=REPO)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def locomo_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for strategy, s in result.get("strategies", {}).items():
        parts = [("all", s)] + [
            (f"{c} {CATEGORIES.get(c, '')}".strip(), cat)
            for c, cat in sorted(s.get("per_category", {}).items())
        ]
        for label, part in parts:
            row: dict[str, Any] = {"strategy": strategy, "category": label}
            row |= {f"R@{k}": v for k, v in part["recall"].items()}
            row |= {f"tok@{k}": v for k, v in part["tokens"].items()}
            row["n"] = part["n"]
            if label == "all":
                row |= {f"latency_{p}_ms": v for p, v in s.get("latency_ms", {}).items()}
            rows.append(row)
    return rows
