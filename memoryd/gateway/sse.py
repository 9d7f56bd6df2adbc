"""Reading the assistant's text out of an OpenAI SSE stream as it passes through.

Chunks are relayed to the client byte for byte; this only watches them. Lines may be
split across chunks, so bytes are buffered until a newline.
"""

from __future__ import annotations

import json


class StreamAssembler:
    def __init__(self) -> None:
        self._buffer = b""
        self._parts: list[str] = []
        self.done = False  # the ``[DONE]`` marker arrived
        self.finished = False  # a choice carried its ``finish_reason``
        self.queued = False  # the relay queued this exchange's extraction

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if data == b"[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except ValueError:
            return
        for choice in event.get("choices") or [] if isinstance(event, dict) else []:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                self.finished = True
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                self._parts.append(delta["content"])

    @property
    def complete(self) -> bool:
        """Whole: ``[DONE]`` seen, or (for upstreams that omit it) a ``finish_reason``
        with no half event left over. A stream cut off mid-way is neither."""
        tail = self._buffer.strip()
        if self.done or tail.replace(b" ", b"") == b"data:[DONE]":
            return True
        return self.finished and not tail

    @property
    def text(self) -> str:
        return "".join(self._parts).strip()


def response_text(payload: object) -> str:
    """The assistant text of a non-streaming chat completion."""
    if not isinstance(payload, dict):
        return ""
    texts = []
    for choice in payload.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            texts.append(message["content"].strip())
    return "\n".join(t for t in texts if t)
