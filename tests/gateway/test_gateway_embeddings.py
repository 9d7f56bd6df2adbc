"""``/v1/embeddings`` through memoryd: passed through to the routed provider
unchanged, behind key authentication, the per-key limit and the metrics, so a client
with one base URL (memoryd's) can embed as well as chat."""

from __future__ import annotations

import httpx
import openai
import pytest

from memoryd.testing.openai_fake import embedding
from tests.wire_support import OPENAI_SECRET, Wire


def test_embeddings_pass_through_unchanged(wire: Wire) -> None:
    client = wire.openai()
    result = client.embeddings.create(model="text-embed", input=["one", "two"])
    # float32 on the wire (the client asks for base64), so equal to float32 precision
    assert [d.embedding for d in result.data] == [
        pytest.approx(embedding("one"), rel=1e-6),
        pytest.approx(embedding("two"), rel=1e-6),
    ]
    record = wire.openai_upstream.requests[-1]
    assert record["path"] == "/v1/embeddings"
    assert record["body"]["model"] == "text-embed"
    assert record["body"]["input"] == ["one", "two"]
    assert record["headers"]["authorization"] == f"Bearer {OPENAI_SECRET}"
    assert wire.key not in str(record["headers"])
    assert wire.memories() == []  # no memory is read or written for an embedding


def test_a_provider_prefix_routes_and_is_stripped(wire: Wire) -> None:
    wire.openai().embeddings.create(model="default/text-embed", input="hello")
    assert wire.openai_upstream.last["model"] == "text-embed"


def test_embeddings_need_a_valid_key_and_answer_errors_in_openais_shape(wire: Wire) -> None:
    with pytest.raises(openai.AuthenticationError):
        wire.openai(key="not-a-key").embeddings.create(model="text-embed", input="x")
    wire.openai_upstream.status = 400
    wire.openai_upstream.error_body = {
        "error": {"message": "input too long", "type": "invalid_request_error", "param": None}
    }
    with pytest.raises(openai.BadRequestError) as caught:
        wire.openai().embeddings.create(model="text-embed", input="x")
    assert caught.value.body == wire.openai_upstream.error_body["error"]
    response = httpx.post(
        f"{wire.url}/v1/embeddings",
        headers={"authorization": f"Bearer {wire.key}"},
        content=b"[1, 2]",
    )
    assert response.status_code == 400
    assert "JSON object" in response.json()["error"]["message"]


def test_an_anthropic_provider_cannot_serve_embeddings(wire: Wire) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        wire.openai().embeddings.create(model="claude/some-model", input="x")
    assert caught.value.code == "provider_kind_mismatch"


def test_embeddings_are_counted_in_the_metrics(wire: Wire) -> None:
    wire.openai().embeddings.create(model="text-embed", input="x")
    metrics = httpx.get(f"{wire.url}/metrics").text
    line = next(
        line
        for line in metrics.splitlines()
        if 'route="/v1/embeddings"' in line and 'status="200"' in line and "_total" in line
    )
    assert line.rsplit(" ", 1)[1] in ("1", "1.0")
