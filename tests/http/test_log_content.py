"""Logs never hold what people said: ``memoryd serve`` as a real process at
debug level, a memory written over REST and over MCP (the SDK's own client), a chat
through the gateway with the official ``openai`` client whose words are captured, a
retrieval preview; the whole log then holds none of those words. Erasure
promises logs never hold memory content."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import openai
import pytest

from memoryd.testing import FakeUpstream, serve_asgi
from tests.mcp_support import Session, over_http
from tests.serve_support import start_serve

ADMIN = "log-content-admin-token-0123456789"
#: Words that appear only in what people said: none may reach the log.
SAID = {
    "rest": "User keeps a pet axolotl named Quibblewick",
    "mcp": "User is allergic to zarfberries",
    "chat": "I work at Plonkmatic Industries as a glassblower",
    "query": "what about my Flimsworth appointment",
}
MARKERS = ("Quibblewick", "zarfberries", "Plonkmatic", "Flimsworth")


@pytest.fixture
def upstream() -> Iterator[str]:
    fake = FakeUpstream()
    with serve_asgi(fake.app) as url:
        yield url


def _serve(
    data: Path, log: Path, sink: IO[bytes], upstream: str
) -> tuple[subprocess.Popen[bytes], str]:
    env = {
        "MEMORYD_ADMIN_TOKEN": ADMIN,
        "MEMORYD_LOG_FORMAT": "json",
        "MEMORYD_UPSTREAM_BASE_URL": f"{upstream}/v1",
    }
    return start_serve(data, log, sink, env, "--log-level", "debug")


def test_debug_logs_hold_no_memory_content_or_message_text(tmp_path: Path, upstream: str) -> None:
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        _exercise(tmp_path, log, sink, upstream)
    text = log.read_text(errors="replace")
    assert text.count("\n") > 20  # debug logging was on
    lines = [line for line in text.splitlines() if any(m.lower() in line.lower() for m in MARKERS)]
    assert not lines, lines[:5]


def _exercise(tmp_path: Path, log: Path, sink: IO[bytes], upstream: str) -> None:
    proc, url = _serve(tmp_path / "data", log, sink, upstream)
    try:
        auth = {"Authorization": f"Bearer {ADMIN}"}
        created = httpx.post(f"{url}/api/keys", headers=auth, json={"name": "app"}, timeout=30)
        assert created.status_code == 201
        key, owner = created.json()["key"], created.json()["id"]
        memory = {"apiKeyId": owner, "key": "pet", "content": SAID["rest"]}
        stored = httpx.post(f"{url}/api/memory", headers=auth, json=memory, timeout=30)
        assert stored.status_code == 201

        async def add(session: Session) -> None:
            await session.ok("memory_add", {"content": SAID["mcp"]})
            await session.ok("memory_search", {"query": SAID["query"]})

        over_http(url, key, add)
        over_http(url, key, add, mode="legacy")  # a stateful session: answers as SSE
        with openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0) as client:
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": SAID["chat"]}]
            )
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": SAID["query"]}], stream=True
            )
            assert list(stream)
        preview = httpx.post(
            f"{url}/api/memory/retrieve-preview",
            headers=auth,
            json={"apiKeyId": owner, "query": SAID["query"]},
            timeout=30,
        )
        assert preview.status_code == 200
        searched = httpx.get(  # words in a query string: the access log must not keep them
            f"{url}/api/memory",
            headers=auth,
            params={"apiKeyId": owner, "q": SAID["query"]},
            timeout=30,
        )
        assert searched.status_code == 200
        refused = httpx.post(  # a refused write: its error must not quote the content
            f"{url}/api/memory",
            headers=auth,
            json={"apiKeyId": owner, "key": "k", "content": SAID["rest"], "type": "nope"},
            timeout=30,
        )
        assert refused.status_code == 400
        deadline = time.monotonic() + 60  # the chat's facts are captured in the background
        listed = ""
        while time.monotonic() < deadline and "Plonkmatic" not in listed:
            listed = httpx.get(
                f"{url}/api/memory", headers=auth, params={"apiKeyId": owner}, timeout=30
            ).text
            time.sleep(0.1)
        assert "Plonkmatic" in listed  # captured, so the extraction path ran
        assert "Quibblewick" in listed
        assert "zarfberries" in listed
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


@pytest.mark.parametrize("json_lines", [True, False])
def test_library_debug_lines_only_when_asked_and_then_marked(json_lines: bool) -> None:
    import io
    import json
    import logging

    from memoryd.http.observability import configure_logging

    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    try:
        for content in (False, True):
            out = io.StringIO()
            configure_logging("debug", json_lines, stream=out, content=content)
            logging.getLogger("sse_starlette.sse").debug("chunk: User likes Quibblewick")
            logging.getLogger("memoryd.engine").debug("engine detail")
            lines = out.getvalue().splitlines()
            ours = [line for line in lines if "engine detail" in line]
            theirs = [line for line in lines if "Quibblewick" in line]
            assert len(ours) == 1  # our debug lines at debug, always, never marked
            assert "content" not in ours[0].lower()
            if not content:
                assert theirs == []
                continue
            assert len(theirs) == 1
            if json_lines:
                assert json.loads(theirs[0])["mayHoldContent"] is True
            else:
                assert "[may hold content]" in theirs[0]
    finally:
        for handler in list(root.handlers):
            if handler not in saved[1]:
                root.removeHandler(handler)
        root.setLevel(saved[0])
        for name in ("memoryd", "uvicorn"):
            logging.getLogger(name).setLevel(logging.NOTSET)
