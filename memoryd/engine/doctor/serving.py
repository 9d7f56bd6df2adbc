"""What ``memoryd serve`` itself would refuse before opening anything: its address and
worker count, and variables that look like memoryd's but are not (a typo there is
silently ignored: ``MEMORYD_DATABSE_URL`` means SQLite, ``MEMORYD_UPSTREAM_URL`` no
provider)."""

from __future__ import annotations

import errno
import socket

from memoryd.config import inert_variables, ours, unknown_variables
from memoryd.engine.doctor.report import Check, Setup, fail, ok, warn


def serve_check(setup: Setup) -> Check:
    """``serve``: the host, port and workers parse, more than one worker has the shared
    store it needs, and the address can be bound (a bind and close: nothing listens)."""
    name = "serve"
    if setup.serve_problem:
        return fail(name, setup.serve_problem, "fix the value (docs/CONFIGURATION.md)")
    where = f"{setup.host}:{setup.port}"
    workers = f", {setup.workers} workers" if setup.workers > 1 else ""
    if setup.workers > 1 and not setup.config.database_url:
        return fail(
            name,
            f"{setup.workers} workers on the SQLite store: one SQLite file has one writer",
            "set MEMORYD_WORKERS=1 (or --workers 1), or use PostgreSQL (MEMORYD_DATABASE_URL)",
        )
    if setup.port == 0:
        return ok(name, f"{setup.host}, a free port picked at start{workers}")
    try:
        infos = socket.getaddrinfo(setup.host, setup.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return fail(name, f"cannot resolve host {setup.host!r}: {exc}", "fix MEMORYD_HOST")
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return warn(
                    name,
                    f"{where} is in use: serve cannot bind it while that process runs "
                    "(fine if it is this memoryd)",
                    "stop the other process, or pick another port (--port, MEMORYD_PORT)",
                )
            return fail(
                name, f"cannot bind {where}: {exc.strerror or exc}", "fix MEMORYD_HOST / --host"
            )
    return ok(name, f"{where} free{workers}")


def environment_check(setup: Setup) -> Check:
    """``environment``: every memoryd-looking variable is one memoryd reads, and none it
    reads does nothing as set (``MEMORY_RRF_K`` without RRF)."""
    name = "environment"
    named = unknown_variables(setup.env)
    inert = inert_variables(setup.env)
    if not named and inert:
        return warn(name, "; ".join(inert), "see docs/CONFIGURATION.md (Coming from OmniRoute)")
    if not named:
        return ok(name, f"{len(ours(setup.env))} memoryd variables set, all known")
    return warn(
        name,
        "; ".join([f"not read by memoryd, so ignored: {', '.join(named)}", *inert]),
        "rename them (docs/CONFIGURATION.md lists every variable), or ignore this line if "
        "they are meant for another program",
    )
