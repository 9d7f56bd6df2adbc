"""Erasure of a subject with a receipt, end to end: the official ``openai``
client -> memoryd on loopback (extraction on, MiniLM vectors on) and REST; one end user
of a key erased, the other end user and the other key untouched, no byte of the erased
text left in the data directory's files, the receipt's counts, the receipts listed, and
a job queued before the erasure storing nothing after it. The same on PostgreSQL (rows
gone), through the CLI, and refused without the admin token."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import openai
import pytest
from click.testing import CliRunner

from memoryd.cli import main
from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory, Origin, utcnow
from memoryd.storage.base import NewJob
from tests.conftest import STORES
from tests.gateway_support import Gateway, gateway_on

#: Words only the erased end user ever said (searched for as bytes afterwards).
SECRET_WORDS = ["Zanzibarco", "Quillfeather", "Marmaduke"]


def told(gateway: Gateway, user: str, texts: list[str]) -> None:
    for text in texts:
        gateway.send(text, user=user)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with gateway_on(tmp_path / "data", "erase") as base:
        yield base


def _files_holding(folder: Path, words: list[str]) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            blob = path.read_bytes()
            found += [f"{path.name}: {w}" for w in words if w.encode() in blob]
    return found


def test_erasing_one_end_user_leaves_no_byte_and_nobody_else_touched(
    gateway: Gateway, tmp_path: Path
) -> None:
    engine, owner = gateway.engine, gateway.owner
    told(gateway, "ann", ["I work at Zanzibarco these days.", "My cat is called Quillfeather."])
    told(gateway, "ann", ["I moved to Marmaduke Lane last month."])
    told(gateway, "ann", ["I work at Zanzibarco and I love it."])  # a restatement
    told(gateway, "bob", ["I work at Initech.", "My dog is called Rex."])
    added = gateway.api(
        "POST",
        "/api/memory",
        json={
            "apiKeyId": owner,
            "userId": "ann",
            "content": "Ann's locker code hint: Quillfeather",
        },
    )
    assert added.status_code == 201
    other, _ = engine.keys.create("other-app")
    engine.create(NewMemory(other.id, "Carol works at Globex"))
    assert engine.drain(timeout=120)
    ann_before = engine.list_memories(owner=owner, user_id="ann", history=True).total
    assert ann_before >= 3
    bob_before = sorted(m.content for m in engine.list_memories(owner=owner, user_id="bob").data)
    assert _files_holding(tmp_path / "data", SECRET_WORDS)  # it was there

    response = gateway.api("DELETE", "/api/memory", params={"apiKeyId": owner, "userId": "ann"})
    assert response.status_code == 200, response.text
    receipt = response.json()["erasure"]
    assert receipt["id"].startswith("er_")
    assert receipt["apiKeyId"] == owner
    assert receipt["userId"] == "ann"
    assert receipt["counts"]["memories"] == ann_before
    assert not any(w in json.dumps(receipt) for w in SECRET_WORDS)

    assert engine.list_memories(owner=owner, user_id="ann", history=True).total == 0
    assert sorted(m.content for m in engine.list_memories(owner=owner, user_id="bob").data) == (
        bob_before
    )
    assert [m.content for m in engine.list_memories(owner=other.id).data] == [
        "Carol works at Globex"
    ]
    assert _files_holding(tmp_path / "data", SECRET_WORDS) == []
    preview = engine.preview(owner, "where do I work? my cat?", user_id="ann")
    assert preview.hits == []
    assert preview.profile is not None
    assert preview.profile.hits == []

    listed = gateway.api("GET", "/api/memory/erasures", params={"apiKeyId": owner})
    assert listed.status_code == 200
    assert [e["id"] for e in listed.json()["erasures"]] == [receipt["id"]]
    assert gateway.api("GET", "/api/memory/erasures", params={"apiKeyId": other.id}).json() == {
        "erasures": []
    }


def test_an_erasure_drops_the_texts_the_embedders_kept(gateway: Gateway) -> None:
    """Extraction's MiniLM keeps the messages it read (``encode``), and the embedding
    cache the vectors of recent questions: an erasure drops both, so no message of the
    person stays in the process either."""
    engine = gateway.engine
    said = "My cat is called Quillfeather."
    told(gateway, "ann", [said])
    _resolution, embedder = engine.embeddings.current()
    minilm = embedder.inner
    assert said in minilm._encoded
    assert len(engine.embeddings.cache) > 0
    response = gateway.api(
        "DELETE", "/api/memory", params={"apiKeyId": gateway.owner, "userId": "ann"}
    )
    assert response.status_code == 200, response.text
    assert said not in minilm._encoded
    assert minilm._encoded_pieces == 0
    assert len(engine.embeddings.cache) == 0


def test_a_job_queued_before_the_erasure_stores_nothing_after_it(gateway: Gateway) -> None:
    engine, owner = gateway.engine, gateway.owner
    jobs = engine.extraction
    started = utcnow()
    forgot = gateway.api("POST", "/api/memory/forget", json={"apiKeyId": owner, "userId": "ann"})
    assert forgot.status_code == 200
    stored = jobs.extract_and_store(
        owner, "", [("I work at Zanzibarco.", "user")], "ann", Origin(started)
    )
    assert stored == []
    assert engine.list_memories(owner=owner, user_id="ann").total == 0
    later = jobs.extract_and_store(owner, "", [("I work at Initech.", "user")], "ann")
    assert [r.memory.content for r in later if r.memory] == ["User works at Initech"]


def test_erasing_a_whole_key_and_the_admin_token(gateway: Gateway) -> None:
    engine, owner = gateway.engine, gateway.owner
    told(gateway, "ann", ["I work at Zanzibarco."])
    told(gateway, "bob", ["I work at Initech."])
    whole = {"apiKeyId": owner, "all": "true"}
    refused = httpx.delete(f"{gateway.url}/api/memory", params=whole)
    assert refused.status_code == 401
    client_key = httpx.delete(
        f"{gateway.url}/api/memory",
        params=whole,
        headers={"authorization": f"Bearer {gateway.key}"},
    )
    assert client_key.status_code in (401, 403)
    assert engine.list_memories(owner=owner).total == 2
    missing = gateway.api("DELETE", "/api/memory")
    assert missing.status_code == 400
    assert "apiKeyId" in missing.text
    for typo in ({"apiKeyId": owner}, {"apiKeyId": owner, "user": "ann"}):  # not the key
        unnamed = gateway.api("DELETE", "/api/memory", params=typo)
        assert unnamed.status_code == 400
        assert "all=true" in unnamed.json()["error"]["message"]
    both = gateway.api(
        "POST", "/api/memory/forget", json={"apiKeyId": owner, "userId": "ann", "all": True}
    )
    assert both.status_code == 400
    assert engine.list_memories(owner=owner).total == 2
    done = gateway.api("DELETE", "/api/memory", params=whole)
    assert done.status_code == 200
    assert done.json()["erasure"]["userId"] is None
    assert done.json()["erasure"]["counts"]["memories"] == 2
    assert engine.list_memories(owner=owner).total == 0


@pytest.mark.parametrize("store_kind", STORES)
def test_erasure_on_either_store(engine: MemoryEngine) -> None:
    for user, text in (("ann", "I work at Zanzibarco"), ("bob", "I work at Initech")):
        engine.extract_now("k", text, user_id=user)
    engine.extract_now("k", "I work at Quillfeather now", user_id="ann")  # history
    receipt = engine.forget("k", user_id="ann")
    assert receipt.counts == {"memories": 2, "extractionJobs": 0, "heldMessages": 0}
    assert [m.content for m in engine.list_memories(owner="k", history=True).data] == [
        "User works at Initech"
    ]
    assert [e.id for e in engine.erasures("k")] == [receipt.id]
    assert engine.erasures("other") == []


def test_the_cli_erases_and_lists_the_receipts(tmp_path: Path) -> None:
    data = tmp_path / "cli"
    env = {"MEMORYD_DATA_DIR": str(data)}
    runner = CliRunner()
    for text in ("User works at Zanzibarco", "User has a cat"):
        added = runner.invoke(main, ["memory", "add", "-k", "k", text], env=env)
        assert added.exit_code == 0, added.output
    unnamed = runner.invoke(main, ["memory", "forget", "-k", "k", "--yes"], env=env)
    assert unnamed.exit_code != 0
    assert "--all" in unnamed.output
    refused = runner.invoke(main, ["memory", "forget", "-k", "k", "--all"], env=env)
    assert refused.exit_code != 0
    assert "--yes" in refused.output
    done = runner.invoke(main, ["--json", "memory", "forget", "-k", "k", "--all", "--yes"], env=env)
    assert done.exit_code == 0, done.output
    receipt = json.loads(done.output)["erasure"]
    assert receipt["counts"]["memories"] == 2
    assert receipt["userId"] is None
    listed = runner.invoke(main, ["memory", "erasures", "-k", "k"], env=env)
    assert listed.exit_code == 0
    assert receipt["id"] in listed.output
    assert "Zanzibarco" not in listed.output


def test_mcp_erases_an_end_user_of_its_own_key_only(engine: MemoryEngine) -> None:
    from tests.mcp_support import Session, over_http, served

    with served(engine) as srv:
        engine.extract_now("alice", "I work at Zanzibarco", user_id="ann")
        engine.extract_now("alice", "I work at Initech", user_id="bob")
        engine.extract_now("bob", "I work at Globex", user_id="ann")

        async def body(s: Session) -> None:
            refused = await s.client.call_tool(
                "memory_forget", {"userId": "ann", "apiKeyId": "bob"}
            )
            assert refused.is_error
            out = await s.ok("memory_forget", {"userId": "ann"})
            assert out["erasure"]["apiKeyId"] == "alice"
            assert out["erasure"]["counts"]["memories"] == 1
            assert "Zanzibarco" not in json.dumps(out)

        over_http(srv.url, srv.alice, body)
    assert [m.content for m in engine.list_memories(owner="alice").data] == [
        "User works at Initech"
    ]
    assert [m.content for m in engine.list_memories(owner="bob").data] == ["User works at Globex"]


def test_a_stream_that_finishes_after_the_erasure_stores_nothing(gateway: Gateway) -> None:
    engine, owner, upstream = gateway.engine, gateway.owner, gateway.upstream
    upstream.hold = threading.Event()
    told_text: list[str] = []

    def chat() -> None:
        with openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.key, max_retries=0) as c:
            stream = c.chat.completions.create(
                model="chat-model",
                messages=[{"role": "user", "content": "I work at Zanzibarco these days."}],
                stream=True,
                user="ann",
            )
            told_text.extend(
                chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices
            )

    talker = threading.Thread(target=chat)
    talker.start()
    deadline = time.monotonic() + 60
    while not upstream.requests and time.monotonic() < deadline:  # the stream has begun
        time.sleep(0.02)
    forgot = gateway.api("DELETE", "/api/memory", params={"apiKeyId": owner, "userId": "ann"})
    assert forgot.status_code == 200
    upstream.hold.set()
    talker.join(timeout=60)
    assert told_text  # the answer reached the client
    assert engine.drain(timeout=60)
    assert engine.list_memories(owner=owner, user_id="ann").total == 0
    gateway.send("I work at Initech.", user="ann")  # said after the erasure: kept
    assert [m.content for m in engine.list_memories(owner=owner, user_id="ann").data] == [
        "User works at Initech"
    ]


def test_the_qdrant_tier_holds_nothing_of_the_erased_once_the_call_returns(
    semantic_engine: MemoryEngine, tmp_path: Path
) -> None:
    """Qdrant local mode: the erased end user's point (its payload holds the content)
    is deleted before ``forget`` returns, and its storage holds none of the bytes."""
    from tests.vectors.test_qdrant_tier import enable_local, store_of

    engine = semantic_engine
    engine.create(NewMemory("k", "User works at Zanzibarco", user_id="ann"))
    engine.create(NewMemory("k", "User works at Initech", user_id="bob"))
    assert engine.drain(10)
    tier = enable_local(engine, tmp_path / "q")
    assert store_of(tier).count() == 2
    assert _files_holding(tmp_path / "q", ["Zanzibarco"])
    engine.forget("k", user_id="ann")  # no settle(): the call itself waits for the tier
    assert store_of(tier).count() == 1
    assert _files_holding(tmp_path / "q", ["Zanzibarco"]) == []
    assert [h.memory.content for h in engine.preview("k", "works", user_id="bob").hits] == [
        "User works at Initech"
    ]


def test_a_captured_fact_records_the_request_it_was_said_in(gateway: Gateway) -> None:
    """Provenance: via, when said, the request id, the speaker's role."""
    raw = gateway.send_raw("I work at Zanzibarco these days.", user="ann")
    (memory,) = gateway.engine.list_memories(owner=gateway.owner, user_id="ann").data
    meta = memory.metadata
    assert meta["via"] == "gateway"
    assert meta["requestId"] == raw.headers["x-memoryd-request-id"]
    assert meta["source"] == "user"
    assert meta["saidAt"] <= meta["extractedAt"]


