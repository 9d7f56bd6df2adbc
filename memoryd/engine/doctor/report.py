"""What ``memoryd doctor`` looks at and what it answers: ``Setup`` in, ``Check`` lines
and a ``Report`` out. Plain data, shared by the check modules and the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memoryd.config import EngineConfig

#: ``ok``; ``warn``: serve works, degraded (keyword-only search, an upstream down, no
#: token yet); ``fail``: serve would not start, or would start and not work.
Status = Literal["ok", "warn", "fail"]

#: What the fix for a broken install is, wherever a packaged file is missing.
REINSTALL = (
    "reinstall memoryd from the wheel or checkout you installed it from "
    "(pip install --force-reinstall 'memoryd-VERSION-py3-none-any.whl[all]'): "
    "the installed package lacks files"
)


@dataclass(frozen=True, slots=True)
class Setup:
    """The configuration ``memoryd serve`` would start with. The admin token's places
    come from the server (``server.TOKEN_FILE``, ``server.TOKEN_SETTING``), which sits
    above the engine and cannot be imported from here."""

    config: EngineConfig
    env: Mapping[str, str]
    token_file: str
    token_setting: str
    #: Every network check gives up after this long: doctor stays quick when things are down.
    timeout_s: float = 2.5
    #: Where serve would listen, and with how many processes (``memoryd.server`` parses
    #: them; ``serve_problem`` is its refusal when a value does not parse).
    host: str = "127.0.0.1"
    port: int = 20128
    workers: int = 1
    serve_problem: str | None = None


@dataclass(frozen=True, slots=True)
class Check:
    """One line: what was checked, how it stands, what was found, and the fix."""

    name: str
    status: Status
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def warn(name: str, detail: str, fix: str) -> Check:
    return Check(name, "warn", detail, fix)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, "fail", detail, fix)


@dataclass(frozen=True, slots=True)
class Report:
    checks: tuple[Check, ...]

    def count(self, status: Status) -> int:
        return sum(1 for check in self.checks if check.status == status)

    def passed(self, *, strict: bool = False) -> bool:
        """Serve would work: no failure (and, ``strict``, no warning either)."""
        return self.count("fail") == 0 and not (strict and self.count("warn"))

    def to_dict(self, *, strict: bool = False) -> dict[str, Any]:
        """The ``--json`` shape: ``ok`` is what the exit status says."""
        return {
            "ok": self.passed(strict=strict),
            "checks": [check.to_dict() for check in self.checks],
        }


def prefixed(settings: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The stored settings under ``prefix``, without it (how the settings services read them)."""
    return {k[len(prefix) :]: v for k, v in settings.items() if k.startswith(prefix)}
