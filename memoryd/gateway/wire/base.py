"""What differs between the chat-like wire formats, behind one small interface.

The gateway's pipeline (plan -> retrieve -> inject -> forward -> relay -> extract) is
written once; a ``WireFormat`` answers the questions whose answer depends on the API
the client speaks: where its key is, what is malformed, which text to retrieve for and
to extract from, where the memory block goes, what the reply's text is, when a stream
is complete, and how an error looks to its SDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memoryd.config.upstreams import Provider, ProviderKind
from memoryd.core.injection import Contents, Injection
from memoryd.core.wire_errors import openai_error
from memoryd.gateway.pipeline import end_user, json_type


class GatewayError(Exception):
    """An error of memoryd's own, rendered in the client's shape by its format;
    ``param`` names the offending request field, when there is one."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str,
        code: str | None = None,
        *,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type, code
        self.param, self.headers = param, headers


def invalid(message: str, param: str | None = None, code: str | None = None) -> GatewayError:
    """A 400 for a malformed request field."""
    return GatewayError(400, message, "invalid_request_error", code, param=param)


class Assembler:
    """Watches a stream as it is relayed: its text so far, and whether its final event
    has arrived. Lines may be split across chunks, so bytes are buffered until a
    newline. This base reads typed events (the JSON ``data`` of each event names its
    ``type``, as in the Responses and Messages APIs); subclasses say what they mean."""

    def __init__(self) -> None:
        self._buffer = b""
        self._parts: list[str] = []
        self.done = False  # the final event arrived: the exchange may be extracted
        self.failed = False  # the stream ended in an error or a failed response
        self.queued = False  # the relay queued this exchange's extraction
        self.sequence = 0  # the last sequence number seen (Responses events carry one)

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            line = line.strip()
            if line.startswith(b"data:"):
                self.data(line[5:].strip())

    def data(self, data: bytes) -> None:
        """One ``data:`` line's payload."""
        try:
            event = json.loads(data)
        except ValueError:
            return
        if isinstance(event, dict):
            number = event.get("sequence_number")
            if isinstance(number, int):
                self.sequence = number
            self.event(str(event.get("type", "")), event)

    def event(self, kind: str, event: dict[str, Any]) -> None:
        raise NotImplementedError

    @property
    def complete(self) -> bool:
        """The stream reached its final event (a cut-off one did not)."""
        return self.done

    @property
    def text(self) -> str:
        return "".join(self._parts).strip()


class WireFormat:
    """One client API. Subclasses override what differs; the defaults are OpenAI's."""

    name = "openai"
    #: the provider kind that speaks this format upstream
    kind: ProviderKind = "openai"
    #: the upstream path under an OpenAI provider's base URL (``.../v1``)
    path = "/chat/completions"

    # -- the client side --------------------------------------------------------------

    def client_secret(self, headers: Mapping[str, str]) -> str | None:
        """The client's memoryd key: ``Authorization: Bearer``."""
        return bearer(headers.get("authorization", ""))

    def validate(self, body: dict[str, Any]) -> None:
        """Raise ``GatewayError`` (400) for what the upstream would reject anyway, before
        any memory work; lenient wherever the provider is."""
        check_model(body)
        for name in ("user", "safety_identifier"):
            check_id_field(body.get(name), name)

    def error_body(self, error: GatewayError) -> dict[str, Any]:
        return openai_error(error.message, error.type, error.code, error.param)

    def stream_error_event(self, message: str, assembler: Assembler) -> bytes:
        """The last event of a stream the upstream broke: one the client's SDK raises on."""
        body = openai_error(message, "upstream_error", "upstream_stream_broken", None)
        return f"data: {json.dumps(body)}\n\n".encode()

    # -- memory -------------------------------------------------------------------------

    def query(self, body: Mapping[str, Any]) -> str:
        """The text to retrieve for: the client's latest own words, never our block."""
        raise NotImplementedError

    def new_turn(self, body: Mapping[str, Any]) -> str:
        """The text to extract from: the user's turn this request adds, "" when it adds
        none (a tool result going back, for example)."""
        return self.query(body)

    def end_user(self, headers: Mapping[str, str], body: Mapping[str, Any]) -> str:
        return end_user(headers, body)

    def inject(
        self,
        body: Mapping[str, Any],
        contents: Contents,
        provider: Provider,
        model: str | None,
    ) -> Injection:
        raise NotImplementedError

    # -- the upstream side --------------------------------------------------------------

    def upstream_url(self, provider: Provider) -> str:
        return f"{provider.base_url}{self.path}"

    def is_stream(self, body: Mapping[str, Any]) -> bool:
        return body.get("stream") is True

    def reply_text(self, payload: object) -> str:
        """The assistant's text in a complete (non-streaming) answer."""
        raise NotImplementedError

    def assembler(self, body: Mapping[str, Any] | None = None) -> Assembler:
        """A watcher of the stream that answers ``body``."""
        raise NotImplementedError


def check_model(body: Mapping[str, Any]) -> None:
    if "model" in body and not isinstance(body["model"], str):
        raise invalid("'model' must be a string", "model")


def check_id_field(value: object, param: str) -> None:
    """An end-user id field the request names must be a string: one of another type was
    ignored, and the turn went to the key's shared memories, where every end user of
    the key reads it (the providers reject it too)."""
    if value is not None and not isinstance(value, str):
        raise invalid(f"'{param}' must be a string, got {json_type(value)}", param)


def bearer(value: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value."""
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def text_parts(content: object, types: frozenset[str]) -> str:
    """The text of a content value: a string, or the parts of ``types`` in a list."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = [
        part["text"].strip()
        for part in content
        if isinstance(part, dict)
        and part.get("type", "text") in types
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(t for t in texts if t)
