"""The stand-in provider of ``memoryd serve --demo``: try memoryd without an API key.

It answers every chat with the memories memoryd sent along with it, so a first user
sees memory work (tell it something, then ask about it) before connecting a real
model. It keeps nothing of what it is sent (the test fakes record every request).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from memoryd.testing.openai_fake import FakeUpstream
from memoryd.testing.server import texts

NOTE = "(memoryd demo provider: no model runs here; it shows what memoryd sent it)"


def carried(body: dict[str, Any]) -> list[str]:
    """The memory lines of the block memoryd put in the request's system messages."""
    lines: list[str] = []
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            for text in texts(message.get("content")):
                lines += [line[2:] for line in text.splitlines() if line.startswith("- ")]
    return lines


class DemoUpstream(FakeUpstream):
    """OpenAI's chat completions (and Responses, embeddings) wire format; the answer
    lists what memoryd sent."""

    async def record(self, request: Request) -> dict[str, Any]:
        body = await super().record(request)
        self.requests.clear()  # a demo may run for days
        memories = carried(body)
        if memories:
            shown = "\n".join(f"- {m}" for m in memories)
            many = "memory" if len(memories) == 1 else "memories"
            self.reply = f"{NOTE}\nThis request carried {len(memories)} {many}:\n{shown}"
        else:
            self.reply = f"{NOTE}\nThis request carried no memories."
        return body

    def _answer_otherwise(self, body: dict[str, Any]) -> Response | None:
        return None
