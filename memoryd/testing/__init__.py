"""Test and benchmark helpers that are real servers, not mocks.

The fakes stand in for the one party outside memoryd that cannot run here, an LLM
provider: real HTTP servers speaking a provider's wire format (JSON and SSE streaming)
that record what they receive. ``FakeUpstream`` speaks OpenAI's (chat completions, the
Responses API, embeddings), ``FakeAnthropicUpstream`` Anthropic's Messages API.
``serve_asgi`` runs any ASGI app with uvicorn on a free loopback port in a thread.
``python -m memoryd.testing --port N [--anthropic]`` runs a fake as its own process
(the gateway benchmark uses that).
"""

from __future__ import annotations

from memoryd.testing.anthropic_fake import FakeAnthropicUpstream
from memoryd.testing.openai_fake import FakeUpstream
from memoryd.testing.server import FakeServer, StreamCut, serve_asgi

__all__ = ["FakeAnthropicUpstream", "FakeServer", "FakeUpstream", "StreamCut", "serve_asgi"]
