"""OpenAI's chat completions (``POST /v1/chat/completions``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memoryd.config.upstreams import Provider
from memoryd.core.injection import Contents, Injection, inject_memory
from memoryd.gateway.pipeline import content_problem, content_text, last_user_text
from memoryd.gateway.wire.base import Assembler, WireFormat, invalid


class ChatAssembler(Assembler):
    """Chat chunks carry no type: text is in ``choices[].delta.content``, the end is
    the ``[DONE]`` marker, or, for upstreams that omit it, a ``finish_reason`` for every
    choice begun (``n`` > 1) and the usage chunk when the request asked for one: a cut
    after the first choice's ``finish_reason`` passed for a whole answer."""

    def __init__(self, *, expect_usage: bool = False) -> None:
        super().__init__()
        self.begun: set[int] = set()  # choice indexes seen
        self.ended: set[int] = set()  # ... and those that carried a finish_reason
        self.usage = not expect_usage  # the usage chunk arrived, or none is due

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
        if isinstance(event, dict) and event.get("usage"):
            self.usage = True
        for choice in event.get("choices") or [] if isinstance(event, dict) else []:
            index = choice.get("index", 0) if isinstance(choice, dict) else 0
            index = index if isinstance(index, int) else 0
            self.begun.add(index)
            if isinstance(choice, dict) and choice.get("finish_reason"):
                self.ended.add(index)
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                self._parts.append(delta["content"])

    @property
    def complete(self) -> bool:
        """Whole: ``[DONE]`` seen, or a ``finish_reason`` with no half event left over."""
        tail = self._buffer.strip()
        if self.done or tail.replace(b" ", b"") == b"data:[DONE]":
            return True
        return self.finished and self.usage and not tail

    @property
    def finished(self) -> bool:
        """Every choice begun carried its ``finish_reason``."""
        return bool(self.begun) and self.begun <= self.ended


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

    def new_turn(self, body: Mapping[str, Any]) -> str:
        """The user's words only when this request adds them: a request that ends in a
        tool result (or an assistant prefill) carries an earlier turn, already queued,
        and queuing it again could supersede a fact the user changed since."""
        messages = body.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        if not isinstance(last, dict) or last.get("role") != "user":
            return ""
        return content_text(last.get("content"))

    def inject(
        self,
        body: Mapping[str, Any],
        contents: Contents,
        provider: Provider,
        model: str | None,
    ) -> Injection:
        return inject_memory(
            body, contents, provider=provider.name, model=model, system_role=provider.system_role
        )

    def reply_text(self, payload: object) -> str:
        return chat_reply_text(payload)

    def assembler(self, body: Mapping[str, Any] | None = None) -> Assembler:
        options = (body or {}).get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        return ChatAssembler(expect_usage=usage)


CHAT = ChatFormat()
