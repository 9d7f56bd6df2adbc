"""End users inside one API key: an app names the person it serves with
OpenAI's `user` / `safety_identifier` fields or the `x-memoryd-user` header. Through
the real gateway (official `openai` client) and REST: what one end user says is theirs,
another end user of the same key never sees it, and the key's shared memories (stored
without an end user, as every memory before this release) reach them only when the key
shares them (``shareWithEndUsers``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.engine import MemoryEngine
from memoryd.models import NewMemory
from tests.conftest import STORES, add, raw_write
from tests.gateway_support import Gateway as BaseGateway
from tests.gateway_support import running_gateway


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Every test here runs on the SQLite file and on PostgreSQL."""
    return str(request.param)


class Gateway(BaseGateway):
    def chat(self, text: str, *, headers: dict[str, str] | None = None, **fields: Any) -> list[str]:
        """Send ``text``; the memories injected into it."""
        self.send(text, headers=headers, **fields)
        return self.injected()


@pytest.fixture
def gateway(engine: MemoryEngine) -> Iterator[Gateway]:
    engine.settings.update({"strategy": "recent"})  # everything in scope is injected
    with running_gateway(engine) as base:
        yield Gateway(**vars(base))


def test_end_users_of_one_key_never_see_each_other(gateway: Gateway) -> None:
    add(gateway.engine, gateway.owner, "Shared: the app is a recipe assistant")
    gateway.chat("I'm allergic to penicillin.", user="alice")
    gateway.chat("I live in Oslo.", extra_body={"safety_identifier": "bob"})

    # by default what was said with no end user named reaches no named one
    assert gateway.chat("hi", user="alice") == ["User is allergic to penicillin"]
    assert gateway.chat("hi", user="bob") == ["User lives in Oslo"]
    gateway.engine.settings.update({"shareWithEndUsers": [gateway.owner]})
    alice = gateway.chat("hi", user="alice")
    bob = gateway.chat("hi", extra_body={"safety_identifier": "bob"})
    nobody = gateway.chat("hi")
    assert sorted(alice) == [
        "Shared: the app is a recipe assistant",
        "User is allergic to penicillin",
    ]
    assert sorted(bob) == ["Shared: the app is a recipe assistant", "User lives in Oslo"]
    assert nobody == ["Shared: the app is a recipe assistant"]

    rows = {m.content: m.user_id for m in gateway.engine.list_memories(owner=gateway.owner).data}
    assert rows == {
        "Shared: the app is a recipe assistant": "",
        "User is allergic to penicillin": "alice",
        "User lives in Oslo": "bob",
    }


def test_an_end_users_own_fact_is_injected_once_and_shadows_the_shared_slot(
    gateway: Gateway,
) -> None:
    """Both copies of a fact the shared memories also hold were injected, and the end
    user's own home sat next to the key's shared one."""
    gateway.engine.settings.update({"shareWithEndUsers": ["*"]})
    gateway.chat("I'm allergic to penicillin.")
    gateway.chat("I live in Sao Paulo.")
    gateway.chat("I'm allergic to penicillin.", user="dave")
    gateway.chat("I live in Reykjavik.", user="dave")
    assert len(gateway.engine.list_memories(owner=gateway.owner).data) == 4
    assert sorted(gateway.chat("hi", user="dave")) == [
        "User is allergic to penicillin",
        "User lives in Reykjavik",
    ]
    assert sorted(gateway.chat("hi", user="erin")) == [
        "User is allergic to penicillin",
        "User lives in Sao Paulo",
    ]
    preview = gateway.engine.preview(gateway.owner, "where do I live", user_id="dave")
    reasons = {d["content"]: d["reason"] for d in preview.dropped}
    assert "own memory of this slot" in reasons["User lives in Sao Paulo"]


def test_the_header_wins_over_the_body_fields(gateway: Gateway) -> None:
    gateway.chat("I play the cello.", user="alice", headers={"x-memoryd-user": "carol"})
    (memory,) = gateway.engine.list_memories(owner=gateway.owner).data
    assert memory.user_id == "carol"
    assert gateway.chat("hi", user="carol") == ["User plays the cello"]
    assert gateway.chat("hi", user="alice") == []


def test_long_end_user_ids_sharing_a_prefix_stay_two_end_users(gateway: Gateway) -> None:
    """Ids were cut to 200 characters, so two sharing those read each other's facts;
    a longer id is now a digest of all of it (the store's limit stays 200)."""
    prefix = "tenant-" + "0" * 193
    gateway.chat("I live in Reykjavik.", user=f"{prefix}-user-1")
    assert gateway.chat("hi", user=f"{prefix}-user-2") == []
    assert gateway.chat("hi", user=f"{prefix}-user-1") == ["User lives in Reykjavik"]
    assert gateway.chat("hi", headers={"x-memoryd-user": f"{prefix}-user-1"}) == [
        "User lives in Reykjavik"
    ]
    (memory,) = gateway.engine.list_memories(owner=gateway.owner).data
    assert memory.user_id.startswith("sha256:")
    assert len(memory.user_id) <= 200


