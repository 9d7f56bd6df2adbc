"""What one chat request does with memory: pure decisions, no I/O.

``plan_memory`` turns settings, the key's override and the request headers into
"inject?" / "extract?"; ``content_problem`` says why a message's content is malformed
(before anything is forwarded); ``query_text`` finds the text to retrieve for and to extract
from (the client's last user message, never the injected block); ``route_model``
picks the upstream provider for a ``"name/model"`` id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memoryd.config.settings import MemorySettings
from memoryd.config.upstreams import Provider, ProviderKind, default_for
from memoryd.core.ids import MAX_ID_CHARS
from memoryd.core.ids import bounded_id as bounded_id

NO_MEMORY_HEADERS = ("x-memoryd-no-memory", "x-omniroute-no-memory")
MODE_HEADER = "x-memoryd-memory"
#: What ``x-memoryd-memory`` may say ("" and "default": both, as without it).
MODES = ("", "default", "inject-only", "extract-only")
SESSION_HEADERS = ("x-memoryd-session-id", "x-omniroute-session-id")
USER_HEADER = "x-memoryd-user"
MAX_USER_CHARS = MAX_ID_CHARS
TRUE_VALUES = {"true", "1", "yes"}


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    inject: bool
    extract: bool
    reason: str


def end_user(headers: Mapping[str, str], body: Mapping[str, Any]) -> str:
    """The request's end user of the key: the ``x-memoryd-user`` header, else OpenAI's
    ``safety_identifier``, else its older ``user`` field; "" when none is named (the
    key's shared memories only). The fields' types are checked by ``validate``."""
    named = header(headers, USER_HEADER)
    for field_name in ("safety_identifier", "user"):
        value = body.get(field_name)
        if not named and isinstance(value, str) and value.strip():
            named = value.strip()
    return bounded_id(named or "")


def header(headers: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` present (case-insensitive), stripped."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for name in names:
        value = lowered.get(name.lower())
        if value is not None and value.strip():
            return value.strip()
    return None


def no_memory_requested(headers: Mapping[str, str]) -> bool:
    value = header(headers, *NO_MEMORY_HEADERS)
    return value is not None and value.lower() in TRUE_VALUES


def plan_memory(
    settings: MemorySettings, key_memory_enabled: bool | None, headers: Mapping[str, str]
) -> MemoryPlan:
    enabled = settings.enabled if key_memory_enabled is None else key_memory_enabled
    if not enabled:
        return MemoryPlan(False, False, "memory disabled for this key")
    if no_memory_requested(headers):
        return MemoryPlan(False, False, "no-memory header")
    mode = (header(headers, MODE_HEADER) or "").lower()
    inject = settings.max_tokens > 0 and mode != "extract-only"
    extract = mode != "inject-only"
    return MemoryPlan(inject, extract, mode or "default")


#: Content part types OpenAI's chat completions accept (anything else is a 400 there).
#: OpenAI's part types, plus the ones widely used OpenAI-compatible servers accept
#: (vLLM's ``video_url``/``audio_url``; ``input_text``/``input_image`` of newer clients),
#: so memoryd in front of them rejects only what no upstream would take.
CONTENT_PART_TYPES = (
    "text",
    "image_url",
    "input_audio",
    "file",
    "refusal",
    "input_text",
    "input_image",
    "video_url",
    "audio_url",
)
#: Roles whose content must be present (a string or parts); the others (an assistant turn
#: with ``tool_calls``, a tool or function result) may send ``null`` or leave it out.
CONTENT_REQUIRED_ROLES = frozenset({"system", "developer", "user"})


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def content_problem(message: Mapping[str, Any], index: int) -> tuple[str, str, str] | None:
    """What is wrong with ``messages[index].content``: ``(param, message, code)`` with
    ``param`` naming the field, or None when OpenAI would accept it. Lenient where OpenAI
    is: unknown extra keys in a part are fine, and non-text parts are not looked into."""
    param = f"messages[{index}].content"
    content = message.get("content")
    if content is None:
        role = message.get("role")
        if role in CONTENT_REQUIRED_ROLES:
            return param, f"{param} is required for a {role!r} message", "invalid_type"
        return None
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return (
            param,
            f"{param} must be a string or an array of content parts, got {json_type(content)}",
            "invalid_type",
        )
    for number, part in enumerate(content):
        where = f"{param}[{number}]"
        if not isinstance(part, dict):
            return (
                where,
                f"{where} must be a content part object, got {json_type(part)}",
                "invalid_type",
            )
        kind = part.get("type")
        if kind not in CONTENT_PART_TYPES:
            got = repr(kind) if isinstance(kind, str) else json_type(kind)
            return (
                f"{where}.type",
                f"{where}.type must be one of {', '.join(CONTENT_PART_TYPES)}; "
                f"got {got if 'type' in part else 'none'}",
                "invalid_value",
            )
        text = part.get("text")
        if kind == "text" and not isinstance(text, str):
            return (
                f"{where}.text",
                f"{where}.text must be a string in a 'text' part, got {json_type(text)}",
                "invalid_type",
            )
    return None


def content_text(content: object) -> str:
    """Text of a message content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = []
        for part in content:
            if (
                isinstance(part, dict)
                and isinstance(part.get("text"), str)
                and part.get("type") in (None, "text", "input_text")
            ):
                parts.append(part["text"].strip())
        return "\n".join(p for p in parts if p)
    return ""


def last_user_text(body: Mapping[str, Any]) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def route_model(
    model: object, providers: Mapping[str, Provider], kind: ProviderKind = "openai"
) -> tuple[Provider | None, str | None]:
    """``"name/model"`` goes to provider ``name`` (model without the prefix) when such a
    provider exists, whatever its kind (the caller refuses a kind that cannot serve the
    request); anything else goes unchanged to the default provider of ``kind``."""
    if isinstance(model, str) and "/" in model:
        name, _, rest = model.partition("/")
        if name in providers and rest:
            return providers[name], rest
    return default_for(providers, kind), model if isinstance(model, str) else None
