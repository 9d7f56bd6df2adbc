"""Every CLI option that names a key takes its id or its name: ``keys create
my-app`` prints a random id, and ``memory list -k my-app`` answered ``-- 0 of 0``.
The real ``python -m memoryd`` in a subprocess, on a temporary data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def memoryd(data: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "MEMORY_"))}
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        env={**env, "MEMORYD_DATA_DIR": str(data)},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok(data: Path, *args: str, stdin: str = "") -> Any:
    """The ``--json`` answer of a command that must succeed."""
    done = memoryd(data, "--json", *args, stdin=stdin)
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout) if done.stdout.strip() else None


def refused(data: Path, *args: str) -> str:
    """The one-line error of a command that must fail with exit 1 and print nothing."""
    done = memoryd(data, *args)
    assert done.returncode == 1, (args, done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.startswith("error: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def create_key(data: Path, name: str) -> str:
    made = ok(data, "keys", "create", name)
    assert made["name"] == name
    return str(made["id"])


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_every_key_option_takes_the_keys_name(data: Path) -> None:
    key_id = create_key(data, "my-app")
    assert key_id != "my-app"
    added = ok(data, "memory", "add", "I prefer tabs over spaces", "-k", "my-app")
    assert added["memory"]["apiKeyId"] == key_id  # where the key itself looks
    listed = ok(data, "memory", "list", "-k", "my-app")
    assert [m["content"] for m in listed["data"]] == ["I prefer tabs over spaces"]
    assert ok(data, "memory", "list", "-k", key_id)["data"] == listed["data"]
    found = ok(data, "memory", "search", "tabs", "-k", "my-app", "--strategy", "exact")
    assert [h["content"] for h in found["memories"]] == ["I prefer tabs over spaces"]
    ok(data, "memory", "pin", added["id"])
    profile = ok(data, "memory", "profile", "-k", "my-app")["memories"]
    assert [m["content"] for m in profile] == ["I prefer tabs over spaces"]

    exported = memoryd(data, "export", "--owner", "my-app")
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["apiKeyId"] == key_id
    line = json.dumps({"content": "I deploy with Nomad", "key": "tool:deploy"})
    assert ok(data, "import", "-", "-k", "my-app", stdin=line + "\n")["imported"] == 1
    assert ok(data, "memory", "list", "-k", key_id)["total"] == 2

    cleared = ok(data, "memory", "clear", "-k", "my-app", "--type", "factual", "--yes")
    assert cleared["deletedCount"] == 2
    ok(data, "memory", "add", "I use fish", "-k", "my-app")
    receipt = ok(data, "memory", "forget", "-k", "my-app", "--all", "--yes")["erasure"]
    assert receipt["apiKeyId"] == key_id
    assert receipt["counts"]["memories"] == 1
    receipts = ok(data, "memory", "erasures", "-k", "my-app")["erasures"]
    assert [e["id"] for e in receipts] == [receipt["id"]]

    assert ok(data, "keys", "enable-memory", "my-app", "off")["key"]["id"] == key_id
    assert ok(data, "keys", "revoke", "my-app") == {"revoked": True}
    (key,) = ok(data, "keys", "list")["data"]
    assert key["memoryEnabled"] is False
    assert key["revokedAt"] is not None


def test_an_unknown_key_is_one_line_naming_the_known_ones(data: Path) -> None:
    key_id = create_key(data, "my-app")
    for args in (
        ("memory", "list", "-k", "my-ap"),
        ("memory", "add", "I like tea", "-k", "my-ap"),
        ("memory", "forget", "-k", "my-ap", "--all", "--yes"),
        ("export", "-k", "my-ap"),
        ("keys", "revoke", "my-ap"),
    ):
        error = refused(data, *args)
        assert "'my-ap'" in error
        assert f"'my-app' {key_id}" in error
    assert ok(data, "memory", "list")["total"] == 0  # the refused add stored nothing
    as_json = memoryd(data, "--json", "memory", "list", "-k", "nope")
    assert as_json.returncode == 1
    assert json.loads(as_json.stderr)["error"]["code"] == "not_found"

    for i in range(6):
        create_key(data, f"app-{i}")
    error = refused(data, "memory", "list", "-k", "nope")
    assert error.count("'app-") + error.count("'my-app'") == 5
    assert "and 2 more (memoryd keys list)" in error


def test_a_name_two_keys_share_is_refused_with_their_ids(data: Path) -> None:
    first, second = create_key(data, "laptop"), create_key(data, "laptop")
    ok(data, "memory", "add", "I use a Mac", "-k", first)
    for args in (("memory", "list", "-k", "laptop"), ("keys", "revoke", "laptop")):
        error = refused(data, *args)
        assert first in error
        assert second in error
    assert [k["revokedAt"] for k in ok(data, "keys", "list")["data"]] == [None, None]
    assert ok(data, "memory", "list", "-k", first)["total"] == 1  # an id still picks one


def test_owners_that_are_no_key_stay_reachable(data: Path) -> None:
    """A data dir without keys takes any owner (local use, owners as labels); with keys,
    an owner that already holds memories, and the shared pool, still stand for
    themselves; a new non-key owner is then a typo."""
    ok(data, "memory", "add", "Alice likes jazz", "--owner", "alice")
    create_key(data, "my-app")
    assert ok(data, "memory", "list", "--owner", "alice")["total"] == 1
    assert ok(data, "memory", "add", "Office hours are 9-5", "-k", "global")["created"] is True
    assert "'bob'" in refused(data, "memory", "add", "Bob likes rock", "--owner", "bob")
