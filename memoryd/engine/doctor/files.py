"""The data dir and the admin token.

Writability is tried, not asked: ``os.access`` says yes to root whatever the mode and
knows nothing of read-only mounts, and CI runs as root. Doctor creates nothing that
stays: in an existing data dir it creates and removes a temporary file; for a data
dir that does not exist yet it creates and removes a temporary directory in the
nearest existing ancestor, which is the ``mkdir`` serve will do there (serve then owns
the new directory, so writing into it follows).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.engine.doctor.report import Check, Setup, fail, ok, warn

PROBE_PREFIX = ".memoryd-doctor-"
NEW_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


ELSEWHERE = "or choose another data dir (--data-dir or MEMORYD_DATA_DIR)"


def _present(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def data_dir_check(setup: Setup) -> Check:
    path = setup.config.data_dir.absolute()
    if _present(path):
        return _existing(path)
    ancestor = path.parent
    while not _present(ancestor):
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return fail(
            "data-dir",
            f"{path} cannot be created: {ancestor} is not a directory",
            f"move {ancestor} away, {ELSEWHERE}",
        )
    try:
        os.rmdir(tempfile.mkdtemp(prefix=PROBE_PREFIX, dir=ancestor))
    except OSError as exc:
        return fail(
            "data-dir",
            f"{path} cannot be created: {ancestor} is not writable ({exc.strerror})",
            f"create {path} as the user serve runs as, {ELSEWHERE}",
        )
    return ok("data-dir", f"{path} does not exist yet; serve creates it ({ancestor} is writable)")


def _existing(path: Path) -> Check:
    if not path.is_dir():
        return fail("data-dir", f"{path} is not a directory", f"move it away, {ELSEWHERE}")
    try:
        handle, probe = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=path)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        return fail(
            "data-dir",
            f"{path} is not writable ({exc.strerror})",
            f"chown/chmod it for the user serve runs as (chmod u+rwx {path}), {ELSEWHERE}",
        )
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return warn(
            "data-dir",
            f"{path} is writable, and accessible by other users (mode {mode:o}): "
            "it holds every memory and the provider keys",
            f"chmod 700 {path}",
        )
    return ok("data-dir", f"{path} is writable")


# -- the admin token ------------------------------------------------------------------


def _token_problem(name: str, where: str, token: str, dev: bool = False) -> Check:
    """A token found: whether serve accepts it (printable ASCII, no spaces) and its length."""
    if not all(0x21 <= ord(ch) <= 0x7E for ch in token):
        return fail(
            name,
            f"{where}: the token must be printable ASCII without spaces; serve refuses it",
            f"replace it with a random token: {NEW_TOKEN}",
        )
    if len(token) < 16:
        return (warn if dev else fail)(
            name,
            f"{where}: the token is short ({len(token)} characters)"
            + ("" if dev else "; serve refuses it outside --dev"),
            f"use 16 characters or more: {NEW_TOKEN}",
        )
    return ok(name, f"{where} ({len(token)} characters)")


def admin_token_check(setup: Setup, stored: Mapping[str, Any] | None) -> Check:
    """The token serve would use, never shown. ``stored``: the shared store's settings
    (None when they could not be read)."""
    name, env = "admin-token", setup.env
    dev = env.get("MEMORYD_DEV", "").strip().lower() in ("1", "true", "yes", "on")
    if "MEMORYD_ADMIN_TOKEN" in env:
        token = env.get("MEMORYD_ADMIN_TOKEN", "").strip()
        if not token:
            return fail(
                name,
                "MEMORYD_ADMIN_TOKEN is set but empty: serve refuses to start",
                f"unset it, or set a random token: {NEW_TOKEN}",
            )
        return _token_problem(name, "set by MEMORYD_ADMIN_TOKEN", token, dev)
    first = "the first `memoryd serve` generates one and prints it once"
    keep = "set MEMORYD_ADMIN_TOKEN, or keep the token the first serve prints"
    if setup.config.database_url:
        if stored is None:
            return warn(name, "not read: the database could not be read", keep)
        value = stored.get(setup.token_setting)
        if value is None:
            return warn(name, f"none yet: {first} (stored in the database)", keep)
        if not isinstance(value, str) or not value.strip():
            return fail(
                name,
                f"the database's admin token ({setup.token_setting}) is not a string",
                "set MEMORYD_ADMIN_TOKEN",
            )
        return _token_problem(name, "stored in the database", value.strip(), dev)
    path = setup.config.data_dir / setup.token_file
    if not _present(path):
        return warn(name, f"none yet: {first} (saved to {path})", keep)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        return fail(name, f"cannot read {path}: {exc}", f"fix its permissions, or delete {path}")
    if not token:
        return fail(
            name,
            f"{path} is empty: serve refuses to start",
            f"delete {path} (serve generates a new token) or write a token into it",
        )
    return _token_problem(name, f"in {path}", token, dev)
