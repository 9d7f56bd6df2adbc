"""The fleet worked example of docs/deployment.md (docs/examples/fleet.sh), run as it is:
two servers on one PostgreSQL, a key and a chat through one, the memory through the other."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import Any

from conftest import clean_env, which

SCRIPT = Path(__file__).with_name("fleet.sh")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_fleet_example_runs(upstream: Any, pg_url: str, tmp_path: Path) -> None:
    fake, base = upstream
    before = len(fake.requests)
    env = clean_env(
        MEMORYD_DATABASE_URL=pg_url,
        MEMORYD_UPSTREAM_BASE_URL=base,
        MEMORYD_UPSTREAM_API_KEY="sk-fake",
        PORT_A=str(_free_port()),
        PORT_B=str(_free_port()),
        TMPDIR=str(tmp_path),
    )
    env.pop("MEMORYD_ADMIN_TOKEN")  # the script makes one, as a user following it would
    out = subprocess.run(
        [which("bash"), str(SCRIPT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "server B sees: User's dog is called Rex" in out.stdout, out.stdout
    assert len(fake.requests) > before  # the chat reached the provider
    assert not list(tmp_path.glob("tmp.*")), "the script cleans up after itself"