def test_an_end_user_is_erased_by_the_id_the_app_knows(gateway: Gateway) -> None:
    """The gateway stores a long (or unprintable) end-user id as a digest; the erasure
    takes the app's own id and finds the same end user."""
    engine, owner = gateway.engine, gateway.owner
    long_id = "tenant-42/" + "x" * 300
    gateway.send("I work at Zanzibarco these days.", user=long_id)
    gateway.send("I work at Initech.", user="bob")
    hashed = [m for m in engine.list_memories(owner=owner).data if m.user_id.startswith("sha256:")]
    assert [m.content for m in hashed] == ["User works at Zanzibarco"]
    erased = gateway.api("POST", "/api/memory/forget", json={"apiKeyId": owner, "userId": long_id})
    assert erased.status_code == 200, erased.text
    assert erased.json()["erasure"]["counts"]["memories"] == 1
    assert [m.content for m in engine.list_memories(owner=owner).data] == ["User works at Initech"]


def test_a_deferred_job_said_before_the_erasure_stores_nothing(gateway: Gateway) -> None:
    """A job a busy server left in the queue table keeps when its words were said: one
    said before an erasure of its subject but claimed after it stores nothing; one said
    after it is stored."""
    engine, owner = gateway.engine, gateway.owner
    said_before = utcnow()
    engine.forget(owner, user_id="ann")
    said_after = utcnow() + timedelta(seconds=1)  # receipts keep milliseconds: not the same one
    for text, said in (("I work at Zanzibarco.", said_before), ("I work at Initech.", said_after)):
        job = NewJob(owner, "", [(text, "user")], utcnow(), "ann", said_at=said, request_id="r")
        engine.store.write(lambda tx, j=job: tx.queue_extraction(j))
    assert engine.extraction.recover() == 2
    assert engine.drain(timeout=60)
    (kept,) = engine.list_memories(owner=owner, user_id="ann", history=True).data
    assert kept.content == "User works at Initech"
    assert kept.metadata["requestId"] == "r"
    assert engine.store.read().queued_extractions() == []
