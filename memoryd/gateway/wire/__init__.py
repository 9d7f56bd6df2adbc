"""The wire formats the gateway speaks: one adapter per client API (see ``base``)."""

from memoryd.gateway.wire.base import Assembler, GatewayError, WireFormat
from memoryd.gateway.wire.chat import CHAT
from memoryd.gateway.wire.messages import MESSAGES, messages_url
from memoryd.gateway.wire.responses import RESPONSES

__all__ = [
    "CHAT",
    "MESSAGES",
    "RESPONSES",
    "Assembler",
    "GatewayError",
    "WireFormat",
    "messages_url",
]
