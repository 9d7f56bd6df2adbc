"""Retrieval on the keyword path (no embedding source yet), on a real engine and DB.

Ported from the reference's retrieval, retrieval-semantic/-hybrid and preview tests,
adapted to docs/design/retrieval.md: sanitized FTS queries (B1/B2), filters on every path, the
skip-not-stop budget walk, abstention, access bumps and the preview resolution.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memoryd.engine import MemoryEngine
from memoryd.errors import ValidationError
from memoryd.models import GLOBAL_OWNER, Hit, utcnow
from memoryd.storage.base import Filter
from memoryd.storage.sqlite.dialect import fts_search
from tests.conftest import RecordingConnection, add

KEYWORD_STRATEGIES = ("semantic", "hybrid")
ALL_STRATEGIES = ("exact", "semantic", "hybrid")


def contents(hits: list[Hit]) -> list[str]:
    return [h.memory.content for h in hits]


def seq_of(engine: MemoryEngine, memory_id: str) -> int:
    rows = list(
        engine.store.db.read().execute("SELECT seq FROM memories WHERE id = ?", (memory_id,))
    )
    return int(rows[0][0])


def add_typescript_rows(engine: MemoryEngine, owner: str = "k") -> None:
    add(engine, owner, "Python intro: a gentle start for beginners")
    add(engine, owner, "TypeScript overview: a typed superset of JavaScript")
    add(
        engine,
        owner,
        "The TypeScript compiler checks TypeScript types before TypeScript emits code",
    )


# -- the keyword path ----------------------------------------------------------------


@pytest.mark.parametrize("strategy", KEYWORD_STRATEGIES)
def test_keyword_path_ranks_by_fts(engine: MemoryEngine, strategy: str) -> None:
    add_typescript_rows(engine)
    hits = engine.retrieve("k", "TypeScript", strategy=strategy, max_tokens=8000)
    assert len(hits) >= 2
    assert "TypeScript compiler" in hits[0].memory.content
    assert all("TypeScript" in c for c in contents(hits))
    assert {h.tier for h in hits} == {"fts5"}
    assert all(h.fts_score is not None and h.fts_score > 0 for h in hits)
    assert len({h.memory.id for h in hits}) == len(hits)

    preview = engine.preview("k", "TypeScript", strategy=strategy)
    assert preview.resolution.fallback_reason
    assert preview.resolution.strategy_used != strategy
    assert preview.resolution.strategy_used == "keyword"
    assert [h.memory.id for h in preview.hits] == [h.memory.id for h in hits]


HOSTILE_QUERIES = (
    "what is C++?",
    "what's my favorite editor",
    '"quoted',
    "a OR",
    "NEAR(",
    "*",
    "-x",
    "Johnson & Johnson",
    "dash-separated-query",
    "parens(test)",
    "asterisk*wildcard",
    "single'quote",
)


@pytest.fixture
def hostile_corpus(engine: MemoryEngine) -> MemoryEngine:
    for text in (
        "I love C++ programming",
        "My favorite editor is vim",
        'She said "quoted" words twice',
        "Johnson and Johnson make soap",
        "a dash separated query example",
        "parens around a test",
        "asterisk and wildcard symbols",
        "a single quote in text",
    ):
        add(engine, "h", text)
    return engine


@pytest.mark.parametrize("strategy", ALL_STRATEGIES)
@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_never_raise(
    hostile_corpus: MemoryEngine, strategy: str, query: str
) -> None:
    hits = hostile_corpus.retrieve("h", query, strategy=strategy)
    assert isinstance(hits, list)
    assert all(h.memory.api_key_id == "h" for h in hits)
    preview = hostile_corpus.preview("h", query, strategy=strategy)
    assert isinstance(preview.hits, list)


@pytest.mark.parametrize("strategy", KEYWORD_STRATEGIES)
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what is C++?", "I love C++ programming"),
        ("what's my favorite editor", "My favorite editor is vim"),
        ('"quoted', 'She said "quoted" words twice'),
        ("Johnson & Johnson", "Johnson and Johnson make soap"),
        ("dash-separated-query", "a dash separated query example"),
        ("parens(test)", "parens around a test"),
        ("asterisk*wildcard", "asterisk and wildcard symbols"),
    ],
)
def test_hostile_queries_keep_their_fts_results(
    hostile_corpus: MemoryEngine, strategy: str, query: str, expected: str
) -> None:
    hits = hostile_corpus.retrieve("h", query, strategy=strategy)
    found = [h for h in hits if h.memory.content == expected]
    assert found, contents(hits)
    # Served by FTS5 itself (B2), not rescued by the keyword-scoring fallback.
    assert found[0].fts_score is not None
    assert hits[0].memory.content == expected


def test_new_memory_is_immediately_in_fts(engine: MemoryEngine) -> None:
    memory = add(engine, "n", "a zebracorn was seen at noon")
    rows = list(
        engine.store.db.read().execute(
            "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", ('"zebracorn"',)
        )
    )
    assert [r[0] for r in rows] == [seq_of(engine, memory.id)]
    preview = engine.preview("n", "zebracorn", strategy="hybrid")
    assert [h.memory.id for h in preview.hits] == [memory.id]
    assert preview.hits[0].fts_score is not None
    assert "keyword scoring" not in (preview.resolution.fallback_reason or "")


@pytest.mark.parametrize("strategy", KEYWORD_STRATEGIES)
def test_keyword_scoring_fallback_finds_substrings(engine: MemoryEngine, strategy: str) -> None:
    add_typescript_rows(engine)
    preview = engine.preview("k", "script", strategy=strategy)
    found = contents(preview.hits)
    assert len(found) == 2
    assert all("TypeScript" in c for c in found)
    assert {h.tier for h in preview.hits} == {"fts5"}
    assert all(h.fts_score is None and h.score > 0 for h in preview.hits)
    assert "keyword scoring" in (preview.resolution.fallback_reason or "")
    assert len(engine.retrieve("k", "script", strategy=strategy)) == 2


@pytest.mark.parametrize("strategy", KEYWORD_STRATEGIES)
def test_keyword_scoring_fallback_ignores_little_words(engine: MemoryEngine, strategy: str) -> None:
    """ "a", "in" and "to" are substrings of nearly every memory: an unrelated question
    brought back where the user lives."""
    add(engine, "k", "User moved to Porto last month")
    for query in ("How do I sort a list in Python?", "Can you write a haiku about autumn?"):
        assert engine.retrieve("k", query, strategy=strategy) == []
    assert contents(engine.retrieve("k", "porto", strategy=strategy)) == [
        "User moved to Porto last month"
    ]


@pytest.mark.parametrize("strategy", ["semantic", "hybrid"])  # recent ignores the words
def test_zero_scores_are_dropped(engine: MemoryEngine, strategy: str) -> None:
    add_typescript_rows(engine)
    assert engine.retrieve("k", "zzzz", strategy=strategy) == []


# -- exact -----------------------------------------------------------------------------


def test_exact_without_query_is_newest_first(engine: MemoryEngine) -> None:
    now = utcnow()
    old = add(engine, "e", "oldest note", created_at=now - timedelta(days=3))
    mid = add(engine, "e", "middle note", created_at=now - timedelta(days=2))
    new = add(engine, "e", "newest note", created_at=now - timedelta(days=1))
    hits = engine.retrieve("e", strategy="exact")
    assert [h.memory.id for h in hits] == [new.id, mid.id, old.id]
    assert {h.tier for h in hits} == {"recent"}


def test_recent_with_a_query_is_still_the_newest(engine: MemoryEngine) -> None:
    """What the gateway sends under ``recent``: a query does not rank or
    drop anything, so a preview with one shows the same."""
    now = utcnow()
    once = add(engine, "e", "apple and banana", created_at=now - timedelta(hours=3))
    thrice = add(engine, "e", "apple apple apple pie", created_at=now - timedelta(hours=2))
    cherry = add(engine, "e", "cherry only", created_at=now - timedelta(hours=1))
    hits = engine.retrieve("e", "apple", strategy="exact")
    assert [h.memory.id for h in hits] == [cherry.id, thrice.id, once.id]
    preview = engine.preview("e", "apple", strategy="recent")
    assert [h.memory.id for h in preview.hits] == [cherry.id, thrice.id, once.id]


# -- filters on every path -------------------------------------------------------------

PATHS = [
    ("exact", None),
    ("exact", "orbit"),
    ("semantic", "orbit"),
    ("hybrid", "orbit"),
    ("hybrid", "rbit"),  # FTS finds nothing: keyword scoring of recent memories
]


def visible(
    engine: MemoryEngine, owner: str, strategy: str, query: str | None, **kw: Any
) -> set[str]:
    hits = engine.retrieve(owner, query, strategy=strategy, max_tokens=16000, limit=100, **kw)
    return {h.memory.id for h in hits}


@pytest.mark.parametrize(("strategy", "query"), PATHS)
def test_expired_never_returned(engine: MemoryEngine, strategy: str, query: str | None) -> None:
    now = utcnow()
    live = add(engine, "f", "orbit live")
    add(engine, "f", "orbit expired", expires_at=now - timedelta(minutes=1))
    future = add(engine, "f", "orbit expires later", expires_at=now + timedelta(days=1))
    assert visible(engine, "f", strategy, query) == {live.id, future.id}


@pytest.mark.parametrize(("strategy", "query"), PATHS)
def test_retention_window(engine: MemoryEngine, strategy: str, query: str | None) -> None:
    """Memories are long-term by default; retention is opt-in, and a preview
    says how many memories it (or expiry) keeps out."""
    now = utcnow()
    fresh = add(engine, "f", "orbit fresh")
    old = add(engine, "f", "orbit old", created_at=now - timedelta(days=40))
    ancient = add(engine, "f", "orbit ancient", created_at=now - timedelta(days=200))
    assert visible(engine, "f", strategy, query) == {fresh.id, old.id, ancient.id}
    engine.settings.update({"retentionDays": 30})
    assert visible(engine, "f", strategy, query) == {fresh.id}
    assert engine.preview("f", query, strategy=strategy).resolution.hidden == {
        "expired": 0,
        "retention": 2,
    }
    engine.settings.update({"retentionDays": 60})
    assert visible(engine, "f", strategy, query) == {fresh.id, old.id}
    engine.settings.update({"retentionDays": 0})
    assert engine.settings.get().retention_days is None
    assert visible(engine, "f", strategy, query) == {fresh.id, old.id, ancient.id}


@pytest.mark.parametrize(("strategy", "query"), PATHS)
def test_scopes(engine: MemoryEngine, strategy: str, query: str | None) -> None:
    s1 = {add(engine, "f", f"orbit s1 {i}", session_id="s1").id for i in range(2)}
    s2 = {add(engine, "f", "orbit s2", session_id="s2").id}
    none = {add(engine, "f", "orbit no session").id}
    shared = {add(engine, GLOBAL_OWNER, "orbit shared pool").id}
    add(engine, "other", "orbit other owner", session_id="s1")

    assert visible(engine, "f", strategy, query, scope="session", session_id="s1") == s1
    # session scope without a session id: the session-less memories only, never all
    assert visible(engine, "f", strategy, query, scope="session") == none
    assert visible(engine, "f", strategy, query, scope="apiKey") == s1 | s2 | none
    assert visible(engine, "f", strategy, query, scope="global") == s1 | s2 | none | shared


# -- the budget walk ---------------------------------------------------------------------


def test_budget_caps_total_tokens(engine: MemoryEngine) -> None:
    for i in range(10):
        add(engine, "b", f"{i:02d}" + "x" * 98)  # 100 chars = 25 tokens
    hits = engine.retrieve("b", strategy="exact", max_tokens=60)
    assert [h.tokens for h in hits] == [25, 25]
    assert sum(h.tokens for h in hits) <= 60


def test_budget_skips_what_does_not_fit(engine: MemoryEngine) -> None:
    now = utcnow()
    old_small = add(engine, "b", "o" * 100, created_at=now - timedelta(hours=3))
    add(engine, "b", "B" * 400, created_at=now - timedelta(hours=2))  # 100 tokens
    new_small = add(engine, "b", "n" * 100, created_at=now - timedelta(hours=1))
    hits = engine.retrieve("b", strategy="exact", max_tokens=60)
    assert [h.memory.id for h in hits] == [new_small.id, old_small.id]


def test_budget_oversize_first_item(engine: MemoryEngine) -> None:
    big = add(engine, "within", "w" * 400)  # 100 tokens <= 2 x 60
    add(engine, "beyond", "v" * 800)  # 200 tokens > 2 x 60
    hits = engine.retrieve("within", strategy="exact", max_tokens=60)
    assert [(h.memory.id, h.tokens) for h in hits] == [(big.id, 100)]
    assert engine.retrieve("beyond", strategy="exact", max_tokens=60) == []


def test_budget_is_clamped(engine: MemoryEngine) -> None:
    add(engine, "b", "abcd")
    low = engine.preview("b", strategy="exact", max_tokens=0)
    assert low.budget_max_tokens == 1
    assert [h.tokens for h in low.hits] == [1]
    assert engine.preview("b", strategy="exact", max_tokens=-5).budget_max_tokens == 1
    assert engine.preview("b", strategy="exact", max_tokens=20000).budget_max_tokens == 16000


def test_limit_is_respected(engine: MemoryEngine) -> None:
    for i in range(10):
        add(engine, "b", f"limit row {i}")
    assert len(engine.retrieve("b", strategy="exact", max_tokens=10000, limit=3)) == 3
    assert len(engine.retrieve("b", "limit", strategy="hybrid", max_tokens=10000, limit=3)) == 3
    assert len(engine.preview("b", strategy="exact", max_tokens=10000, limit=3).hits) == 3


def test_max_tokens_zero_disables_retrieval(engine: MemoryEngine) -> None:
    add(engine, "b", "note")  # 1 token: it would fit even a budget clamped to 1
    assert engine.retrieve("b", strategy="exact")
    engine.settings.update({"maxTokens": 0})
    assert engine.retrieve("b", strategy="exact") == []
    assert engine.retrieve("b", "note", strategy="hybrid") == []
    assert engine.retrieve("b", strategy="exact", max_tokens=100)  # explicit budget wins


def test_min_score_abstains(engine: MemoryEngine) -> None:
    add_typescript_rows(engine)
    assert engine.retrieve("k", "TypeScript", strategy="hybrid")
    engine.settings.update({"minScore": 0.99})
    assert engine.retrieve("k", "TypeScript", strategy="hybrid") == []
    assert engine.retrieve("k", strategy="exact") == []
    preview = engine.preview("k", "TypeScript", strategy="hybrid")
    assert preview.hits == []
    assert "minScore" in (preview.resolution.fallback_reason or "")
    engine.settings.update({"minScore": None})
    assert len(engine.retrieve("k", "TypeScript", strategy="hybrid")) == 2


# -- access bookkeeping ----------------------------------------------------------------


def access_of(engine: MemoryEngine, memory_id: str) -> tuple[int, str | None]:
    rows = engine.store.db.read().execute(
        "SELECT access_count, last_accessed_at FROM memories WHERE id = ?", (memory_id,)
    )
    count, last = next(iter(rows))
    return int(count), last


def test_retrieve_bumps_access_and_preview_does_not(engine: MemoryEngine) -> None:
    hit_me = add(engine, "a", "TypeScript is great")
    miss_me = add(engine, "a", "Python is fine")
    engine.preview("a", "TypeScript", strategy="hybrid")
    engine.drain()
    assert access_of(engine, hit_me.id) == (0, None)

    hits = engine.retrieve("a", "TypeScript", strategy="hybrid")
    assert [h.memory.id for h in hits] == [hit_me.id]
    engine.drain()
    count, last = access_of(engine, hit_me.id)
    assert count == 1
    assert last is not None
    assert access_of(engine, miss_me.id) == (0, None)
    fresh = engine.get(hit_me.id)
    assert fresh is not None
    assert fresh.access_count == 1
    assert fresh.last_accessed_at is not None

    engine.retrieve("a", "TypeScript", strategy="semantic")
    engine.drain()
    assert access_of(engine, hit_me.id)[0] == 2


# -- preview ---------------------------------------------------------------------------


def test_preview_shape(engine: MemoryEngine) -> None:
    add_typescript_rows(engine)
    data = engine.preview("k", "TypeScript", strategy="hybrid").to_dict()
    assert set(data) == {
        "memories",
        "resolution",
        "totalTokensUsed",
        "budgetMaxTokens",
        "dropped",
        "profile",
    }
    assert data["profile"] == {
        "memories": [],
        "totalTokensUsed": 0,
        "budgetMaxTokens": 150,
        "dropped": [],
        "topics": [],
    }
    assert data["budgetMaxTokens"] == 2000
    assert len(data["memories"]) == 2
    for item in data["memories"]:
        assert set(item) == {
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
        assert isinstance(item["score"], float)
        assert isinstance(item["tokens"], int)
        assert item["tier"] in {"fts5", "vector", "hybrid", "qdrant", "recent"}
    assert data["totalTokensUsed"] == sum(i["tokens"] for i in data["memories"])
    resolution = data["resolution"]
    assert set(resolution) == {
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
    assert resolution["rerankApplied"] is False
    assert resolution["fallbackReason"]


def test_preview_empty_db(engine: MemoryEngine) -> None:
    for strategy in ALL_STRATEGIES:
        data = engine.preview("nobody", "anything", strategy=strategy).to_dict()
        assert data["memories"] == []
        assert data["totalTokensUsed"] == 0
        assert data["budgetMaxTokens"] == 2000


def test_admin_preview_sees_every_owner(engine: MemoryEngine) -> None:
    ids = {add(engine, owner, f"orbit of {owner}").id for owner in ("a", "b", GLOBAL_OWNER)}
    assert {h.memory.id for h in engine.preview(None, strategy="exact").hits} == ids
    assert {h.memory.id for h in engine.preview(None, "orbit", strategy="hybrid").hits} == ids
    assert {h.memory.id for h in engine.preview(None, "rbit", strategy="semantic").hits} == ids


# -- names -------------------------------------------------------------------------------


def test_recent_is_exact(engine: MemoryEngine) -> None:
    for i in range(3):
        add(engine, "r", f"note {i}", created_at=utcnow() - timedelta(hours=i + 1))
    recent = engine.preview("r", strategy="recent")
    exact = engine.preview("r", strategy="exact")
    assert [h.memory.id for h in recent.hits] == [h.memory.id for h in exact.hits]
    assert len(recent.hits) == 3
    assert recent.resolution.strategy_used == "exact"


def test_unknown_strategy_and_scope_are_rejected(engine: MemoryEngine) -> None:
    add(engine, "r", "note")
    with pytest.raises(ValidationError):
        engine.retrieve("r", "note", strategy="fuzzy")
    with pytest.raises(ValidationError):
        engine.preview("r", "note", strategy="keyword")
    with pytest.raises(ValidationError):
        engine.retrieve("r", "note", scope="everyone")
    with pytest.raises(ValidationError):
        engine.preview("r", "note", scope="tenant")


# -- the FTS query plan ------------------------------------------------------------------


@pytest.mark.parametrize("best_first", [True, False], ids=["index-first", "join"])
def test_fts_search_plan_drives_from_the_fts_index(
    engine: MemoryEngine, best_first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways a keyword search runs: the index's best matches first, then the filter
    on those by rowid; or (too few of those pass) the join, the FTS table the outer
    loop. Neither walks the owner's rows."""
    import memoryd.storage.sqlite.dialect as dialect

    if not best_first:
        monkeypatch.setattr(dialect, "_best_first", lambda *args: None)
    for i in range(30):
        add(engine, f"owner{i % 3}", f"plan row {i} about orbit")
    conn = engine.store.db.read()
    flt = Filter(owners=("owner1",), now=utcnow(), created_after=utcnow() - timedelta(days=30))
    recorder = RecordingConnection(conn)
    found = fts_search(recorder, '"orbit"', flt, 20)
    assert len(found) == 10
    assert {h.memory.api_key_id for h in found} == {"owner1"}

    if best_first:
        ranking = recorder.statements[-2][0]
        assert "memory_fts MATCH" in ranking
        assert "memories" not in ranking  # the index alone ranks
        plan = recorder.plan(-2)
        assert "VIRTUAL TABLE INDEX" in plan[0], plan
        assert not [p for p in plan if " m " in f" {p} "], plan
        plan = recorder.plan(-1)
        memory_steps = [p for p in plan if p.split()[1:2] == ["m"]]
        assert len(memory_steps) == 1, plan
        assert "INTEGER PRIMARY KEY" in memory_steps[0], plan
        return
    assert "memory_fts MATCH" in recorder.statements[-1][0]
    plan = recorder.plan()
    fts_steps = [p for p in plan if "memory_fts" in p]
    memory_steps = [p for p in plan if p.split()[1:2] == ["m"]]
    assert len(fts_steps) == 1, plan
    assert "VIRTUAL TABLE INDEX" in fts_steps[0]
    assert len(memory_steps) == 1, plan
    assert "INTEGER PRIMARY KEY" in memory_steps[0] or "rowid" in memory_steps[0], plan
    assert not memory_steps[0].startswith("SCAN"), plan
    # The FTS table is the outer loop: it comes first in the plan.
    assert plan.index(fts_steps[0]) < plan.index(memory_steps[0]), plan