def test_an_end_user_id_with_control_characters_still_keeps_the_turn(gateway: Gateway) -> None:
    gateway.chat("I live in Oslo.", user="ann\x00\nbob")
    (memory,) = gateway.engine.list_memories(owner=gateway.owner).data
    assert memory.user_id.startswith("sha256:")
    assert gateway.chat("hi", user="ann\x00\nbob") == ["User lives in Oslo"]
    assert gateway.chat("hi", user="ann") == []


@pytest.mark.parametrize("field", ["user", "safety_identifier"])
def test_an_end_user_id_that_is_not_a_string_is_refused(gateway: Gateway, field: str) -> None:
    """It was ignored, and the turn went to the key's shared memories, which every end
    user of the key reads."""
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.chat("I have diabetes.", extra_body={field: 4711})
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["param"] == field
    assert field in error["message"]
    assert "string" in error["message"]
    assert gateway.engine.list_memories(owner=gateway.owner).data == []
    assert gateway.upstream.requests == []  # nothing was forwarded


def test_a_session_id_longer_than_the_store_takes_still_keeps_the_turn(gateway: Gateway) -> None:
    """A 5,000-character session header was accepted, and the extraction job then
    failed on the store's 200-character limit: the facts were lost."""
    gateway.chat("My cat is called Mimi.", headers={"x-memoryd-session-id": "s" * 5000})
    (memory,) = gateway.engine.list_memories(owner=gateway.owner).data
    assert "Mimi" in memory.content
    assert memory.session_id.startswith("sha256:")
    assert gateway.engine.extraction_stats["failed"] == 0


def test_an_unknown_memory_mode_is_refused(gateway: Gateway) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.chat("I live in Oslo.", headers={"x-memoryd-memory": "inject-onyl"})
    assert "x-memoryd-memory" in str(caught.value)
    assert gateway.engine.list_memories(owner=gateway.owner).data == []


def test_the_same_fact_of_two_end_users_is_two_memories_and_supersedes_only_its_own(
    gateway: Gateway,
) -> None:
    gateway.chat("I live in Madrid.", user="alice")
    gateway.chat("I live in Madrid.", user="bob")
    gateway.chat("I moved to Lyon.", user="bob")
    assert gateway.chat("hi", user="alice") == ["User lives in Madrid"]
    assert gateway.chat("hi", user="bob") == ["User moved to Lyon and lives there now"]


def test_rest_lists_previews_and_creates_per_end_user(gateway: Gateway) -> None:
    gateway.chat("I'm vegetarian.", user="alice")
    gateway.chat("I'm vegan.", user="bob")
    created = gateway.api(
        "POST",
        "/api/memory",
        json={"apiKeyId": gateway.owner, "userId": "alice", "content": "User likes jazz"},
    )
    assert created.status_code == 201, created.text
    assert created.json()["memory"]["userId"] == "alice"

    listed = gateway.api(
        "GET", "/api/memory", params={"apiKeyId": gateway.owner, "userId": "alice"}
    )
    assert sorted(m["content"] for m in listed.json()["data"]) == [
        "User is vegetarian",
        "User likes jazz",
    ]
    preview = gateway.api(
        "POST",
        "/api/memory/retrieve-preview",
        json={"apiKeyId": gateway.owner, "userId": "bob", "query": "vegetarian vegan jazz"},
    ).json()
    # a diet is in every request's profile, not among the retrieved ones
    assert [m["content"] for m in preview["profile"]["memories"]] == ["User is vegan"]
    assert preview["memories"] == []


