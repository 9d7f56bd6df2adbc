"""The management API's memory routes over HTTP (in process),
docs/design/interfaces.md#rest-api shapes."""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

import pytest

from memoryd.engine import MemoryEngine
from memoryd.http.deps import AuthThrottle
from memoryd.models import to_iso, utcnow
from tests.conftest import STORES, add


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Every test here runs on the SQLite file and on PostgreSQL."""
    return str(request.param)


MEMORY_FIELDS = {
    "id",
    "apiKeyId",
    "sessionId",
    "type",
    "key",
    "content",
    "metadata",
    "createdAt",
    "updatedAt",
    "expiresAt",
    "accessCount",
    "lastAccessedAt",
    "supersededAt",
    "userId",
    "supersededBy",
    "subjects",
}


def assert_error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert {"message", "code", "details"} <= set(body["error"])
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    if code:
        assert body["error"]["code"] == code
    assert "Traceback" not in response.text
    return dict(body["error"])


def test_create_returns_201_with_string_id_then_200_on_upsert(client: Any) -> None:
    body = {"apiKeyId": "alice", "content": "User prefers dark mode", "key": "preference:theme"}
    first = client.post("/api/memory", json=body)
    assert first.status_code == 201
    data = first.json()
    assert isinstance(data["id"], str)  # reference bug B6: the id was an object
    assert set(data["memory"]) == MEMORY_FIELDS
    assert data["memory"]["type"] == "factual"
    again = client.post(
        "/api/memory",
        json={
            **body,
            "content": "User prefers light mode",
            "expiresAt": to_iso(utcnow() + timedelta(days=3)),
        },
    )
    assert again.status_code == 200  # updated in place (B9: expiresAt on re-post works)
    assert again.json()["id"] == data["id"]
    assert again.json()["memory"]["content"] == "User prefers light mode"
    assert again.json()["memory"]["expiresAt"] is not None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "key": "k"}, "apiKeyId"),
        ({"apiKeyId": "", "content": "x", "key": "k"}, "apiKeyId"),
        ({"apiKeyId": "a", "content": "", "key": "k"}, "content"),
        ({"apiKeyId": "a", "content": "x", "key": ""}, "key"),
        ({"apiKeyId": "a", "content": "x", "key": "k", "type": "bogus"}, "type"),
        ({"apiKeyId": "a", "content": "x", "key": "k", "metadata": [1]}, "metadata"),
        ({"apiKeyId": "a", "content": "x", "key": "k", "expiresAt": "yesterday"}, "expiresAt"),
        # a number was read as a Unix time: the memory expired in 1970
        ({"apiKeyId": "a", "content": "x", "key": "k", "expiresAt": 12345}, "expiresAt"),
        # the year 1 at +05:00 is before the year 1 in UTC: it was a 500
        (
            {"apiKeyId": "a", "content": "x", "expiresAt": "0001-01-01T00:00:00+05:00"},
            "expiresAt",
        ),
        ({"apiKeyId": "a", "content": "x", "key": "k", "unknownField": 1}, "unknownField"),
        ({"apiKeyId": "   ", "content": "x", "key": "k"}, "apiKeyId"),
    ],
)
def test_create_validation_errors(client: Any, body: dict[str, Any], field: str) -> None:
    error = assert_error(client.post("/api/memory", json=body), 400, "invalid_request")
    assert (
        any(field in (d.get("field") or "") for d in error["details"]) or field in error["message"]
    )


@pytest.mark.parametrize(
    ("body", "said"), [({}, "query: Field required"), ({"query": 5}, "query: ")]
)
def test_a_body_field_named_query_is_named_in_the_error(
    client: Any, body: dict[str, Any], said: str
) -> None:
    """FastAPI's location ("body", "query") lost its "query" with the "body" prefix."""
    error = assert_error(client.post("/api/memory/retrieve-preview", json=body), 400)
    assert said in error["message"]
    assert [d["field"] for d in error["details"]] == ["query"]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_metadata_numbers_json_cannot_hold_are_refused(client: Any, number: str) -> None:
    """Python's decoder reads them; they were stored as null, the value lost silently."""
    raw = '{"apiKeyId": "a", "content": "x", "metadata": {"b": [1, ' + number + "]}}"
    response = client.post("/api/memory", content=raw, headers={"content-type": "application/json"})
    error = assert_error(response, 400, "invalid_request")
    assert "metadata.b[1]" in error["message"]
    assert client.get("/api/memory", params={"apiKeyId": "a"}).json()["total"] == 0


