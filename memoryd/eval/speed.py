"""How fast rules extraction runs: messages per second on one thread, and the slowest
of a set of 64 KiB messages (the extractor's input cap) built to make it work hard.

The long messages are timed in a child process (``python -m memoryd.eval.speed``), so
one that sends a regex into catastrophic backtracking is stopped after ``LIMIT_S``
instead of holding the run: a regex cannot be interrupted in the thread running it."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from memoryd.core.extraction import extract_facts, warm_up

LONG_CHARS = 64 * 1024
WORST_REPEATS = 3
#: A 64 KiB message still running after this long is stopped and reported as timed out,
#: so a runaway regex cannot hold the benchmark for minutes.
LIMIT_S = 2.0
START_S = 10.0  # allowed for the child process to start


def throughput(messages: Sequence[str], seconds: float = 2.0) -> dict[str, Any]:
    """``extract_facts`` over ``messages``, whole passes until ``seconds`` have gone by
    (at least one pass), on this thread."""
    if not messages:
        return {"messages": 0, "passes": 0, "calls": 0, "elapsed_s": 0.0, "messages_per_s": None}
    warm_up()  # built once per process: not part of any message's time
    passes = 0
    start = time.perf_counter()
    elapsed = 0.0
    while passes == 0 or elapsed < seconds:
        for text in messages:
            extract_facts(text)
        passes += 1
        elapsed = time.perf_counter() - start
    calls = passes * len(messages)
    return {
        "messages": len(messages),
        "mean_chars": round(sum(map(len, messages)) / len(messages), 1),
        "passes": passes,
        "calls": calls,
        "elapsed_s": round(elapsed, 3),
        "messages_per_s": round(calls / elapsed, 1),
    }


def _fill(unit: str, chars: int = LONG_CHARS) -> str:
    return (unit * (chars // max(1, len(unit)) + 1))[:chars]


def long_messages(labelled: Sequence[str], chars: int = LONG_CHARS) -> list[tuple[str, str]]:
    """``(name, text)`` of ``chars`` characters each: the labelled messages run together,
    then runs built to make a regex backtrack or a rule fire on every word."""
    inputs = []
    if labelled:
        inputs += [
            ("labelled messages, one per line", _fill("\n".join(labelled) + "\n", chars)),
            ("labelled messages, one line", _fill(" ".join(labelled) + " ", chars)),
        ]
    runs = {
        '"I " repeated': "I ",
        '"my " repeated': "my ",
        '"I\'m " repeated': "I'm ",
        "apostrophes": "'",
        "curly apostrophes": "\u2019",
        "spaces": " ",
        "newlines": "\n",
        "one word, no punctuation": "a",
        "words, no punctuation": "word ",
        '"I like " repeated': "I like ",
        '"I like tea and I " repeated': "I like tea and I ",
        '"and I " repeated': "and I ",
        '"my name is " repeated': "my name is ",
        '"I live in " repeated': "I live in ",
        '"I have a dog named " repeated': "I have a dog named ",
        '"my favorite " repeated': "my favorite ",
        "dotted words": "a.",
        "CJK": "\u6211\u559c\u6b22\u8336",
    }
    inputs += [(name, _fill(unit, chars)) for name, unit in runs.items()]
    inputs.append(('"I" then spaces', "I" + " " * (chars - 2) + "x"))
    inputs.append(('"I like" then spaces', "I like" + " " * (chars - 7) + "x"))
    return inputs


def _child() -> None:
    """``python -m memoryd.eval.speed``: time each text of the JSON on stdin ``repeats``
    times (fewer once a call took over a second), one JSON line per call as it ends, so
    the parent can stop at a runaway call."""
    warm_up()  # once per process, before any timing (within the start allowance)
    job = json.loads(sys.stdin.read())
    for text in job["texts"]:
        for call in range(1, job["repeats"] + 1):
            start = time.perf_counter()
            extract_facts(text)
            ms = (time.perf_counter() - start) * 1000
            last = call == job["repeats"] or ms > 1000
            print(json.dumps({"ms": ms, "last": last}), flush=True)
            if last:
                break


def _pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)
    lines.put("")  # the end of the child's output


def _answer(line: str, child: subprocess.Popen[str]) -> dict[str, Any]:
    if not line:
        raise RuntimeError(f"the timing child process ended early (status {child.wait()})")
    answer: dict[str, Any] = json.loads(line)
    return answer


def _in_child(texts: Sequence[str], repeats: int, limit_s: float) -> list[float | None]:
    """The median ms of each text, measured in a child process, until a call runs over
    ``limit_s`` (then None for that text, and the child is killed); the rest unmeasured."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    lines: queue.Queue[str] = queue.Queue()
    out: list[float | None] = []
    command = [sys.executable, "-m", "memoryd.eval.speed"]
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdin=pipe, stdout=pipe, text=True, env=env) as child:
        if child.stdin is None or child.stdout is None:
            raise RuntimeError("the timing child process has no pipes")
        reader = threading.Thread(target=_pump, args=(child.stdout, lines))
        reader.start()
        try:
            with contextlib.suppress(BrokenPipeError):
                child.stdin.write(json.dumps({"texts": list(texts), "repeats": repeats}))
                child.stdin.close()
            wait = limit_s + START_S  # the first call also waits for the child to start
            for _ in texts:
                times: list[float] = []
                try:
                    while True:
                        answer = _answer(lines.get(timeout=wait), child)
                        times.append(answer["ms"])
                        wait = limit_s
                        if answer["last"]:
                            break
                except queue.Empty:
                    out.append(None)
                    break
                out.append(round(statistics.median(times), 3))
        finally:
            child.kill()
            child.wait()
            reader.join()  # the pipe is at its end once the child is gone
    return out


def worst_case(
    inputs: Sequence[tuple[str, str]], repeats: int = WORST_REPEATS, limit_s: float = LIMIT_S
) -> dict[str, Any]:
    """The median ms of ``repeats`` calls per input (fewer once one took a second),
    measured in a child process that is stopped when a call runs over ``limit_s`` (the
    input then counts as ``limit_s`` and ``timed_out``); and the slowest input."""
    rows: list[dict[str, Any]] = []
    while len(rows) < len(inputs):
        rest = inputs[len(rows) :]
        measured = _in_child([text for _, text in rest], repeats, limit_s)
        for (name, text), ms in zip(rest, measured, strict=False):
            slow = ms is None
            row = {"input": name, "chars": len(text), "ms": limit_s * 1000 if slow else ms}
            rows.append(row | {"timed_out": slow})
    worst = max(rows, key=lambda r: r["ms"], default=None)
    return {
        "inputs": rows,
        "worst_ms": worst["ms"] if worst else None,
        "worst_input": worst["input"] if worst else None,
        "timed_out": [r["input"] for r in rows if r["timed_out"]],
        "limit_s": limit_s,
    }


if __name__ == "__main__":
    _child()
