"""What ``memoryd serve`` tells the person who started it: the ready banner
(where the dashboard is, which upstream answers, what to run next), the variables it
will not read (a typo is otherwise silent: the first chat answers 503), and a data dir
it cannot write named in one line with the fix, instead of a traceback.

No engine import: the banner is given what it shows."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from memoryd.config import unknown_variables
from memoryd.core.masking import redacted_url

#: The variables ``--demo`` sets, pointing the default provider at the demo one.
DEMO_KEY = "demo"


def unread_variables_line(env: Mapping[str, str]) -> str | None:
    named = unknown_variables(env)
    if not named:
        return None
    return (
        f"not read by memoryd, so ignored: {', '.join(named)} "
        "(docs/CONFIGURATION.md lists every variable)"
    )


def unwritable(root: Path) -> str | None:
    """Why memoryd cannot keep its files in ``root`` (an existing directory), or None."""
    try:
        with tempfile.NamedTemporaryFile(dir=root, prefix=".memoryd-probe-"):
            return None
    except OSError as exc:
        who = f"uid {os.getuid()}" if hasattr(os, "getuid") else "this user"
        return (
            f"the data dir {root} is not writable ({exc.strerror}) by {who}: fix its "
            "permissions (chown or chmod it), or choose another with --data-dir or "
            "MEMORYD_DATA_DIR"
        )


def banner(url: str, upstream: str | None, *, keys: int, demo: str | None, data: str) -> list[str]:
    """The lines printed once the server listens. ``upstream``: the default provider's
    base URL (None: none configured); ``demo``: the demo provider's, with ``--demo``."""
    lines = [f"memoryd listening on {url}"]
    lines.append(f"  dashboard  {url}/dashboard (sign in with the admin token)")
    if demo and upstream == demo:
        lines.append("  upstream   the demo provider (--demo): answers with what memoryd sent it")
    elif demo and upstream:  # a provider saved in the store wins over the environment
        lines.append(
            f"  upstream   {redacted_url(upstream)}: a saved provider named default, which "
            "--demo does not replace (GET /api/settings/providers)"
        )
    elif upstream:
        lines.append(f"  upstream   {redacted_url(upstream)}")
    else:
        lines.append(
            "  upstream   none: set MEMORYD_UPSTREAM_BASE_URL (and MEMORYD_UPSTREAM_API_KEY), "
            "or try memoryd serve --demo"
        )
    lines.append(f"  data       {data}")
    first = "memoryd keys create my-app" if keys == 0 else "memoryd keys list"
    lines.append(f"  next       {first}, then point an OpenAI client at {url}/v1 with that key")
    return lines


@contextlib.contextmanager
def demo_provider(env: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """``env`` with the default provider pointed at the demo provider, served on a
    loopback port for as long as the block runs."""
    from memoryd.testing import serve_asgi
    from memoryd.testing.demo import DemoUpstream

    with serve_asgi(DemoUpstream().app) as url:
        yield {
            **env,
            "MEMORYD_UPSTREAM_BASE_URL": f"{url}/v1",
            "MEMORYD_UPSTREAM_API_KEY": DEMO_KEY,
        }
