"""``memoryd doctor``: print what the install has and lacks (``memoryd.engine.doctor``
does the checking; this module reads the configuration and prints the report)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from memoryd.cli._common import cli_command, emit

if TYPE_CHECKING:
    from memoryd.engine.doctor import Report


def _summary(report: Report, strict: bool) -> str:
    fails, warns = report.count("fail"), report.count("warn")
    if fails:
        return f"{fails} failed, {warns} warned: serve would not start or not work"
    if warns and strict:
        return f"{warns} warned (--strict fails on warnings): serve would work, degraded"
    if warns:
        return f"{warns} warned: serve would work, degraded"
    return "all checks passed: serve would work"


def _print(report: Report, strict: bool) -> None:
    width = max(len(check.name) for check in report.checks)
    indent = " " * (width + 8)
    for check in report.checks:
        click.echo(f"{check.name:<{width}}  {check.status:<4}  {check.detail}")
        if check.fix and check.status != "ok":
            click.echo(f"{indent}fix: {check.fix}")
    click.echo(_summary(report, strict))


@click.command("doctor")
@click.option(
    "--database-url",
    default=None,
    help="postgresql://... : check this PostgreSQL store (default $MEMORYD_DATABASE_URL; "
    "unset: the SQLite file in the data dir).",
)
@click.option(
    "--data-dir",
    "doctor_data_dir",
    default=None,
    help="The data dir serve would use (overrides the global --data-dir; a path that is "
    "not a directory is reported, not refused).",
)
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too, not only on failures.")
@cli_command
def doctor_cmd(
    ctx: click.Context, database_url: str | None, doctor_data_dir: str | None, strict: bool
) -> None:
    """Check what this install has and lacks (read-only).

    One line per check (ok, warn: serve works degraded, fail: it would not work),
    the fix under each problem. Exit status 0 when serve would work (warnings
    allowed), 1 when a check failed.
    """
    from memoryd.config import EngineConfig
    from memoryd.engine.doctor import Setup, diagnose
    from memoryd.server import (
        TOKEN_FILE,
        TOKEN_SETTING,
        ServeError,
        default_host,
        default_port,
        default_workers,
    )

    env = dict(os.environ)  # the environment serve would start with, as serve reads it
    if database_url:
        env["MEMORYD_DATABASE_URL"] = database_url
    config = EngineConfig.from_env(env, data_dir=doctor_data_dir or ctx.obj["data_dir"])
    port, workers, problem = 0, 1, None
    try:
        port, workers = default_port(env), default_workers(env)
    except ServeError as exc:
        problem = exc.message
    setup = Setup(
        config,
        env,
        token_file=TOKEN_FILE,
        token_setting=TOKEN_SETTING,
        host=default_host(env),
        port=port,
        workers=workers,
        serve_problem=problem,
    )
    report = diagnose(setup)
    emit(ctx, report.to_dict(strict=strict), lambda: _print(report, strict))
    ctx.exit(0 if report.passed(strict=strict) else 1)
