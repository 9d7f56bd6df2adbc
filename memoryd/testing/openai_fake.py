"""``FakeUpstream``: OpenAI's wire formats (chat completions, the Responses API,
embeddings), as JSON and as server-sent events, recording what it receives."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import struct
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memoryd.testing.server import FakeServer, sse, word_count

#: The Responses API's fixed ids: one response, one output message.
RESPONSE_ID = "resp_1"
MESSAGE_ID = "msg_1"
#: Embedding length when the request names no ``dimensions``.
EMBEDDING_DIMENSIONS = 8


def embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A deterministic unit vector for ``text``: the same text, the same vector."""
    raw = b""
    counter = 0
    while len(raw) < dimensions:
        raw += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    values = [(byte - 127.5) / 127.5 for byte in raw[:dimensions]]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


class FakeUpstream(FakeServer):
    """An OpenAI-compatible server that records what it receives (see ``FakeServer``
    for ``requests``, ``reply``, ``chunk_delay_s``, ``hold``, ``status``,
    ``error_body`` and ``break_after``).

    Routes: ``POST /v1/chat/completions``, ``POST /v1/responses`` (JSON, or named SSE
    events with ``"stream": true``), ``POST /v1/embeddings`` (``EMBEDDING_DIMENSIONS``
    floats per input unless ``dimensions`` says otherwise, float or base64) and
    ``GET /v1/models``. ``responders`` answer the chat and Responses requests for one
    model themselves, ``responders[model](body) -> (status, payload)`` (memoryd's own
    LLM extraction call, next to the chat it serves).
    """

    def __init__(self) -> None:
        super().__init__({"error": {"message": "bad", "type": "invalid"}})
        self.responders: dict[str, Callable[[dict[str, Any]], tuple[int, Any]]] = {}
        #: Seconds each embeddings input takes (a slow embedding provider)
        self.embedding_delay_s = 0.0
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models),
            ]
        )

    def _answer_otherwise(self, body: dict[str, Any]) -> Response | None:
        """A responder's answer or the configured failure, if either applies."""
        responder = self.responders.get(str(body.get("model")))
        if responder is not None:
            status, payload = responder(body)
            return JSONResponse(payload, status_code=status)
        if self.status != 200:
            return JSONResponse(self.error_body, status_code=self.status)
        return None

    # -- chat completions -----------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        body = await self.record(request)
        if (answered := self._answer_otherwise(body)) is not None:
            return answered
        model = body.get("model", "fake")
        if not body.get("stream"):
            return JSONResponse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": self.reply},
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return sse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )

        deltas = [
            chunk({"content": piece, **({"role": "assistant"} if i == 0 else {})})
            for i, piece in enumerate(self.pieces())
        ]
        return self.stream([], deltas, [chunk({}, "stop"), sse("[DONE]")])

    # -- the Responses API ----------------------------------------------------------

    def _response(
        self, body: dict[str, Any], *, done: bool, output: list[Any], usage: Any
    ) -> dict[str, Any]:
        return {
            "id": RESPONSE_ID,
            "object": "response",
            "created_at": 1,
            "status": "completed" if done else "in_progress",
            "background": False,
            "completed_at": 2 if done else None,
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "max_tool_calls": None,
            "model": body.get("model", "fake"),
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "service_tier": "default",
            "temperature": body.get("temperature", 1.0),
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": [],
            "top_logprobs": 0,
            "top_p": body.get("top_p", 1.0),
            "truncation": "disabled",
            "usage": usage,
            "user": None,
            "metadata": body.get("metadata") or {},
        }

    @staticmethod
    def _part(text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    @staticmethod
    def _message(content: list[Any], *, done: bool) -> dict[str, Any]:
        return {
            "id": MESSAGE_ID,
            "type": "message",
            "status": "completed" if done else "in_progress",
            "role": "assistant",
            "content": content,
        }

    async def _responses(self, request: Request) -> Response:
        body = await self.record(request)
        if (answered := self._answer_otherwise(body)) is not None:
            return answered
        reply, pieces = self.reply, self.pieces()
        input_tokens = word_count(body.get("instructions"), body.get("input"))
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": len(pieces),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + len(pieces),
        }
        item = self._message([self._part(reply)], done=True)
        final = self._response(body, done=True, output=[item], usage=usage)
        if not body.get("stream"):
            return JSONResponse(final)
        sequence = iter(range(1 << 30))

        def event(kind: str, **fields: Any) -> bytes:
            return sse({"type": kind, "sequence_number": next(sequence), **fields}, kind)

        started = self._response(body, done=False, output=[], usage=None)
        at = {"item_id": MESSAGE_ID, "output_index": 0, "content_index": 0}
        head = [
            event("response.created", response=started),
            event("response.in_progress", response=started),
            event(
                "response.output_item.added",
                output_index=0,
                item=self._message([], done=False),
            ),
            event("response.content_part.added", **at, part=self._part("")),
        ]
        deltas = [
            event("response.output_text.delta", **at, delta=piece, logprobs=[]) for piece in pieces
        ]
        tail = [
            event("response.output_text.done", **at, text=reply, logprobs=[]),
            event("response.content_part.done", **at, part=self._part(reply)),
            event("response.output_item.done", output_index=0, item=item),
            event("response.completed", response=final),
        ]
        return self.stream(head, deltas, tail)

    # -- embeddings -----------------------------------------------------------------

    async def _embeddings(self, request: Request) -> Response:
        body = await self.record(request)
        if self.status != 200:
            return JSONResponse(self.error_body, status_code=self.status)
        given = body.get("input")
        tokens = isinstance(given, list) and bool(given) and isinstance(given[0], int)
        inputs: list[Any] = [given] if isinstance(given, str) or tokens else list(given or [])
        dimensions = int(body.get("dimensions") or EMBEDDING_DIMENSIONS)
        if self.embedding_delay_s:
            await asyncio.sleep(self.embedding_delay_s * len(inputs))
        data: list[dict[str, Any]] = []
        used = 0
        for index, item in enumerate(inputs):
            key = item if isinstance(item, str) else repr(item)
            used += word_count(item) if isinstance(item, str) else len(item)
            vector: Any = embedding(key, dimensions)
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake"),
                "usage": {"prompt_tokens": used, "total_tokens": used},
            }
        )

    async def _models(self, request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": "fake-model", "object": "model", "created": 1, "owned_by": "fake"}],
            }
        )


__all__ = ["EMBEDDING_DIMENSIONS", "FakeUpstream", "embedding"]
