"""OpenAI's chat completions (``POST /v1/chat/completions``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memoryd.core.injection import Injection, inject_memory
from memoryd.engine.providers import Provider
from memoryd.gateway.pipeline import content_problem, last_user_text
from memoryd.gateway.wire.base import Assembler, WireFormat, invalid


class ChatAssembler(Assembler):
    """Chat chunks carry no type: text is in ``choices[].delta.content``, the end is
    the ``[DONE]`` marker (or, for upstreams that omit it, a ``finish_reason``)."""

    def __init__(self) -> None:
        super().__init__()
        self.finished = False  # a choice carried its ``finish_reason``

    def data(self, data: bytes) -> None:
        if data == b"[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except ValueError:
            return
        if isinstance(event, dict) and event.get("error"):
            self.failed = True  # vLLM and others send an error chunk, then [DONE]
            return
        for choice in event.get("choices") or [] if isinstance(event, dict) else []:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                self.finished = True
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                self._parts.append(delta["content"])

    @property
    def complete(self) -> bool:
        """Whole: ``[DONE]`` seen, or a ``finish_reason`` with no half event left over."""
        tail = self._buffer.strip()
        if self.done or tail.replace(b" ", b"") == b"data:[DONE]":
            return True
        return self.finished and not tail


def chat_reply_text(payload: object) -> str:
    """The assistant text of a non-streaming chat completion."""
    if not isinstance(payload, dict):
        return ""
    texts = []
    for choice in payload.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            texts.append(message["content"].strip())
    return "\n".join(t for t in texts if t)


class ChatFormat(WireFormat):
    name = "chat"
    path = "/chat/completions"

    def validate(self, body: dict[str, Any]) -> None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise invalid("'messages' must be a non-empty array", "messages", "invalid_messages")
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                raise invalid(
                    f"messages[{index}] must be an object with a 'role'",
                    f"messages[{index}]",
                    "invalid_messages",
                )
            problem = content_problem(message, index)
            if problem is not None:
                param, text, code = problem
                raise invalid(text, param, code)
        super().validate(body)

    def query(self, body: Mapping[str, Any]) -> str:
        return last_user_text(body)

    def inject(
        self,
        body: Mapping[str, Any],
        contents: Sequence[str],
        provider: Provider,
        model: str | None,
    ) -> Injection:
        return inject_memory(
            body, contents, provider=provider.name, model=model, system_role=provider.system_role
        )

    def reply_text(self, payload: object) -> str:
        return chat_reply_text(payload)

    def assembler(self) -> Assembler:
        return ChatAssembler()


CHAT = ChatFormat()