@pytest.mark.parametrize("raw", ["not-valid-json{{{", "", "[1,2", "\xff"])
def test_malformed_json_is_400_without_traceback(client: Any, raw: str) -> None:
    for path in ("/api/memory", "/api/memory/retrieve-preview", "/api/memory/summarize"):
        response = client.post(
            path,
            content=raw.encode("utf-8", "surrogateescape") if raw != "\xff" else b"\xff\xfe",
            headers={"content-type": "application/json"},
        )
        assert_error(response, 400, "invalid_request")


def test_get_put_delete_and_404s(client: Any) -> None:
    created = client.post(
        "/api/memory", json={"apiKeyId": "a", "content": "old", "key": "k1", "metadata": {"x": 1}}
    ).json()
    memory_id = created["id"]
    assert client.get(f"/api/memory/{memory_id}").json()["memory"]["content"] == "old"
    put = client.put(
        f"/api/memory/{memory_id}", json={"content": "Updated content", "metadata": {"y": 2}}
    )
    assert put.status_code == 200
    assert put.json()["memory"]["content"] == "Updated content"
    assert put.json()["memory"]["metadata"] == {"y": 2}  # replaced: docs/design/storage.md#writes
    assert_error(client.put(f"/api/memory/{memory_id}", json={"unknownField": 1}), 400)
    assert_error(client.put(f"/api/memory/{memory_id}", json={"content": None}), 400)
    assert_error(
        client.put("/api/memory/non-existent-id-12345", json={"content": "x"}), 404, "not_found"
    )
    assert_error(client.get("/api/memory/non-existent-id-12345"), 404, "not_found")
    assert client.delete(f"/api/memory/{memory_id}").json() == {"deleted": True}
    assert_error(client.delete(f"/api/memory/{memory_id}"), 404, "not_found")


def test_put_expires_at_null_clears_and_absent_keeps(client: Any) -> None:
    later = to_iso(utcnow() + timedelta(days=1))
    memory_id = client.post(
        "/api/memory", json={"apiKeyId": "a", "content": "c", "key": "k", "expiresAt": later}
    ).json()["id"]
    kept = client.put(f"/api/memory/{memory_id}", json={"content": "c2"}).json()["memory"]
    assert kept["expiresAt"] == later
    cleared = client.put(f"/api/memory/{memory_id}", json={"expiresAt": None}).json()["memory"]
    assert cleared["expiresAt"] is None


