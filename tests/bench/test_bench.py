"""``python -m bench`` at a tiny size: results JSON with the commit, the machine and
percentiles, a PNG plot and the generated Markdown region; the peers stage's handoff,
scoring, memoryd baselines and table on a tiny synthetic conversation, without the
peer's venv."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.core.scoring import estimate_tokens
from memoryd.eval import locomo

REPO = Path(__file__).resolve().parents[2]

from bench import peers  # noqa: E402
from bench.tables import peers_section  # noqa: E402


@pytest.mark.slow
def test_bench_tiny_run_writes_results_plot_and_tables(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    results, plots, docs = tmp_path / "results", tmp_path / "plots", tmp_path / "bench.md"
    docs.write_text(
        "# Benchmarks\n\nhand-written\n\n<!-- bench:start -->\nold\n<!-- bench:end -->\n\ntail\n"
    )
    command = [sys.executable, "-m", "bench", "--sizes", "200", "--queries", "20"]
    command += ["--only", "retrieval,plots,tables", "--results", str(results)]
    command += ["--plots", str(plots), "--docs", str(docs)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    payload = json.loads((results / "retrieval.json").read_text())
    machine = payload["machine"]
    assert len(machine["commit"]) == 40
    assert isinstance(machine["dirty"], bool)
    for field in ("cpu_model", "cores", "ram_mb", "python", "platform", "load_average_start"):
        assert machine[field], field
    assert len(machine["load_average_start"]) == 3
    rows = payload["rows"]
    assert {"recent", "hybrid"} <= {r["strategy"] for r in rows}
    for row in rows:
        assert row["memories"] == 200
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"]

    ingest = json.loads((results / "ingest.json").read_text())["rows"]
    keyword = next(r for r in ingest if r["embedder"] == "keyword-only")
    assert keyword["ingest_per_s"] > 0
    assert keyword["rss_after_mb"] > 0
    assert keyword["rss_mb_per_100k"] is None  # not scaled from a corpus this small

    png = plots / "latency-vs-size.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written\n")
    assert text.endswith("<!-- bench:end -->\n\ntail\n")
    assert "\nold\n" not in text
    assert "| 200 | keyword-only | recent |" in text
    assert "(plots/latency-vs-size.png)" in text
    assert machine["commit"][:10] in text


# -- the peers stage, without the peer's venv ------------------------------------------

DAY = "1:56 pm on 8 May, 2023"
FILLER = [
    "the weather was lovely at the beach today",
    "my sister visited and we cooked lasagna together",
    "work has been busy with the quarterly report",
    "I finally finished reading that mystery novel",
    "we watched the fireworks from the rooftop",
    "the garden tomatoes are almost ripe now",
    "my car needed new tyres after the trip",
    "the museum had a great exhibit on ancient maps",
]


def tiny_conversation() -> locomo.Conversation:
    texts = [
        ("Ann", "I adopted a puppy and named him Biscuit"),
        ("Bob", "Congratulations! I started taking violin lessons"),
    ]
    texts += [("Ann" if i % 2 else "Bob", t) for i, t in enumerate(FILLER)]
    turns = tuple(
        locomo.Turn(f"D1:{i + 1}", 1, speaker, text, None, DAY)
        for i, (speaker, text) in enumerate(texts)
    )
    questions = (
        locomo.Question("What name did Ann give her puppy?", 4, ("D1:1",)),
        locomo.Question("Which instrument is Bob taking lessons for?", 1, ("D1:2",)),
        locomo.Question("Adversarial: what is Biscuit's breed?", 5, ("D1:1",)),  # not asked
        locomo.Question("When did Ann adopt the puppy?", 2, ()),  # no evidence: not asked
    )
    return locomo.Conversation("tiny", ("Ann", "Bob"), turns, questions)


def test_peers_handoff_carries_no_evidence_and_scoring_uses_the_harness(
    tmp_path: Path,
) -> None:
    conv = tiny_conversation()
    handoff = tmp_path / "handoff.jsonl"
    asked, contents = peers.write_handoff([conv], locomo.turn_with_context, handoff)

    lines = [json.loads(line) for line in handoff.read_text().splitlines()]
    assert len(lines) == 1
    (line,) = lines
    assert line["owner"] == "locomo:tiny"
    assert [t["dia_id"] for t in line["turns"]] == [t.dia_id for t in conv.turns]
    # stored exactly as memoryd stores them (the harness's default turn context)
    assert line["turns"][1]["content"] == locomo.turn_with_context(conv, conv.turns[1])
    assert "I adopted a puppy" in line["turns"][1]["content"]  # the turn it answers
    assert "8 May, 2023" in line["turns"][0]["content"]
    # only categories 1-4 with evidence are asked, and the gold stays here
    assert [q["qid"] for q in line["questions"]] == ["tiny:0", "tiny:1"]
    assert all(set(q) == {"qid", "question", "category"} for q in line["questions"])
    assert set(asked) == {"tiny:0", "tiny:1"}
    assert asked["tiny:0"][1].evidence == ("D1:1",)
    assert contents["locomo:tiny"]["D1:2"] == line["turns"][1]["content"]

    answers = [
        {"kind": "info", "python": "3.11"},
        {"kind": "answer", "qid": "tiny:0", "ranked": ["D1:1", "D1:3"], "ms": 2.0},
        # the evidence at rank 6: out of the top 5, inside the top 10
        {"kind": "answer", "qid": "tiny:1", "ranked": [f"D1:{i}" for i in (3, 4, 5, 6, 7, 2)]},
        {"kind": "done", "ingest_s": 0.1},
    ]
    answers[2]["ms"] = 6.0
    result = peers.score_answers(asked, answers, contents).to_dict()
    assert result["n"] == 2
    assert result["recall"] == {"5": 0.5, "10": 1.0, "25": 1.0}
    assert result["per_category"]["4"]["recall"]["5"] == 1.0
    assert result["per_category"]["1"]["recall"]["5"] == 0.0
    text = contents["locomo:tiny"]
    want = estimate_tokens(text["D1:1"]) + estimate_tokens(text["D1:3"])
    want += sum(estimate_tokens(text[f"D1:{i}"]) for i in (3, 4, 5, 6, 7))
    assert result["tokens"]["5"] == round(want / 2, 1)
    assert result["latency_ms"]["p50"] == 4.0
    assert result["served_by"] == {"peer": 2}

    with pytest.raises(RuntimeError, match="answered 1 of 2"):
        peers.score_answers(asked, answers[:2], contents)


def test_peers_memoryd_bm25_baseline_and_the_table(tmp_path: Path) -> None:
    conv = tiny_conversation()
    seen: list[str] = []
    out = peers.memoryd_group(
        [conv],
        locomo.no_embedder(),
        locomo.turn_content,
        [(peers.BM25, "hybrid", {"vec_top_k": 25}), ("dense, no embedder", "semantic", {})],
        seen.append,
    )
    bm25 = out[peers.BM25]
    # no embedder: hybrid degrades to the FTS5 OR-query, which finds both answers first
    assert bm25["served_by"] == {"keyword": 2}
    assert bm25["recall"]["5"] == 1.0
    assert bm25["embedding_model"] is None
    assert bm25["vec_top_k"] == 25
    # one ingest for every system of the group, each asked on the same data
    assert [m for m in seen if "ingested" in m] == [m for m in seen if "10 turns ingested" in m]
    assert len([m for m in seen if "ingested" in m]) == 1
    assert out["dense, no embedder"]["n"] == 2
    assert out["dense, no embedder"]["served_by"] == {"keyword": 2}  # and says so

    # one result per system, ratios against the reference, rendered for the docs
    ref = {**bm25, "recall": {"5": 0.5, "10": 0.8, "25": 1.0}}
    ref["latency_ms"] = {"p50": 10.0, "p95": 20.0}
    peer = {**ref, "recall": {"5": 0.25, "10": 0.4, "25": 0.9}}
    peer["latency_ms"] = {"p50": 30.0, "p95": 10.0}
    row = peers.table_row("peer", "none", peer, ref)
    assert (row["R@5_ratio"], row["R@10_ratio"]) == (0.5, 0.5)
    assert (row["p50_ratio"], row["p95_ratio"]) == (3.0, 0.5)
    rows = [peers.table_row("ref", "none", ref, ref), row]
    payload = {
        "rows": rows,
        "protocol": {"conversations": ["tiny"], "turns": 10, "questions": 2, "k": [5, 10, 25]},
        "notes": ["only its keyword mode ran"],
        "systems": {"peer": {"peer": {"versions": {"agentrecall-db": "0.2.0"}}}},
    }
    text = peers_section(payload)
    assert "| R@5 | R@10 | R@25 |" in text
    assert "| peer | none | 0.250 | 0.400 | 0.900 |" in text
    assert "| 0.50 | 0.50 | 3.00 | 0.50 |" in text
    assert "agentrecall-db 0.2.0" in text
    assert text.endswith("- only its keyword mode ran")


def test_peer_modes_fall_back_to_keyword_without_sqlite_extensions(tmp_path: Path) -> None:
    files = (tmp_path / "model.onnx", tmp_path / "tokenizer.json")
    full = peers.peer_modes(True, files, tmp_path / "static")
    assert [(m[1], m[4]) for m in full] == [
        ("minilm", "per-conversation"),
        ("minilm", "shared"),
        ("static", "per-conversation"),
        ("none", "per-conversation"),
    ]
    assert full[0][3] == ["--onnx", str(files[0]), "--tokenizer", str(files[1])]
    assert [m[1] for m in peers.peer_modes(False, files, tmp_path / "static")] == ["none"]


def test_peer_driver_embeds_like_memoryd() -> None:
    """The driver's MiniLM (run in the peer's venv) gives memoryd's own vectors."""
    pytest.importorskip("onnxruntime")
    from bench.peer_agentrecall import MiniLMOnnx
    from memoryd.embedding import local_model_files
    from memoryd.embedding.onnx_minilm import MiniLMEmbedder

    files = local_model_files()
    if files is None:
        pytest.skip("the local MiniLM is not installed")
    texts = ["I adopted a puppy", "Which instrument is Bob taking lessons for?", "ok"]
    ours = MiniLMEmbedder(files=files).embed_batch(texts)
    theirs = MiniLMOnnx(*files).embed(texts)
    for a, b in zip(ours, theirs, strict=True):
        assert len(b) == 384
        assert float(sum(x * y for x, y in zip(a, b, strict=True))) > 0.9999


