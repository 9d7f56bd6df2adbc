"""The CLI over a real data dir: in process through click, plus one real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memoryd.cli import main


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    runner = CliRunner()
    data_dir = str(tmp_path / "data")

    def invoke(*args: str, input: str | bytes | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(main, ["--data-dir", data_dir, *args], input=input)

    return invoke


def test_add_list_get_search_delete_roundtrip(run) -> None:  # type: ignore[no-untyped-def]
    added = run("memory", "add", "I love C++ programming", "--owner", "alice", "--json")
    assert added.exit_code == 0, added.output
    memory_id = json.loads(added.output)["id"]
    run("memory", "add", "vim is my editor", "--owner", "alice")
    run("memory", "add", "bob's secret", "--owner", "bob")

    listed = json.loads(run("memory", "list", "--owner", "alice", "--json").output)
    assert listed["total"] == 2
    assert {m["apiKeyId"] for m in listed["data"]} == {"alice"}

    got = json.loads(run("memory", "get", memory_id, "--json").output)
    assert got["memory"]["content"] == "I love C++ programming"

    found = json.loads(run("memory", "search", "what is C++?", "--owner", "alice", "--json").output)
    assert found["memories"][0]["content"] == "I love C++ programming"
    assert {m["content"] for m in found["memories"]} <= {
        "I love C++ programming",
        "vim is my editor",
    }

    assert run("memory", "delete", memory_id).exit_code == 0
    missing = run("memory", "get", memory_id)
    assert missing.exit_code == 1
    assert "no memory" in missing.output


def test_remember_extracts_reconciles_and_list_shows_history(run) -> None:  # type: ignore[no-untyped-def]
    first = run("memory", "remember", "I prefer Vim. My dog is called Rex.", "-k", "ann", "--json")
    assert first.exit_code == 0, first.output
    stored = json.loads(first.output)["data"]
    assert [(m["content"], m["superseded"]) for m in stored] == [
        ("User prefers Vim", []),
        ("User's dog is called Rex", []),
    ]
    second = run("memory", "remember", "Actually, I've switched to Emacs.", "-k", "ann")
    assert second.exit_code == 0, second.output
    assert "User has switched to Emacs  [tool:editor] (replaces 1)" in second.output
    current = json.loads(run("memory", "list", "-k", "ann", "--json").output)
    assert sorted(m["content"] for m in current["data"]) == [
        "User has switched to Emacs",
        "User's dog is called Rex",
    ]
    history = run("memory", "list", "-k", "ann", "--history")
    assert "(superseded)" in history.output
    assert "User prefers Vim" in history.output
    assert run("memory", "remember", "What's the weather?", "-k", "ann").output.endswith(
        "-- 0 facts\n"
    )


def test_bad_input_is_one_clean_error(run) -> None:  # type: ignore[no-untyped-def]
    result = run("memory", "add", "x y z", "--owner", "", "--json")
    assert result.exit_code == 1
    error = json.loads(result.output.strip().splitlines()[-1])
    assert error["error"]["code"] == "invalid_request"
    assert "Traceback" not in result.output
    bad_meta = run("memory", "add", "content", "--owner", "a", "--metadata", "{nope")
    assert bad_meta.exit_code == 1
    assert "metadata" in bad_meta.output


def test_export_import_with_line_errors(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        run("memory", "add", f"fact number {i}", "--owner", "alice")
    exported = run("export", "--owner", "alice")
    lines = exported.output.strip().splitlines()
    assert len(lines) == 3
    assert all(json.loads(line)["apiKeyId"] == "alice" for line in lines)

    payload = "\n".join([lines[0], "not json", *lines[1:]]) + "\n"
    result = run("import", "-", "--owner", "bob", "--json", input=payload.encode())
    assert result.exit_code == 1  # an error line makes the exit status non-zero
    report = json.loads(result.output.strip().splitlines()[0])
    assert report["imported"] == 3
    assert report["errors"][0]["line"] == 2
    listed = json.loads(run("memory", "list", "--owner", "bob", "--json").output)
    assert listed["total"] == 3


def test_clear_and_status(run) -> None:  # type: ignore[no-untyped-def]
    for i in range(60):
        run("memory", "add", f"note {i}", "--owner", "alice", "--type", "episodic")
    cleared = json.loads(run("memory", "clear", "--owner", "alice", "--yes", "--json").output)
    assert cleared["deletedCount"] == 60
    status = json.loads(run("status", "--json").output)
    assert status["keyword"]["available"] is True
    assert status["memories"] == 0


def test_clear_without_yes_deletes_nothing_when_it_cannot_ask(run) -> None:  # type: ignore[no-untyped-def]
    """A script (no terminal) or --json without --yes used to delete silently."""
    run("memory", "add", "I prefer tabs", "--owner", "alice")
    piped = run("memory", "clear", "--owner", "alice", input=b"n\n")
    as_json = run("memory", "clear", "--owner", "alice", "--json")
    assert piped.exit_code == as_json.exit_code == 2
    assert "--yes" in piped.output
    listed = json.loads(run("memory", "list", "--owner", "alice", "--json").output)
    assert listed["total"] == 1


def test_status_reads_as_a_line_per_tier_and_json_has_it_all(run) -> None:  # type: ignore[no-untyped-def]
    shown = run("status")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].split() == ["memories", "0"]
    assert any(line.startswith("keyword") and " ok " in line for line in lines)
    assert json.loads(run("status", "--json").output)["memories"] == 0


def test_update_without_a_change_and_a_zero_budget_are_refused(run) -> None:  # type: ignore[no-untyped-def]
    memory_id = json.loads(run("memory", "add", "I like tea", "-k", "a", "--json").output)["id"]
    nothing = run("memory", "update", memory_id)
    assert nothing.exit_code == 2
    assert "nothing to change" in nothing.output
    zero = run("memory", "search", "tea", "-k", "a", "--max-tokens", "0")
    assert zero.exit_code == 2
    assert "--max-tokens" in zero.output


def test_console_script_runs_in_a_subprocess(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("memoryd")
    env = {"MEMORYD_DATA_DIR": str(tmp_path / "d"), "PATH": "/usr/bin:/bin"}
    add = subprocess.run(
        [str(exe), "memory", "add", "I prefer tabs", "-k", "k1", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert json.loads(add.stdout)["created"] is True
    listed = subprocess.run(
        [str(exe), "--json", "memory", "list"], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(listed.stdout)["data"][0]["content"] == "I prefer tabs"
    assert (tmp_path / "d" / "memoryd.db").exists()


def test_providers_add_list_remove(run) -> None:  # type: ignore[no-untyped-def]
    added = run(
        "providers",
        "add",
        "openai",
        "https://api.example.com/v1/",
        "--api-key",
        "sk-live-1234567890",
        "--json",
    )
    assert added.exit_code == 0, added.output
    listed = json.loads(run("providers", "list", "--json").output)
    assert [(p["name"], p["baseUrl"], p["hasKey"], p["kind"]) for p in listed] == [
        ("openai", "https://api.example.com/v1", True, "openai")
    ]
    assert "sk-live-1234567890" not in run("providers", "list", "--json").output
    bad = run("providers", "add", "x", "ftp://nope")
    assert bad.exit_code == 1
    assert "http" in bad.output
    # names the REST API refuses (then the list could not be written back there)
    for url in ("http://", "http://127.0.0.1:99999/v1"):
        refused = run("providers", "add", "x", url)
        assert refused.exit_code == 1
        assert "base_url" in refused.output
    for name in ("bad name", "a/b", "x" * 65):
        refused = run("providers", "add", name, "http://127.0.0.1:1/v1")
        assert refused.exit_code == 1
        assert "name" in refused.output
    assert run("providers", "remove", "openai").exit_code == 0
    assert json.loads(run("providers", "list", "--json").output) == []
    assert run("providers", "remove", "openai").exit_code == 1


def test_providers_add_with_a_kind(run) -> None:  # type: ignore[no-untyped-def]
    url = "https://api.anthropic.example/v1"
    added = run("providers", "add", "claude", url, "--kind", "anthropic", "--json")
    assert added.exit_code == 0, added.output
    assert json.loads(added.output)["kind"] == "anthropic"
    listed = json.loads(run("providers", "list", "--json").output)
    assert [(p["name"], p["kind"]) for p in listed] == [("claude", "anthropic")]
    text = run("providers", "list").output
    assert "claude" in text
    assert "anthropic" in text
    replaced = run("providers", "add", "claude", url, "--json")  # the default kind
    assert json.loads(replaced.output)["kind"] == "openai"
    bad = run("providers", "add", "x", url, "--kind", "gemini")
    assert bad.exit_code == 2
    assert "gemini" in bad.output


def test_help_loads_neither_the_engine_nor_the_harnesses() -> None:
    """``memoryd --help`` and a command's ``--help`` import no engine, no numpy and no
    evaluation harness (they were 0.6 s of imports per command)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from memoryd.cli import main\n"
        "for args in (['--help'], ['keys', '--help'], ['providers', '--help']):\n"
        "    assert CliRunner().invoke(main, args).exit_code == 0, args\n"
        "heavy = ['memoryd.engine.service', 'memoryd.eval.locomo', 'numpy',\n"
        "         'memoryd.core.extraction']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
    listed = subprocess.run(
        [sys.executable, "-m", "memoryd", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "eval " in listed  # the lazy group is listed with its help
