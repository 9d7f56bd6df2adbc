"""OpenAI's Responses API (``POST /v1/responses``), used by the Agents SDK.

``input`` is a string or a list of items; the user's turns are message items (role
``user``, content a string or ``input_text`` parts), and other items (function calls,
their outputs, reasoning) carry no words of the user's. The memory block goes into
``instructions``, which apply to this call only, so a conversation continued with
``previous_response_id`` never accumulates old blocks. ``store``,
``previous_response_id`` and every other field pass through untouched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memoryd.config.upstreams import Provider
from memoryd.core.injection import Contents, Injection, inject_instructions
from memoryd.core.wire_errors import openai_error
from memoryd.gateway.pipeline import json_type
from memoryd.gateway.wire.base import Assembler, WireFormat, invalid, text_parts

_USER_TEXT = frozenset({"input_text", "text"})
_OUTPUT_TEXT = frozenset({"output_text"})


def _user_message(item: object) -> bool:
    return (
        isinstance(item, dict)
        and item.get("role") == "user"
        and item.get("type", "message") == "message"
    )


class ResponsesAssembler(Assembler):
    def event(self, kind: str, event: dict[str, Any]) -> None:
        if kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
            self._parts.append(event["delta"])
        elif kind in ("response.completed", "response.incomplete"):
            self.done = True
        elif kind in ("response.failed", "error"):
            self.done = self.failed = True


class ResponsesFormat(WireFormat):
    name = "responses"
    path = "/responses"

    def validate(self, body: dict[str, Any]) -> None:
        items = body.get("input")
        if items is not None and not isinstance(items, str | list):
            raise invalid(
                f"'input' must be a string or an array of input items, got {json_type(items)}",
                "input",
            )
        for index, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict):
                raise invalid(
                    f"input[{index}] must be an input item object, got {json_type(item)}",
                    f"input[{index}]",
                )
            content = item.get("content")
            if _user_message(item) and not isinstance(content, str | list):
                raise invalid(
                    f"input[{index}].content must be a string or an array of content parts, "
                    f"got {json_type(content)}",
                    f"input[{index}].content",
                )
        instructions = body.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise invalid("'instructions' must be a string", "instructions")
        super().validate(body)

    def query(self, body: Mapping[str, Any]) -> str:
        items = body.get("input")
        if isinstance(items, str):
            return items.strip()
        for item in reversed(items if isinstance(items, list) else []):
            if _user_message(item):
                text = text_parts(item.get("content"), _USER_TEXT)
                if text:
                    return text
        return ""

    def new_turn(self, body: Mapping[str, Any]) -> str:
        items = body.get("input")
        if isinstance(items, list) and items and not _user_message(items[-1]):
            return ""  # a tool output going back: no new words of the user's
        return self.query(body)

    def inject(
        self,
        body: Mapping[str, Any],
        contents: Contents,
        provider: Provider,
        model: str | None,
    ) -> Injection:
        role = provider.system_role if provider.system_role in ("system", "user") else "auto"
        return inject_instructions(body, contents, system_role=role)

    def reply_text(self, payload: object) -> str:
        if not isinstance(payload, dict):
            return ""
        texts = [
            text_parts(item.get("content"), _OUTPUT_TEXT)
            for item in payload.get("output") or []
            if isinstance(item, dict) and item.get("type") == "message"
        ]
        return "\n".join(t for t in texts if t)

    def assembler(self, body: Mapping[str, Any] | None = None) -> Assembler:
        return ResponsesAssembler()

    def stream_error_event(self, message: str, assembler: Assembler) -> bytes:
        """The Responses API's ``error`` event; its ``error`` member makes the official
        client raise ``APIError`` instead of yielding a half answer as a whole one."""
        code = "upstream_stream_broken"
        body = {
            "type": "error",
            "code": code,
            "message": message,
            "param": None,
            "sequence_number": assembler.sequence + 1,
            **openai_error(message, "upstream_error", code, None),
        }
        return f"event: error\ndata: {json.dumps(body)}\n\n".encode()


RESPONSES = ResponsesFormat()
