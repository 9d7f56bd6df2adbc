"""memoryd on loopback in front of one fake upstream per wire format, for the tests of
the Responses API, Anthropic's Messages API and embeddings: the official
``openai`` and ``anthropic`` clients -> memoryd -> ``memoryd.testing``'s fakes, which
record what they receive."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai

from memoryd.app import create_app
from memoryd.config.upstreams import Provider, save_providers
from memoryd.core.injection import MEMORY_OPEN
from memoryd.engine import MemoryEngine
from memoryd.testing import FakeAnthropicUpstream, FakeUpstream, serve_asgi
from tests.conftest import ADMIN

OPENAI_SECRET = "openai-upstream-secret"
ANTHROPIC_SECRET = "anthropic-upstream-secret"


@dataclass
class Wire:
    engine: MemoryEngine
    openai_upstream: FakeUpstream
    anthropic_upstream: FakeAnthropicUpstream
    url: str
    key: str
    owner: str
    openai_url: str  # the fake OpenAI upstream's base URL (``.../v1``), to call it directly
    anthropic_url: str
    app: Any = None
    _clients: list[Any] = field(default_factory=list)

    def openai(self, key: str | None = None, **headers: str) -> openai.OpenAI:
        client = openai.OpenAI(
            base_url=f"{self.url}/v1",
            api_key=key or self.key,
            max_retries=0,
            default_headers=headers or None,
        )
        self._clients.append(client)
        return client

    def anthropic(
        self, key: str | None = None, *, bearer: bool = False, **headers: str
    ) -> anthropic.Anthropic:
        secret = key or self.key
        client = anthropic.Anthropic(
            base_url=self.url,
            api_key=None if bearer else secret,
            auth_token=secret if bearer else None,
            max_retries=0,
            default_headers=headers or None,
        )
        self._clients.append(client)
        return client

    def memories(self, user_id: str | None = None) -> list[str]:
        """The owner's current memories, once background extraction has finished."""
        assert self.engine.drain(timeout=30)
        page = self.engine.list_memories(owner=self.owner, user_id=user_id, limit=200)
        return sorted(m.content for m in page.data)

    def free_slots(self) -> int:
        """Upstream pool slots no call holds (all of them, when nothing leaked)."""
        return int(self.app.state.http.free_slots)

    def scheduled(self) -> int:
        """Extraction jobs queued so far (one per remembered exchange)."""
        assert self.engine.drain(timeout=30)
        return int(self.engine.extraction_stats.get("scheduled", 0))

    def close(self) -> None:
        for client in self._clients:
            client.close()


@contextmanager
def running_wire(engine: MemoryEngine) -> Iterator[Wire]:
    """A key, an OpenAI provider ``default`` and an Anthropic provider ``claude``."""
    openai_upstream, anthropic_upstream = FakeUpstream(), FakeAnthropicUpstream()
    with ExitStack() as stack:
        openai_url = stack.enter_context(serve_asgi(openai_upstream.app))
        anthropic_url = stack.enter_context(serve_asgi(anthropic_upstream.app))
        save_providers(
            engine.store,
            [
                Provider("default", f"{openai_url}/v1", OPENAI_SECRET),
                Provider("claude", anthropic_url, ANTHROPIC_SECRET, kind="anthropic"),
            ],
        )
        record, secret = engine.keys.create("wire")
        app = create_app(engine, admin_token=ADMIN)
        url = stack.enter_context(serve_asgi(app))
        wire = Wire(
            engine,
            openai_upstream,
            anthropic_upstream,
            url,
            secret,
            record.id,
            f"{openai_url}/v1",
            anthropic_url,
            app,
        )
        try:
            yield wire
        finally:
            wire.close()


def block_lines(text: str) -> list[str]:
    """The memory lines of the framed block inside ``text`` (none when absent)."""
    if MEMORY_OPEN not in text:
        return []
    inside = text.split(MEMORY_OPEN, 1)[1].split("</memories>", 1)[0]
    return [line[2:] for line in inside.strip().splitlines() if line.startswith("- ")]