def test_stores_stage_runs_both_stores_side_by_side(tmp_path: Path) -> None:
    """``python -m bench --only stores``: SQLite and PostgreSQL (a throwaway server)
    on the same corpus and queries, one row per store and size."""
    pytest.importorskip("psycopg")
    results = tmp_path / "results"
    command = [sys.executable, "-m", "bench", "--only", "stores", "--store-sizes", "60"]
    command += ["--results", str(results)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = json.loads((results / "stores.json").read_text())["rows"]
    assert [r["store"] for r in rows] == ["sqlite", "postgresql"]
    for row in rows:
        assert row["memories_per_owner"] == 60
        assert row["ingest_per_s"] > 0
        assert 0 < row["hybrid_p50_ms"] <= row["hybrid_p95_ms"]


def test_each_conversation_is_scored_at_the_point_the_others_chose() -> None:
    """``bench.fusion_cv.analyse`` (leave-one-conversation-out): each conversation's
    figure comes from the point the other conversations chose, never from its own best."""
    from bench.fusion_cv import analyse, parse_grid
    from memoryd.eval.metrics import StrategyResult

    def tally(hits: list[float]) -> StrategyResult:
        result = StrategyResult((5, 10, 25))
        for hit in hits:
            ranked = ["D1:1"] if hit else ["D9:9"]
            result.overall.add(ranked, [1], ["D1:1"])
        return result

    off, on = parse_grid("subject_weight=0,1")
    assert off == (("subject_weight", 0.0),)
    assert parse_grid("fusion=score,zscore;k=1") == [
        (("fusion", "score"), ("k", 1.0)),
        (("fusion", "zscore"), ("k", 1.0)),
    ]
    # weight 1 is best for "a" alone; weight 0 is best for "b" and "c" together
    tallies = {
        off: {"a": tally([0, 0]), "b": tally([1, 1]), "c": tally([1, 1])},
        on: {"a": tally([1, 1]), "b": tally([0, 0]), "c": tally([1, 1])},
    }
    rows, cv = analyse({"grid": [off, on], "tallies": tallies, "names": ["a", "b", "c"]})
    assert [r["point"] for r in rows] == ["subject_weight=0", "subject_weight=1"]
    chosen = {h["conversation"]: h["chosen"] for h in cv["held_out"]}
    assert chosen["a"] == "subject_weight=0"  # b and c prefer 0: a is scored at 0, its worst
    held = {h["conversation"]: h["R@10"] for h in cv["held_out"]}
    assert held["a"] == 0.0
    assert (chosen["b"], held["b"]) == ("subject_weight=1", 0.0)  # a and c prefer 1
    assert (chosen["c"], held["c"]) == ("subject_weight=0", 1.0)  # a tie: the first point


def test_the_held_out_set_loads_and_every_evidence_turn_exists() -> None:
    """``bench/data/heldout``: written for memoryd as a check that tuning on LoCoMo
    generalizes; a broken evidence id would silently lower every figure."""
    conversations = locomo.load_conversations(REPO / "bench" / "data" / "heldout")
    assert len(conversations) == 3
    for conv in conversations:
        turns = {t.dia_id for t in conv.turns}
        asked = locomo.evaluated(conv)
        assert len(asked) == len(conv.questions) >= 25
        assert {q.category for q in asked} == {1, 2, 3, 4}
        for question in asked:
            assert set(question.evidence) <= turns, (conv.name, question.question)
        assert len({t.session for t in conv.turns}) >= 5


def test_resident_stage_finds_the_copy_exact_on_a_tiny_conversation() -> None:
    """The stage behind the claim that resident search trades no recall: both searches
    on one ingest, the top 10 compared question by question."""
    from bench import resident
    from memoryd.embedding import EmbeddingResolution
    from tests import embedders  # noqa: F401  (registers the hash embedder)

    hashed = locomo.EvalEmbedder("hash", EmbeddingResolution("hash", "hash-32", 32, "test"))
    rows, info = resident.compare([tiny_conversation()], hashed, lambda _m: None)
    assert [(r["strategy"], r["search"]) for r in rows] == [
        ("semantic", "sql"),
        ("semantic", "resident"),
        ("hybrid", "sql"),
        ("hybrid", "resident"),
    ]
    for sql_row, copy_row in (rows[0:2], rows[2:4]):
        assert copy_row["identical_top10"] == 1.0
        assert copy_row["R@10"] == sql_row["R@10"]
    assert info["resident"]["searches"] >= 4  # two questions, two strategies: served
