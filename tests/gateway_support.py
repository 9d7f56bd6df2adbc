"""One memoryd gateway on loopback for end-to-end tests: the official `openai` client ->
memoryd -> a fake OpenAI-compatible upstream (memoryd.testing.FakeUpstream) that records
what it receives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai

from memoryd import create_app
from memoryd.config.upstreams import Provider, save_providers
from memoryd.embedding.service import Resolver
from memoryd.engine import MemoryEngine
from memoryd.testing import FakeUpstream, serve_asgi
from tests.conftest import ADMIN, make_engine


@dataclass
class Gateway:
    engine: MemoryEngine
    upstream: FakeUpstream
    url: str
    key: str
    owner: str

    def send(self, text: str, *, headers: dict[str, str] | None = None, **fields: Any) -> Any:
        """One chat call (``fields``: ``user=``, ``extra_body=``...); background
        extraction has finished when it returns."""
        with openai.OpenAI(
            base_url=f"{self.url}/v1", api_key=self.key, max_retries=0, default_headers=headers
        ) as client:
            reply = client.chat.completions.create(
                model="chat-model", messages=[{"role": "user", "content": text}], **fields
            )
        assert self.engine.drain(timeout=30)
        return reply

    def send_raw(self, text: str, **fields: Any) -> Any:
        """``send``, answering the raw response (its ``x-memoryd-*`` headers too)."""
        with openai.OpenAI(base_url=f"{self.url}/v1", api_key=self.key, max_retries=0) as c:
            raw = c.chat.completions.with_raw_response.create(
                model="chat-model", messages=[{"role": "user", "content": text}], **fields
            )
        assert self.engine.drain(timeout=30)
        return raw

    def injected(self) -> list[str]:
        """The memories the last chat call carried upstream (the block's ``- `` lines)."""
        chats = [r["body"] for r in self.upstream.requests if r["body"]["model"] == "chat-model"]
        messages = chats[-1]["messages"]
        block = next((m["content"] for m in messages if m["role"] == "system"), "")
        return [line[2:] for line in block.split("\n") if line.startswith("- ")]

    def api(self, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {ADMIN}", **kw.pop("headers", {})}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30, **kw)

    def export(self) -> list[dict[str, Any]]:
        response = self.api("GET", "/api/memory/export", params={"apiKeyId": self.owner})
        assert response.status_code == 200
        return [json.loads(line) for line in response.text.splitlines() if line.strip()]


@contextmanager
def running_gateway(engine: MemoryEngine, key_name: str = "app") -> Iterator[Gateway]:
    upstream = FakeUpstream()
    with serve_asgi(upstream.app) as upstream_url:
        save_providers(engine.store, [Provider("default", f"{upstream_url}/v1", "secret")])
        record, secret = engine.keys.create(key_name)
        with serve_asgi(create_app(engine, admin_token=ADMIN)) as url:
            yield Gateway(engine, upstream, url, secret, record.id)


@contextmanager
def gateway_on(
    data: Path, key_name: str = "app", resolver: Resolver | None = None
) -> Iterator[Gateway]:
    """A fresh engine on ``data`` (``resolver``: the embedder; None: the default, the
    packaged MiniLM) behind a gateway; the engine is closed afterwards."""
    engine = make_engine(data, resolver=resolver)
    try:
        with running_gateway(engine, key_name) as gateway:
            yield gateway
    finally:
        engine.close()
