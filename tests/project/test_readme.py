"""The README's quick start prints what it says it prints: the first-start
banner of ``memoryd serve`` and the ``memoryd memory remember`` example, run as the
README runs them, compared line for line (the smoke suite does the same from the
installed wheel)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_server import MEMORYD, _clean_env, spawn

__all__ = ["spawn"]

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
#: What the README's banner shows for the two values that vary per machine.
SHOWN_URL, SHOWN_DATA = "http://127.0.0.1:20128", "/home/you/.memoryd"


def block_after(marker: str) -> list[str]:
    """The lines of the first fenced block after ``marker``."""
    rest = README[README.index(marker) :]
    found = re.search(r"```[a-z]*\n(.*?)```", rest, re.S)
    assert found is not None, marker
    return found[1].rstrip("\n").split("\n")


def memoryd(data: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_clean_env(),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_remember_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    command, *shown = block_after("What memoryd stored from that one message")
    assert command.startswith("$ memoryd ")
    memoryd(tmp_path, "keys", "create", "my-app")
    printed = memoryd(tmp_path, *shlex.split(command)[2:])
    assert printed.rstrip("\n").split("\n") == shown


@pytest.mark.skipif(not MEMORYD.exists(), reason="console script not installed")
def test_the_first_start_prints_the_readme_banner(spawn: Any, tmp_path: Path) -> None:
    shown = block_after("then where everything is and what to run next")
    server = spawn("--demo")
    url = server.wait_ready()
    start = server.stderr.index("memoryd listening on")
    printed = server.stderr[start:].split("\n")[: len(shown)]
    same = [
        line.replace(url, SHOWN_URL).replace(str(tmp_path / "data"), SHOWN_DATA) for line in printed
    ]
    assert same == shown
