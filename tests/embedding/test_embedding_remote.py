"""The remote source against a real HTTP server on 127.0.0.1.

``FakeProvider`` is the one fake in the embedding tests: it stands for an outside
OpenAI-compatible provider, speaks the ``/v1/embeddings`` wire format and returns
deterministic vectors. A script of behaviours makes it fail on purpose.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memoryd.embedding import (
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    ProviderConfig,
    create,
)
from memoryd.embedding.remote import RemoteEmbedder

KEY = "sk-test-123"


def fake_vector(text: str, dims: int) -> list[float]:
    """What the fake provider answers for ``text``: deterministic, never zero."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [((digest[i % len(digest)] + 1) / 256.0) * (3.0 if i == 0 else 1.0) for i in range(dims)]


class FakeProvider:
    """A threaded HTTP server; ``script`` is consumed one entry per request:
    ``"ok"``, an HTTP status, ``"slow"``, ``"badjson"``, ``"missing"``, ``"short"``,
    ``"shuffled"``, ``"dims=N"`` (N-wide vectors for that request). When the script is
    empty every request is ``"ok"``."""

    def __init__(self, *, dims: int = 16, key: str = KEY, slow_s: float = 1.0) -> None:
        self.dims, self.key, self.slow_s = dims, key, slow_s
        self.script: list[str | int] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                status, payload = provider.answer(self.path, self.headers, body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> FakeProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def reset(self, *script: str | int) -> None:
        with self._lock:
            self.script = list(script)
            self.requests.clear()

    def answer(self, path: str, headers: Any, body: dict[str, Any]) -> tuple[int, bytes]:
        with self._lock:
            self.requests.append({"path": path, "auth": headers.get("Authorization"), **body})
            step = self.script.pop(0) if self.script else "ok"
        if headers.get("Authorization") != f"Bearer {self.key}":
            return 401, b'{"error": {"message": "bad key"}}'
        if isinstance(step, int):
            return step, b'{"error": {"message": "scripted"}}'
        if step == "slow":
            time.sleep(self.slow_s)
        if step == "badjson":
            return 200, b"{not json"
        dims = int(step[5:]) if isinstance(step, str) and step.startswith("dims=") else self.dims
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(t, dims)}
            for i, t in enumerate(texts)
        ]
        if step == "missing":
            del data[0]["embedding"]
        if step == "short":
            data = data[:-1]
        if step == "shuffled":
            data.reverse()
        return 200, json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeProvider]:
    server = FakeProvider().start()
    try:
        yield server
    finally:
        server.stop()


def make_remote(
    provider: FakeProvider, *, timeout_s: float = 2.0, key: str = KEY
) -> RemoteEmbedder:
    ctx = EmbeddingContext(
        providers={"local": ProviderConfig("local", provider.base_url, key)}, timeout_s=timeout_s
    )
    resolution = EmbeddingResolution("remote", "local/test-embed", None, "test")
    embedder = create(resolution, ctx)
    assert isinstance(embedder, RemoteEmbedder)
    return embedder


@pytest.fixture
def remote(provider: FakeProvider) -> Iterator[RemoteEmbedder]:
    provider.reset()
    embedder = make_remote(provider)
    try:
        yield embedder
    finally:
        embedder.close()


def expected(texts: list[str], dims: int = 16) -> np.ndarray:
    rows = np.array([fake_vector(t, dims) for t in texts], dtype=np.float32)
    normalized: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normalized


def _reason(embedder: RemoteEmbedder, texts: list[str]) -> str:
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_batch(texts)
    assert info.value.source == "remote"
    assert info.value.model == "local/test-embed"
    return info.value.reason


def test_wire_format_and_normalized_vectors(remote: RemoteEmbedder, provider: FakeProvider) -> None:
    vectors = remote.embed_batch(["alpha", "beta"])
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected(["alpha", "beta"]), atol=1e-6)
    (request,) = provider.requests
    assert request["path"] == "/v1/embeddings"
    assert request["auth"] == f"Bearer {KEY}"
    assert request["model"] == "test-embed"
    assert request["input"] == ["alpha", "beta"]
    assert remote.model == "local/test-embed"
    assert remote.dimensions == 16


def test_unknown_width_is_learned_from_the_first_vector(remote: RemoteEmbedder) -> None:
    before = remote.dimensions
    assert before is None
    assert remote.embed_batch([]).shape == (0, 0)
    remote.embed("x")
    assert remote.dimensions == 16
    assert remote.embed_batch([]).shape == (0, 16)


def test_data_is_sorted_by_index(remote: RemoteEmbedder, provider: FakeProvider) -> None:
    provider.reset("shuffled")
    texts = ["one", "two", "three"]
    np.testing.assert_allclose(remote.embed_batch(texts), expected(texts), atol=1e-6)


def test_300_inputs_go_in_chunks_of_128(remote: RemoteEmbedder, provider: FakeProvider) -> None:
    texts = [f"text number {i}" for i in range(300)]
    vectors = remote.embed_batch(texts)
    assert [len(r["input"]) for r in provider.requests] == [128, 128, 44]
    np.testing.assert_allclose(vectors, expected(texts), atol=1e-6)


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_no_key_without_retry(
    remote: RemoteEmbedder, provider: FakeProvider, status: int
) -> None:
    provider.reset(status)
    assert _reason(remote, ["x"]) == "no_key"
    assert len(provider.requests) == 1


def test_a_wrong_key_is_no_key(provider: FakeProvider) -> None:
    provider.reset()
    embedder = make_remote(provider, key="sk-wrong")
    try:
        assert _reason(embedder, ["x"]) == "no_key"
    finally:
        embedder.close()


