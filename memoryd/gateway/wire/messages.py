"""Anthropic's Messages API (``POST /v1/messages``): the Anthropic SDKs, Claude Code.

The client's key is in ``x-api-key`` (or ``Authorization: Bearer``, as Claude Code
sends with ``ANTHROPIC_AUTH_TOKEN``). Messages have no system role: the memory block
goes into the top-level ``system``, except when the client caches its conversation
(``cache_control`` in messages): then it is the last block of the newest user message,
after every breakpoint, so no cached prefix is ever invalidated. A user message may
hold only ``tool_result`` blocks (an agent's tool loop): it adds no words of the
user's, so it is not extracted again, and retrieval keeps using the latest human text.
Claude Code wraps context it adds in ``<system-reminder>`` tags inside user messages;
that text is not the user's and is left out of the query and of extraction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from memoryd.config.upstreams import Provider
from memoryd.core.injection import (
    Contents,
    Injection,
    Sections,
    caches_messages,
    has_cache_control,
    inject_last_turn,
    inject_system,
)
from memoryd.core.wire_errors import anthropic_error
from memoryd.gateway.pipeline import USER_HEADER, bounded_id, header, json_type
from memoryd.gateway.wire.base import (
    Assembler,
    GatewayError,
    WireFormat,
    bearer,
    check_id_field,
    invalid,
    text_parts,
)

_TEXT = frozenset({"text"})
_REMINDER = re.compile(r"<system-reminder>.*?(</system-reminder>|$)", re.DOTALL)
#: Claude Code's ``metadata.user_id``: ``user_<id>_account_<uuid>_session_<uuid>``; the
#: session part changes every session, and the end user must not. Only that whole
#: shape loses its suffix: any id ending in ``_session_<x>`` did before, so
#: ``acme_session_1`` and ``acme_session_2`` were one end user.
_CLAUDE_CODE_USER = re.compile(r"(user_[0-9A-Za-z]+_account_[0-9A-Za-z-]*)_session_[0-9A-Za-z-]+")


def human_text(message: object) -> str:
    """The words of the user in a message: its text, without ``<system-reminder>``s."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return ""
    text = text_parts(message.get("content"), _TEXT)
    return " ".join(_REMINDER.sub(" ", text).split()) if "<system-reminder>" in text else text


def messages_url(base_url: str, path: str = "/messages") -> str:
    """An Anthropic provider's URL: its base is the API root (``ANTHROPIC_BASE_URL``
    style, ``https://api.anthropic.com``) or already ends in ``/v1``; both work."""
    base = base_url.rstrip("/")
    return f"{base}{path}" if base.endswith("/v1") else f"{base}/v1{path}"


class MessagesAssembler(Assembler):
    def event(self, kind: str, event: dict[str, Any]) -> None:
        if kind == "content_block_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("text"), str):
                self._parts.append(delta["text"])
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            self.done = self.failed = True


class MessagesFormat(WireFormat):
    name = "messages"
    kind = "anthropic"
    path = "/messages"

    def client_secret(self, headers: Mapping[str, str]) -> str | None:
        key = (headers.get("x-api-key") or "").strip()
        return key or bearer(headers.get("authorization", ""))

    def validate(self, body: dict[str, Any]) -> None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise invalid("messages: must be a non-empty array", "messages")
        for index, message in enumerate(messages):
            where = f"messages.{index}"
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                raise invalid(f"{where}: must be an object with a 'role'", where)
            content = message.get("content")
            if not isinstance(content, str | list):
                raise invalid(
                    f"{where}.content: must be a string or an array of content blocks, "
                    f"got {json_type(content)}",
                    f"{where}.content",
                )
            for number, block in enumerate(content if isinstance(content, list) else []):
                if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                    raise invalid(
                        f"{where}.content.{number}: must be a content block with a 'type'",
                        f"{where}.content.{number}",
                    )
        system = body.get("system")
        if system is not None and not isinstance(system, str | list):
            raise invalid(
                f"system: must be a string or an array of text blocks, got {json_type(system)}",
                "system",
            )
        for number, block in enumerate(system if isinstance(system, list) else []):
            if not isinstance(block, dict) or block.get("type") != "text":
                raise invalid(f"system.{number}: must be a text block", f"system.{number}")
        metadata = body.get("metadata")
        if isinstance(metadata, dict):
            check_id_field(metadata.get("user_id"), "metadata.user_id")
        super().validate(body)

    def error_body(self, error: GatewayError) -> dict[str, Any]:
        return anthropic_error(error.status, error.message)

    def stream_error_event(self, message: str, assembler: Assembler) -> bytes:
        """Anthropic's ``error`` event, on which its SDKs raise."""
        body = anthropic_error(500, message)
        return f"event: error\ndata: {json.dumps(body)}\n\n".encode()

    def query(self, body: Mapping[str, Any]) -> str:
        messages = body.get("messages")
        for message in reversed(messages if isinstance(messages, list) else []):
            text = human_text(message)
            if text:
                return text
        return ""

    def new_turn(self, body: Mapping[str, Any]) -> str:
        messages = body.get("messages")
        return human_text(messages[-1]) if isinstance(messages, list) and messages else ""

    def end_user(self, headers: Mapping[str, str], body: Mapping[str, Any]) -> str:
        """``x-memoryd-user``, else ``metadata.user_id`` (Claude Code's without its
        per-session suffix, or its JSON form without ``session_id``)."""
        named = header(headers, USER_HEADER)
        if not named:
            metadata = body.get("metadata")
            value = metadata.get("user_id") if isinstance(metadata, dict) else None
            named = _stable_user(value.strip()) if isinstance(value, str) else None
        return bounded_id(named or "")

    def inject(
        self,
        body: Mapping[str, Any],
        contents: Contents,
        provider: Provider,
        model: str | None,
    ) -> Injection:
        if caches_messages(body):
            return inject_last_turn(body, contents)
        if has_cache_control(body):
            # Only ``system``/``tools`` are cached: the block goes after those blocks, and
            # the same memories must give the same bytes on the next turn.
            contents = contents.sorted() if isinstance(contents, Sections) else sorted(contents)
        return inject_system(body, contents)

    def upstream_url(self, provider: Provider) -> str:
        return messages_url(provider.base_url)

    def reply_text(self, payload: object) -> str:
        if not isinstance(payload, dict):
            return ""
        return text_parts(payload.get("content"), _TEXT)

    def assembler(self, body: Mapping[str, Any] | None = None) -> Assembler:
        return MessagesAssembler()


def _stable_user(value: str) -> str:
    if value.startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            parsed.pop("session_id", None)
            return json.dumps(parsed, sort_keys=True, separators=(",", ":"))
    claude_code = _CLAUDE_CODE_USER.fullmatch(value)
    return claude_code.group(1) if claude_code else value


MESSAGES = MessagesFormat()