def test_list_filters_pagination_and_stats(client: Any, engine: MemoryEngine) -> None:
    add(engine, "key-a", "TypeScript project setup", key="typescript:guide")
    add(engine, "key-a", "Production deployment checklist", key="deploy:runbook")
    from memoryd.models import MemoryType

    add(engine, "key-a", "tooling", key="typescript:tooling", type=MemoryType.SEMANTIC)
    add(engine, "key-b", "TypeScript for b", key="typescript:b")
    body = client.get(
        "/api/memory", params={"apiKeyId": "key-a", "q": "typescript", "limit": 20, "page": 1}
    ).json()
    assert sorted(m["key"] for m in body["data"]) == ["typescript:guide", "typescript:tooling"]
    assert body["total"] == 2
    assert body["stats"]["total"] == 2
    assert body["stats"]["byType"] == {"factual": 1, "semantic": 1}
    # the tokens of what the filters match, as total is (it was the owner's whole store)
    assert body["stats"]["tokensUsed"] == sum((len(m["content"]) + 3) // 4 for m in body["data"])
    nothing = client.get("/api/memory", params={"apiKeyId": "key-a", "q": "no such"}).json()
    assert (nothing["total"], nothing["stats"]["tokensUsed"]) == (0, 0)
    paged = client.get("/api/memory", params={"apiKeyId": "key-a", "limit": 1, "offset": 1}).json()
    assert len(paged["data"]) == 1
    assert paged["total"] == 3
    assert paged["page"] == 2
    assert paged["totalPages"] == 3
    for bad in (
        {"limit": 0},
        {"limit": 201},
        {"page": 0},
        {"offset": -1},
        {"apiKeyId": ""},
        {"type": "bogus"},
    ):
        assert_error(client.get("/api/memory", params=bad), 400)


def test_export_streams_every_page_and_import_reports_lines(
    client: Any, engine: MemoryEngine
) -> None:
    from memoryd.models import NewMemory

    engine.create_many(NewMemory("alice", f"fact {i}") for i in range(1234))
    response = client.get("/api/memory/export", params={"apiKeyId": "alice"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = response.text.strip().split("\n")
    assert len(lines) == 1234
    assert {json.loads(line)["apiKeyId"] for line in lines} == {"alice"}
    assert_error(client.get("/api/memory/export"), 400)

    payload = "\n".join([lines[0], "not json", lines[1], '{"content": ""}']) + "\n"
    result = client.post(
        "/api/memory/import",
        params={"apiKeyId": "bob"},
        content=payload,
        headers={"content-type": "application/x-ndjson"},
    ).json()
    assert result["imported"] == 2
    assert [e["line"] for e in result["errors"]] == [2, 4]
    assert client.get("/api/memory", params={"apiKeyId": "bob"}).json()["total"] == 2


def test_import_reports_bad_end_users_and_dates_and_keeps_the_rest(
    client: Any, engine: MemoryEngine
) -> None:
    lines = [
        {"content": "kept one"},
        {"content": "shared by mistake", "userId": 123},  # was imported as shared
        {"content": "unreachable", "userId": "u" * 201},
        {"content": "blank user", "userId": "   "},
        {"content": "control", "userId": "a\u0000b"},
        {"content": "before the year 1", "createdAt": "0001-01-01T00:00:00+05:00"},  # was a 500
        {"content": "an old year", "createdAt": "0999-06-01T00:00:00Z"},
        {"content": "kept two", "userId": "ann"},
    ]
    result = client.post(
        "/api/memory/import",
        params={"apiKeyId": "bob"},
        content="\n".join(json.dumps(line) for line in lines) + "\n",
        headers={"content-type": "application/x-ndjson"},
    )
    assert result.status_code == 200
    report = result.json()
    assert [e["line"] for e in report["errors"]] == [2, 3, 4, 5, 6]
    assert all("userId" in e["message"] for e in report["errors"][:4])
    assert "createdAt" in report["errors"][4]["message"]
    stored = {m.content: m for m in engine.list_memories(owner="bob").data}
    assert sorted(stored) == ["an old year", "kept one", "kept two"]
    assert stored["an old year"].created_at.year == 999
    assert stored["kept two"].user_id == "ann"


def test_a_cutoff_before_the_year_1000_clears_nothing_newer(
    client: Any, engine: MemoryEngine
) -> None:
    """``to_iso`` wrote the year 999 as "999-...", which sorts after "2026-..." as text:
    a clear with that cutoff deleted every memory of the owner."""
    from memoryd.models import parse_iso, to_iso

    add(engine, "carol", "made today")
    assert to_iso(parse_iso("0999-01-01")) == "0999-01-01T00:00:00.000Z"
    assert engine.clear("carol", older_than=parse_iso("0999-01-01")) == 0
    assert engine.clear("carol", older_than=parse_iso("0030-01-01")) == 0
    assert [m.content for m in engine.list_memories(owner="carol").data] == ["made today"]
    memory_id = engine.list_memories(owner="carol").data[0].id
    kept = client.put(f"/api/memory/{memory_id}", json={"expiresAt": "0500-01-01T00:00:00Z"})
    assert kept.json()["memory"]["expiresAt"] == "0500-01-01T00:00:00.000Z"  # read back, not null


def test_the_same_key_written_at_once_from_many_threads_is_one_memory(
    client: Any, engine: MemoryEngine
) -> None:
    """On PostgreSQL each upsert read no row and all but one insert failed: a 500 and a
    lost write. The losers now run again and update the row."""
    import threading

    start = threading.Barrier(6)
    failures: list[BaseException] = []

    def write(i: int) -> None:
        start.wait()
        try:
            response = client.post(
                "/api/memory", json={"apiKeyId": "race", "content": f"Race {i}", "key": "k"}
            )
            assert response.status_code in (200, 201), response.text
        except BaseException as exc:  # reported below, on the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    (memory,) = engine.list_memories(owner="race").data
    assert memory.key == "k"


def test_health_round_trip_leaves_nothing(client: Any, engine: MemoryEngine) -> None:
    body = client.get("/api/memory/health").json()
    assert body["working"] is True
    assert body["latencyMs"] >= 0
    assert engine.list_memories().total == 0


def test_retrieve_preview(client: Any, engine: MemoryEngine) -> None:
    add(engine, "alice", "I love C++ programming")
    body = client.post(
        "/api/memory/retrieve-preview", json={"query": "what is C++?", "apiKeyId": "alice"}
    ).json()
    assert body["budgetMaxTokens"] == 2000
    assert body["memories"][0]["content"] == "I love C++ programming"
    assert set(body["memories"][0]) == {
        "id",
        "type",
        "key",
        "content",
        "score",
        "tokens",
        "tier",
        "vecScore",
        "ftsScore",
        "reason",
    }
    assert body["totalTokensUsed"] == sum(m["tokens"] for m in body["memories"])
    assert set(body["resolution"]) == {
        "embeddingSource",
        "embeddingModel",
        "vectorStore",
        "strategyUsed",
        "rerankApplied",
        "fallbackReason",
        "fusion",
        "hidden",
        "queryTruncated",
        "subjects",
        "asked",
        "queryEncoder",
    }
    assert body["resolution"]["vectorStore"] in {"sqlite-vec", "qdrant", "none"}
    empty = client.post(
        "/api/memory/retrieve-preview",
        json={"query": "test query", "strategy": "exact", "maxTokens": 2000, "limit": 10},
    ).json()
    assert empty["resolution"]["strategyUsed"]
    for bad in (
        {"query": ""},
        {"query": "   "},
        {"query": "x", "limit": 101},
        {"query": "x", "strategy": "magic"},
        {"query": "x", "maxTokens": 0},
        {"query": "x", "extra": 1},
    ):
        assert_error(client.post("/api/memory/retrieve-preview", json=bad), 400)


def test_engine_status_and_embedding_providers(client: Any, store_kind: str) -> None:
    status = client.get("/api/memory/engine-status").json()
    keyword = (
        {"available": True, "backend": "FTS5", "reason": "FTS5 available"}
        if store_kind == "sqlite"
        else {"available": True, "backend": "tsvector", "reason": "PostgreSQL full-text search"}
    )
    resident = status["keyword"].pop("resident")
    assert status["keyword"] == keyword
    # resident keyword copies: none yet, the threshold shown (PostgreSQL's starts higher)
    assert (resident["owners"], resident["minRows"]) == (0, 200 if store_kind == "sqlite" else 2000)
    assert (
        status["storage"]["backend"] == {"sqlite": "sqlite", "postgres": "postgresql"}[store_kind]
    )
    assert status["vectorStore"]["backend"] in {"sqlite-vec", "pgvector", "qdrant", "none"}
    assert isinstance(status["vectorStore"]["rowCount"], int)
    assert set(status["embedding"]["cacheStats"]) >= {"hits", "misses", "size"}
    assert status["qdrant"]["enabled"] is False
    assert set(status["reindex"]) >= {"running", "processed", "pending"}
    providers = client.get("/api/memory/embedding-providers").json()["providers"]
    assert isinstance(providers, list)
    for entry in providers:
        assert isinstance(entry["provider"], str)
        assert isinstance(entry["hasKey"], bool)
        assert all(isinstance(m["id"], str) and isinstance(m["name"], str) for m in entry["models"])


def test_summarize_checks_its_owner_and_never_merges(client: Any, engine: MemoryEngine) -> None:
    old = utcnow() - timedelta(days=40)
    kept = add(engine, "api-key-1", "Old fact one.", created_at=old)
    other = add(engine, "api-key-2", "Other owner's old fact.", created_at=old)
    # without apiKeyId: every owner apart (tests/storage/test_seed_compat.py); "" is no owner
    assert_error(client.post("/api/memory/summarize", json={"apiKeyId": "", "dryRun": True}), 400)
    for days in (0, 366):
        assert_error(
            client.post(
                "/api/memory/summarize", json={"apiKeyId": "api-key-1", "olderThanDays": days}
            ),
            400,
        )
    dry = client.post(
        "/api/memory/summarize", json={"olderThanDays": 30, "dryRun": True, "apiKeyId": "api-key-1"}
    ).json()
    assert dry["dryRun"] is True
    assert dry["deletedCount"] == 0
    assert dry["summaryId"] is None
    assert [c["id"] for c in dry["candidates"]] == [kept.id]
    real = client.post("/api/memory/summarize", json={"apiKeyId": "api-key-1"}).json()
    assert real["deletedCount"] == 1
    assert engine.get(real["summaryId"]).api_key_id == "api-key-1"  # type: ignore[union-attr]
    assert engine.get(other.id) is not None


def test_reindex_is_202(client: Any, engine: MemoryEngine) -> None:
    add(engine, "a", "one")
    add(engine, "a", "two")
    response = client.post("/api/memory/reindex", json={"force": True})
    assert response.status_code == 202
    assert response.json()["pending"] >= 2
    assert client.post("/api/memory/reindex").status_code == 202
    assert_error(client.post("/api/memory/reindex", json={"bogus": 1}), 400)


def test_every_api_route_needs_the_admin_token(client: Any) -> None:
    client.app.state.auth_throttle = AuthThrottle(burst=100_000)  # wrong tokens on purpose
    routes = [
        ("get", "/api/memory"),
        ("post", "/api/memory"),
        ("get", "/api/memory/x"),
        ("put", "/api/memory/x"),
        ("delete", "/api/memory/x"),
        ("get", "/api/memory/export"),
        ("post", "/api/memory/import"),
        ("get", "/api/memory/health"),
        ("post", "/api/memory/retrieve-preview"),
        ("get", "/api/memory/engine-status"),
        ("get", "/api/memory/embedding-providers"),
        ("post", "/api/memory/summarize"),
        ("post", "/api/memory/reindex"),
        ("get", "/api/settings/memory"),
        ("put", "/api/settings/memory"),
        ("get", "/api/settings/providers"),
        ("put", "/api/settings/providers"),
        ("get", "/api/keys"),
        ("post", "/api/keys"),
    ]
    for method, path in routes:
        for headers in (
            {"Authorization": ""},
            {"Authorization": "Bearer wrong"},
            {"Authorization": "Basic abc"},
        ):
            response = getattr(client, method)(path, headers=headers)
            assert_error(response, 401, "unauthorized")


def test_unknown_route_and_method_use_the_error_shape(client: Any) -> None:
    assert_error(client.get("/api/nope"), 404)
    assert_error(client.patch("/api/memory"), 405)


#: Owner ids the schemathesis fuzzer could send to the export (commit a50ba72): quotes,
#: parameter separators, path separators, non-ASCII, percent signs, DEL, C1 controls,
#: Unicode line separators and bidi overrides.
EXPORT_OWNERS = [
    'a"b',
    '";filename="evil.sh',
    "a;b=c",
    "a,b",
    "../../etc/passwd",
    "a\\b",
    "dir/sub",
    "café",
    "用户-🙂",
    "100%41",
    "a\x7fb",
    "a\x85b",  # NEL: latin-1 encodable, a line break to some parsers
    "a\u2028b",
    "x\u202egpj.exe",  # a bidi override disguising the extension
    " spaced ",
]


@pytest.mark.parametrize("owner", EXPORT_OWNERS)
def test_export_filename_is_safe_for_any_owner_id(
    client: Any, engine: MemoryEngine, owner: str
) -> None:
    """Regression (found by the fuzzer, fixed in a50ba72): the owner id went raw into the
    content-disposition header. Any owner id gives one well-formed header line: an ASCII
    ``filename`` with nothing to escape, and a ``filename*`` (RFC 5987) that decodes to the
    owner's name without path separators, quotes or control characters."""
    add(engine, owner, "User prefers tea")
    response = client.get("/api/memory/export", params={"apiKeyId": owner})
    assert response.status_code == 200, response.text
    exported = [json.loads(line) for line in response.text.strip("\n").split("\n")]
    assert [item["apiKeyId"] for item in exported] == [owner]

    values = response.headers.get_list("content-disposition")
    assert len(values) == 1
    disposition = values[0]
    assert disposition.isascii()
    assert disposition.isprintable()  # no CR/LF: one line
    match = re.fullmatch(
        r"attachment; filename=\"(?P<plain>[^\"\\]*)\"; filename\*=UTF-8''(?P<ext>[^\s;\"]*)",
        disposition,
    )
    assert match, disposition
    plain = match["plain"]
    assert re.fullmatch(r"memoryd-[A-Za-z0-9._-]+\.jsonl", plain), plain
    decoded = unquote(match["ext"], errors="strict")
    assert decoded.startswith("memoryd-")
    assert decoded.endswith(".jsonl")
    assert not set(decoded) & set('/\\"\r\n')
    unsafe = {"Cc", "Cf", "Zl", "Zp"}  # controls, bidi overrides, line separators
    assert not [c for c in decoded if unicodedata.category(c) in unsafe], repr(decoded)
    if owner.isalnum():  # nothing to replace: the UTF-8 name is the owner's own
        assert decoded == f"memoryd-{owner}.jsonl"


@pytest.mark.parametrize("owner", ["a\nb", "a\rb", "a\r\nContent-Type: text/html", "a\tb"])
def test_export_rejects_owner_ids_with_control_characters(client: Any, owner: str) -> None:
    """A line break in the owner id can never reach a header: it is a clear 400."""
    response = client.get("/api/memory/export", params={"apiKeyId": owner})
    error = assert_error(response, 400)
    assert "apiKeyId" in json.dumps(error)
    assert "content-disposition" not in response.headers


def test_create_without_a_key_or_type_derives_the_key_and_returns_it(client: Any) -> None:
    """Content is enough; the derived key comes back, and the same content
    again upserts the same memory instead of adding a copy."""
    first = client.post("/api/memory", json={"apiKeyId": "a", "content": "User likes tea"})
    assert first.status_code == 201, first.text
    memory = first.json()["memory"]
    assert memory["type"] == "factual"
    assert memory["key"].startswith("factual:user_likes_tea:")
    again = client.post("/api/memory", json={"apiKeyId": "a", "content": "User likes tea"})
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