def test_429_is_rate_limited_without_retry(remote: RemoteEmbedder, provider: FakeProvider) -> None:
    provider.reset(429)
    assert _reason(remote, ["x"]) == "rate_limited"
    assert len(provider.requests) == 1


def test_one_500_is_retried_once_and_succeeds(
    remote: RemoteEmbedder, provider: FakeProvider
) -> None:
    provider.reset(500)
    np.testing.assert_allclose(remote.embed_batch(["x"]), expected(["x"]), atol=1e-6)
    assert len(provider.requests) == 2


def test_two_500s_are_request_failed(remote: RemoteEmbedder, provider: FakeProvider) -> None:
    provider.reset(500, 500)
    with pytest.raises(EmbeddingError) as info:
        remote.embed_batch(["x"])
    assert info.value.reason == "request_failed"
    assert info.value.message == "Embedding provider returned HTTP 500"
    assert len(provider.requests) == 2


def test_slow_answers_time_out_after_one_retry(provider: FakeProvider) -> None:
    provider.reset("slow", "slow")
    embedder = make_remote(provider, timeout_s=0.2)
    try:
        start = time.monotonic()
        assert _reason(embedder, ["x"]) == "timeout"
        assert time.monotonic() - start < provider.slow_s * 2
        assert len(provider.requests) == 2
    finally:
        embedder.close()


def test_a_timeout_then_success_recovers(provider: FakeProvider) -> None:
    provider.reset("slow")
    embedder = make_remote(provider, timeout_s=0.2)
    try:
        np.testing.assert_allclose(embedder.embed_batch(["x"]), expected(["x"]), atol=1e-6)
        assert len(provider.requests) == 2
    finally:
        embedder.close()


@pytest.mark.parametrize("step", ["badjson", "missing", "short"])
def test_malformed_answers_are_request_failed(
    remote: RemoteEmbedder, provider: FakeProvider, step: str
) -> None:
    provider.reset(step, step)
    assert _reason(remote, ["a", "b"]) == "request_failed"
    assert len(provider.requests) == 2


def test_connection_refused_is_request_failed() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = EmbeddingContext(
        providers={"gone": ProviderConfig("gone", f"http://127.0.0.1:{port}/v1", KEY)},
        timeout_s=1.0,
    )
    embedder = create(EmbeddingResolution("remote", "gone/m", None, "test"), ctx)
    assert isinstance(embedder, RemoteEmbedder)
    try:
        with pytest.raises(EmbeddingError) as info:
            embedder.embed("x")
        assert info.value.reason == "request_failed"
        assert KEY not in info.value.message
    finally:
        embedder.close()


@pytest.mark.parametrize(
    ("providers", "model"),
    [
        ({}, "local/m"),  # provider not configured
        ({"local": ProviderConfig("local", "http://127.0.0.1:9/v1", None)}, "local/m"),
        ({"local": ProviderConfig("local", "http://127.0.0.1:9/v1", "  ")}, "local/m"),
        ({"local": ProviderConfig("local", "http://127.0.0.1:9/v1", KEY)}, "no-slash"),
    ],
)
def test_no_provider_or_no_key_is_no_key_at_construction(
    providers: dict[str, ProviderConfig], model: str
) -> None:
    ctx = EmbeddingContext(providers=providers)
    with pytest.raises(EmbeddingError) as info:
        create(EmbeddingResolution("remote", model, None, "test"), ctx)
    assert info.value.reason == "no_key"
    assert info.value.source == "remote"


def test_a_known_models_width_is_learned_not_assumed(provider: FakeProvider) -> None:
    """A gateway alias or a local server may serve a familiar name at another width:
    the provider's first answer decides, not the table of known models."""
    provider.reset()
    ctx = EmbeddingContext(providers={"openai": ProviderConfig("openai", provider.base_url, KEY)})
    embedder = create(
        EmbeddingResolution("remote", "openai/text-embedding-3-large", None, "test"), ctx
    )
    assert isinstance(embedder, RemoteEmbedder)
    try:
        assert embedder.dimensions is None  # not 3072
        assert embedder.wire_model == "text-embedding-3-large"
        assert embedder.embed("x").shape == (16,)
        assert embedder.dimensions == 16
    finally:
        embedder.close()


def test_a_changed_width_fails_one_call_then_is_learned() -> None:
    """The provider's model changed under the same name: one call fails (the caller's
    index is for the old width), the next answers at the new width."""
    server = FakeProvider(dims=16).start()
    embedder = make_remote(server)
    try:
        assert embedder.embed("one").shape == (16,)
        server.dims = 8
        with pytest.raises(EmbeddingError) as info:
            embedder.embed_batch(["two"])
        assert info.value.reason == "request_failed"
        assert "dimension changed from 16 to 8" in info.value.message
        assert len(server.requests) == 2  # not retried: a retry cannot change the width
        assert embedder.embed("three").shape == (8,)
        assert embedder.dimensions == 8
        # one call's vectors are one width, even when it changes between its chunks
        server.reset("dims=8")  # the first chunk still at 8, then 4 from there on
        server.dims = 4
        with pytest.raises(EmbeddingError) as info:
            embedder.embed_batch([f"text {i}" for i in range(130)])
        assert "dimension changed from 8 to 4" in info.value.message
        assert embedder.embed_batch(["four", "five"]).shape == (2, 4)
        assert embedder.dimensions == 4
    finally:
        embedder.close()
        server.stop()
