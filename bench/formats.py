"""Gateway overhead per wire format: chat completions, the Responses API and
Anthropic's Messages API through one memoryd, each against its own fake upstream.

One ``memoryd serve`` with 1,000 keyword-retrieved memories for the key, the OpenAI
fake and the Anthropic fake as processes (``python -m memoryd.testing``). Every round
sends one request per format straight to its upstream and one through memoryd, in
turn, so machine noise hits every format alike. ``vs_chat`` is a format's added p50
over chat completions' (the goal: within 10%).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.corpus import queries
from bench.gateway import ADMIN, EMBEDDERS, free_port, prepare, process, timed
from bench.retrieval import percentile

FORMATS = ("chat", "responses", "messages")


def _body(fmt: str, text: str, stream: bool) -> dict[str, Any]:
    if fmt == "chat":
        return {"model": "fake", "stream": stream, "messages": [{"role": "user", "content": text}]}
    if fmt == "responses":
        return {"model": "fake", "stream": stream, "input": text}
    return {
        "model": "claude-fake",
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": text}],
    }


def _path(fmt: str) -> str:
    return {"chat": "/v1/chat/completions", "responses": "/v1/responses"}.get(fmt, "/v1/messages")


def _headers(fmt: str, secret: str) -> dict[str, str]:
    if fmt == "messages":
        return {"x-api-key": secret, "anthropic-version": "2023-06-01"}
    return {"authorization": f"Bearer {secret}"}


def run(n: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        up_port, anth_port, md_port = free_port(), free_port(), free_port()
        env = dict(os.environ) | {
            "MEMORYD_DATA_DIR": str(data),
            "MEMORYD_ADMIN_TOKEN": ADMIN,
            "MEMORYD_UPSTREAM_BASE_URL": f"http://127.0.0.1:{up_port}/v1",
            "MEMORYD_ANTHROPIC_BASE_URL": f"http://127.0.0.1:{anth_port}",
            "MEMORYD_DATABASE_URL": "",
        }
        progress("formats: preparing 1,000 memories (keyword-only)")
        secret = prepare(data, EMBEDDERS["keyword-only"], env)
        fake = [sys.executable, "-m", "memoryd.testing"]
        memoryd = [str(Path(sys.executable).with_name("memoryd")), "serve", "--port", str(md_port)]
        upstreams = {"chat": up_port, "responses": up_port, "messages": anth_port}
        with (
            process([*fake, "--port", str(up_port)], env, f"http://127.0.0.1:{up_port}/v1/models"),
            process(
                [*fake, "--anthropic", "--port", str(anth_port)],
                env,
                f"http://127.0.0.1:{anth_port}/v1/models",
            ),
            process(memoryd, env, f"http://127.0.0.1:{md_port}/healthz"),
            httpx.Client(timeout=60) as client,
        ):
            rows = []
            for stream in (False, True):
                progress(f"formats: stream={stream}")
                rows += _compare(client, upstreams, md_port, secret, stream, n)
    return rows


def _compare(
    client: httpx.Client,
    upstreams: dict[str, int],
    md_port: int,
    secret: str,
    stream: bool,
    n: int,
) -> list[dict[str, Any]]:
    qs = queries(n + 100)
    counter = iter(range(10**9))

    def sender(fmt: str, port: int, headers: dict[str, str]) -> Callable[[], None]:
        def send() -> None:
            body = _body(fmt, qs[next(counter) % len(qs)], stream)
            url = f"http://127.0.0.1:{port}{_path(fmt)}"
            response = client.post(url, json=body, headers=headers)
            response.read()
            if response.status_code != 200:
                raise RuntimeError(f"{url}: {response.status_code} {response.text[:200]}")

        return send

    direct = {f: sender(f, upstreams[f], _headers(f, "direct")) for f in FORMATS}
    gateway = {f: sender(f, md_port, _headers(f, secret)) for f in FORMATS}
    for fmt in FORMATS:  # warm-up: caches, connections
        timed(direct[fmt], 30)
        timed(gateway[fmt], 30)
    base: dict[str, list[float]] = {f: [] for f in FORMATS}
    through: dict[str, list[float]] = {f: [] for f in FORMATS}
    for _ in range(n):
        for fmt in FORMATS:
            base[fmt] += timed(direct[fmt], 1)
            through[fmt] += timed(gateway[fmt], 1)
    added = {f: percentile(through[f], 50) - percentile(base[f], 50) for f in FORMATS}
    return [
        {
            "format": fmt,
            "stream": stream,
            "upstream_p50_ms": round(percentile(base[fmt], 50), 2),
            "added_p50_ms": round(added[fmt], 2),
            "added_p95_ms": round(percentile(through[fmt], 95) - percentile(base[fmt], 95), 2),
            "vs_chat": round(added[fmt] / added["chat"], 3) if added["chat"] > 0 else None,
        }
        for fmt in FORMATS
    ]