def test_export_and_import_carry_the_end_user(gateway: Gateway) -> None:
    gateway.chat("I'm vegetarian.", user="alice")
    gateway.chat("I'm vegan.", user="bob")
    add(gateway.engine, gateway.owner, "Shared rule")
    everything = gateway.api("GET", "/api/memory/export", params={"apiKeyId": gateway.owner})
    rows = [line for line in everything.text.splitlines() if line.strip()]
    assert len(rows) == 3
    alice = gateway.api(
        "GET", "/api/memory/export", params={"apiKeyId": gateway.owner, "userId": "alice"}
    )
    (line,) = [line for line in alice.text.splitlines() if line.strip()]
    assert '"userId": "alice"' in line
    imported = gateway.api(
        "POST",
        "/api/memory/import",
        params={"apiKeyId": "copy"},
        content="\n".join(rows).encode(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 200, imported.text
    copied = {m.content: m.user_id for m in gateway.engine.list_memories(owner="copy").data}
    assert copied == {"User is vegetarian": "alice", "User is vegan": "bob", "Shared rule": ""}


def test_summaries_never_merge_end_users_into_a_shared_memory(gateway: Gateway) -> None:
    from datetime import timedelta

    from memoryd.models import to_iso, utcnow

    old = utcnow() - timedelta(days=90)
    gateway.engine.settings.update({"shareWithEndUsers": [gateway.owner]})
    add(gateway.engine, gateway.owner, "Shared old note", created_at=old)
    gateway.chat("I'm allergic to peanuts.", user="alice")
    gateway.chat("I live in Oslo.", user="bob")
    stamp = to_iso(old)
    raw_write(gateway.engine, "UPDATE memories SET created_at = ?", (stamp,))  # backdate
    result = gateway.engine.summarize_older_than(gateway.owner, 30)
    assert result.deleted_count == 3
    assert len(result.summary_ids) == 3
    for user, mine, other in (("alice", "peanuts", "Oslo"), ("bob", "Oslo", "peanuts")):
        injected = " ".join(gateway.chat("hi", user=user))
        assert mine in injected
        assert "Shared old note" in injected
        assert other not in injected


def test_read_update_delete_and_clear_take_the_end_user(gateway: Gateway) -> None:
    gateway.chat("I'm vegetarian.", user="alice")
    gateway.chat("I'm vegan.", user="bob")
    ids = {m.user_id: m.id for m in gateway.engine.list_memories(owner=gateway.owner).data}
    path = f"/api/memory/{ids['alice']}"
    assert gateway.api("GET", path, params={"userId": "bob"}).status_code == 404
    read = gateway.api("GET", path, params={"userId": "alice"})
    assert read.json()["memory"]["content"] == "User is vegetarian"
    assert gateway.api("DELETE", path, params={"userId": "bob"}).status_code == 404
    assert (
        gateway.api("PUT", path, params={"userId": "bob"}, json={"content": "x"}).status_code == 404
    )
    changed = gateway.api(
        "PUT", path, params={"userId": "alice"}, json={"content": "User eats fish"}
    )
    assert changed.json()["memory"]["content"] == "User eats fish"
    assert gateway.engine.clear(gateway.owner, user_id="bob") == 1
    left = [(m.user_id, m.content) for m in gateway.engine.list_memories(owner=gateway.owner).data]
    assert left == [("alice", "User eats fish")]
    assert gateway.api("DELETE", path, params={"userId": "alice"}).json() == {"deleted": True}


USERS = ["", "ann", "bob", "cy"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.sampled_from(USERS), st.sampled_from(["figs", "jazz", "oslo"])), max_size=12
    ),
    st.sampled_from(USERS[1:]),
    st.sampled_from(["recent", "hybrid"]),
)
def test_no_end_user_ever_retrieves_another_end_users_memory(
    engine: MemoryEngine, stored: list[tuple[str, str]], asking: str, strategy: str
) -> None:
    """Property: whatever the memories and the query, retrieval for one end user of a
    key returns only their memories and the key's shared ones; listing by userId only
    theirs."""
    owner = f"prop-{len(stored)}-{asking}-{strategy}"
    engine.clear(owner)
    for i, (user, word) in enumerate(stored):
        engine.create(NewMemory(owner, f"{user or 'shared'} likes {word} {i}", user_id=user))
    for query in (None, "figs jazz oslo likes"):
        hits = engine.retrieve(owner, query, strategy=strategy, user_id=asking, max_tokens=16000)
        assert {h.memory.user_id for h in hits} <= {"", asking}
        expected = {
            f"{u or 'shared'} likes {w} {i}" for i, (u, w) in enumerate(stored) if u in ("", asking)
        }
        if query is None or strategy == "recent":
            assert {h.memory.content for h in hits} <= expected
    listed = engine.list_memories(owner=owner, user_id=asking, limit=200).data
    assert {m.user_id for m in listed} <= {asking}


def test_rest_import_and_summarize_take_the_end_user(gateway: Gateway) -> None:
    lines = (
        '{"content": "User likes tea", "key": "tea"}\n{"content": "User likes figs", "key": "figs"}'
    )
    imported = gateway.api(
        "POST",
        "/api/memory/import",
        params={"apiKeyId": gateway.owner, "userId": "dora"},
        content=lines.encode(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 200, imported.text
    assert sorted(gateway.chat("hi", user="dora")) == ["User likes figs", "User likes tea"]
    assert gateway.chat("hi", user="ed") == []
    summary = gateway.api(
        "POST",
        "/api/memory/summarize",
        json={"apiKeyId": gateway.owner, "userId": "ed", "olderThanDays": 1, "dryRun": True},
    )
    assert summary.status_code == 200, summary.text
    assert summary.json()["candidates"] == []
