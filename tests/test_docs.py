"""Documentation stays true: every environment variable and setting is documented."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd.settings import FIELDS

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DOC = (ROOT / "docs" / "CONFIGURATION.md").read_text(encoding="utf-8")


def _env_vars_in_code() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "memoryd").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        # Names read from an environment mapping: env.get("X") / env["X"] / _int(env, "X")
        names |= set(
            re.findall(r"env(?:\.get\(|\[|, )\"((?:MEMORYD|MEMORY|QDRANT)_[A-Z0-9_]+)\"", text)
        )
    return names


def test_every_environment_variable_is_documented() -> None:
    names = _env_vars_in_code()
    assert "MEMORYD_DATA_DIR" in names  # the scan itself works
    missing = sorted(n for n in names if f"`{n}`" not in CONFIG_DOC)
    assert not missing, f"undocumented environment variables: {missing}"


def test_every_setting_is_documented() -> None:
    missing = [f for f in FIELDS if f"`{f}`" not in CONFIG_DOC]
    assert not missing, f"undocumented settings: {missing}"


def test_readme_commands_are_the_ones_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = "python3 -m venv .venv && .venv/bin/pip install -e '.[all,dev]'"
    assert install in readme
    assert install.replace("pip install", "pip install -q") in ci
    assert ".venv/bin/pytest" in readme
    assert "\n.venv/bin/pytest" in ci
