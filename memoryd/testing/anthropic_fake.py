"""``FakeAnthropicUpstream``: Anthropic's Messages API (JSON and its named SSE events),
token counting and the model list, recording what it receives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memoryd.testing.server import FakeServer, sse, word_count

MESSAGE_ID = "msg_1"
MODEL = {
    "type": "model",
    "id": "claude-fake",
    "display_name": "Claude Fake",
    "created_at": "2025-01-01T00:00:00Z",
    "lifecycle": "active",
}


class FakeAnthropicUpstream(FakeServer):
    """An Anthropic-compatible server that records what it receives (see
    ``FakeServer`` for ``requests``, ``reply``, ``chunk_delay_s``, ``hold``, ``status``,
    ``error_body`` and ``break_after``; ``error_body`` is Anthropic's error shape).

    Routes: ``POST /v1/messages`` (a ``Message``, or with ``"stream": true`` the event
    sequence message_start, content_block_start, ping, one content_block_delta per word,
    content_block_stop, message_delta, message_stop), ``POST
    /v1/messages/count_tokens`` (the words of the system prompt and messages) and
    ``GET /v1/models``. Usage counts words: input as ``count_tokens`` does, output one
    per streamed delta. ``responders[model](body) -> (status, payload)`` answer the
    messages for one model themselves. An SDK's ``base_url`` is the server root.
    """

    def __init__(self) -> None:
        super().__init__(
            {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
        )
        self.responders: dict[str, Callable[[dict[str, Any]], tuple[int, Any]]] = {}
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/models", self._models),
            ]
        )

    @staticmethod
    def _input_tokens(body: dict[str, Any]) -> int:
        return word_count(body.get("system"), body.get("messages"))

    def _message(
        self, model: str, content: list[Any], stop: str | None, usage: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "id": MESSAGE_ID,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    async def _messages(self, request: Request) -> Response:
        body = await self.record(request)
        responder = self.responders.get(str(body.get("model")))
        if responder is not None:
            status, payload = responder(body)
            return JSONResponse(payload, status_code=status)
        if self.status != 200:
            return JSONResponse(self.error_body, status_code=self.status)
        model = str(body.get("model", "claude-fake"))
        reply, pieces = self.reply, self.pieces()
        input_tokens = self._input_tokens(body)
        if not body.get("stream"):
            usage = {"input_tokens": input_tokens, "output_tokens": len(pieces)}
            text = [{"type": "text", "text": reply}]
            return JSONResponse(self._message(model, text, "end_turn", usage))

        def event(kind: str, **fields: Any) -> bytes:
            return sse({"type": kind, **fields}, kind)

        started = {"input_tokens": input_tokens, "output_tokens": 1}
        head = [
            event("message_start", message=self._message(model, [], None, started)),
            event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            event("ping"),
        ]
        deltas = [
            event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
            for piece in pieces
        ]
        tail = [
            event("content_block_stop", index=0),
            event(
                "message_delta",
                delta={"stop_reason": "end_turn", "stop_sequence": None},
                usage={"output_tokens": len(pieces)},
            ),
            event("message_stop"),
        ]
        return self.stream(head, deltas, tail)

    async def _count_tokens(self, request: Request) -> Response:
        body = await self.record(request)
        if self.status != 200:
            return JSONResponse(self.error_body, status_code=self.status)
        return JSONResponse({"input_tokens": self._input_tokens(body)})

    async def _models(self, request: Request) -> Response:
        return JSONResponse(
            {"data": [MODEL], "has_more": False, "first_id": MODEL["id"], "last_id": MODEL["id"]}
        )
