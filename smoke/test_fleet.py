"""The fleet worked example of docs/deployment.md (docs/examples/fleet.sh), run as it is:
two servers on one PostgreSQL, a key and a chat through one, the memory through the other."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from conftest import clean_env, free_ports, which

SCRIPT = Path(__file__).with_name("fleet.sh")


def test_the_fleet_example_runs(upstream: Any, pg_url: str, tmp_path: Path) -> None:
    fake, base = upstream
    before = len(fake.requests)
    port_a, port_b = free_ports(2)
    which("curl")
    env = clean_env(
        MEMORYD_DATABASE_URL=pg_url,
        MEMORYD_UPSTREAM_BASE_URL=base,
        MEMORYD_UPSTREAM_API_KEY="sk-fake",
        PORT_A=str(port_a),
        PORT_B=str(port_b),
        TMPDIR=str(tmp_path),
    )
    env.pop("MEMORYD_ADMIN_TOKEN")  # the script makes one, as a user following it would
    # Its own process group: on a timeout the servers it started go down with it.
    script = subprocess.Popen(
        [which("bash"), str(SCRIPT)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        stdout, stderr = script.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(script.pid, signal.SIGKILL)
        stdout, stderr = script.communicate()
    out = subprocess.CompletedProcess(script.args, script.returncode, stdout, stderr)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "server B sees: User's dog is called Rex" in out.stdout, out.stdout
    assert len(fake.requests) > before  # the chat reached the provider
    assert not list(tmp_path.glob("tmp.*")), "the script cleans up after itself"
