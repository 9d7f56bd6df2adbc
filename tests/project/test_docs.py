"""Documentation stays true: every environment variable and setting is documented."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd.config.options import BY_ENV, ENVIRONMENT, OPTIONS, Option
from memoryd.config.settings import FIELDS

ROOT = Path(__file__).resolve().parents[2]
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
    """``config.options`` declares every variable (``memoryd doctor`` holds a name
    against it): it must name every variable the code reads, and the docs every one of
    it, no more."""
    read = _env_vars_in_code()
    assert read <= ENVIRONMENT, f"read but not declared: {sorted(read - ENVIRONMENT)}"
    documented = set(re.findall(r"`((?:MEMORYD|MEMORY|QDRANT)_[A-Z0-9_]+)`", CONFIG_DOC))
    assert documented == ENVIRONMENT, (
        f"documented, not declared: {sorted(documented - ENVIRONMENT)}; "
        f"declared, not documented: {sorted(ENVIRONMENT - documented)}"
    )


def _documented_defaults() -> dict[str, str]:
    """Variable -> its default cell in the environment table, backticks dropped."""
    rows = re.findall(r"(?m)^\| `((?:MEMORYD|MEMORY|QDRANT)_[A-Z0-9_]+)` \| ([^|]*) \|", CONFIG_DOC)
    return {name: cell.replace("`", "").strip() for name, cell in rows}


def _agrees(option: Option, cell: str) -> bool:
    if option.derived:
        return cell.startswith(option.derived)
    if option.default is None:
        return cell == "unset"
    if isinstance(option.default, bool):
        return cell == str(option.default).lower()
    if isinstance(option.default, int | float):
        return float(cell.split()[0]) == option.default
    return cell == option.default


def test_the_environment_table_has_a_row_per_variable_with_its_default() -> None:
    cells = _documented_defaults()
    assert set(cells) == ENVIRONMENT, f"no row: {sorted(ENVIRONMENT - set(cells))}"
    wrong = [f"{o.env}: docs {cells[o.env]!r}" for o in OPTIONS if not _agrees(o, cells[o.env])]
    assert not wrong, "documented defaults that are not the declared ones:\n" + "\n".join(wrong)


def test_every_declaration_is_whole() -> None:
    for option in OPTIONS:
        assert option.doc.strip(), option.env
        assert option.default is None or isinstance(option.default, option.type), option.env
        assert not option.choices or option.default in option.choices, option.env


def test_variables_parsed_outside_engine_config_default_to_their_declaration() -> None:
    """Serve's address, the connection guard and typed decay parse their variables
    more strictly (a bad value stops serve) or below the config layer; their defaults
    are still the declared ones."""
    from memoryd.config.qdrant import normalize
    from memoryd.core.decay import decay_config_from_env
    from memoryd.http.protocol.limits import ConnectionLimits
    from memoryd.server import default_host, default_log_level, default_port, default_workers

    assert default_host({}) == BY_ENV["MEMORYD_HOST"].default
    assert default_port({}) == BY_ENV["MEMORYD_PORT"].default
    assert default_workers({}) == BY_ENV["MEMORYD_WORKERS"].default
    assert default_log_level({}) == BY_ENV["MEMORYD_LOG_LEVEL"].default
    limits = ConnectionLimits.from_env({})
    assert limits.header_timeout_s == BY_ENV["MEMORYD_HEADER_TIMEOUT_S"].default
    assert limits.body_timeout_s == BY_ENV["MEMORYD_BODY_TIMEOUT_S"].default
    assert limits.body_min_rate == BY_ENV["MEMORYD_BODY_MIN_BYTES_PER_S"].default
    assert limits.keepalive_timeout_s == BY_ENV["MEMORYD_KEEPALIVE_TIMEOUT_S"].default
    assert limits.keepalive_max_requests == BY_ENV["MEMORYD_KEEPALIVE_MAX_REQUESTS"].default
    assert limits.parser == BY_ENV["MEMORYD_HTTP_PARSER"].default
    decay = decay_config_from_env({})
    assert decay.enabled is BY_ENV["MEMORY_TYPED_DECAY_ENABLED"].default
    assert decay.ttl_days_by_type["episodic"] == BY_ENV["MEMORY_TYPED_DECAY_EPISODIC_DAYS"].default
    immunity = BY_ENV["MEMORY_TYPED_DECAY_ACCESS_IMMUNITY"].default
    assert decay.access_immunity_threshold == immunity
    assert decay.sweep_interval_s == BY_ENV["MEMORY_TYPED_DECAY_SWEEP_INTERVAL"].default
    qdrant = normalize({}, {})
    assert (qdrant.port, qdrant.host) == (BY_ENV["QDRANT_PORT"].default, "")
    assert qdrant.collection == BY_ENV["QDRANT_COLLECTION"].default
