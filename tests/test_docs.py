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


def test_the_changelog_leads_with_the_version_the_package_reports() -> None:
    """The version lives in memoryd/__init__.py alone; the changelog says what it changed."""
    import tomllib

    from memoryd import __version__

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "a second place for the version"
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "memoryd.__version__"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"(?m)^## \[(\d+\.\d+\.\d+)\]", changelog)
    assert versions, "no version headings"
    assert versions[0] == __version__, (
        f"CHANGELOG starts at {versions[0]}, package is {__version__}"
    )
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))), reverse=True)


def test_the_known_environment_is_what_the_code_reads_and_the_docs_list() -> None:
    """``config.ENVIRONMENT`` is what ``memoryd doctor`` holds a variable's name against:
    it must name every variable the code reads, and the docs every one of it."""
    from memoryd.config import ENVIRONMENT

    read = _env_vars_in_code()
    assert read <= ENVIRONMENT, f"read but unknown to doctor: {sorted(read - ENVIRONMENT)}"
    documented = set(re.findall(r"`((?:MEMORYD|MEMORY|QDRANT)_[A-Z0-9_]+)`", CONFIG_DOC))
    assert documented == ENVIRONMENT, (
        f"documented, not known: {sorted(documented - ENVIRONMENT)}; "
        f"known, not documented: {sorted(ENVIRONMENT - documented)}"
    )
