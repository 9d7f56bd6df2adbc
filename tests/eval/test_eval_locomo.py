"""`memoryd eval locomo` on a tiny synthetic conversation in the LoCoMo JSON shape."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memoryd.cli import main
from memoryd.embedding import EmbeddingResolution
from memoryd.eval import locomo

VIOLIN = "Great! I finally bought a violin for my lessons."


def _turn(speaker: str, dia_id: str, text: str, **extra: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


CONVERSATION: dict[str, Any] = {
    "speaker_a": "Alice",
    "speaker_b": "Bob",
    "session_1_date_time": "1:00 pm on 3 May, 2023",
    "session_1": [
        _turn("Alice", "D1:1", "Hi Bob! How was your weekend?"),
        _turn("Bob", "D1:2", VIOLIN),
        _turn(
            "Alice",
            "D1:3",
            "Nice, I started pottery classes downtown.",
            blip_caption="a photo of a clay bowl on a wheel",
            query="clay bowl",
        ),
        _turn("Bob", "D1:4", "Pottery sounds relaxing."),
    ],
    "session_2_date_time": "9:30 am on 20 May, 2023",
    "session_2": [
        _turn("Bob", "D2:1", "I moved to Lisbon last month."),
        _turn("Alice", "D2:2", "Lisbon is beautiful, enjoy the trams!"),
        _turn("Bob", "D2:3", "Thanks, the neighbourhood is quiet."),
    ],
    "session_3_date_time": "6:00 pm on 2 June, 2023",
    "session_3": [
        _turn("Alice", "D3:1", "My sister Clara visits in June."),
        _turn("Bob", "D3:2", "Say hi to Clara for me."),
        _turn("Alice", "D3:3", "Will do. She loves hiking."),
    ],
    "session_1_summary": "not an input to retrieval",
    "qa": [
        {"question": "When did Bob buy a violin?", "answer": "May 2023", "evidence": ["D1:2"],
         "category": 4},
        {"question": "Which city did Bob move to?", "answer": "Lisbon", "evidence": ["D2:1"],
         "category": 2},
        {"question": "What does Alice's sister Clara love?", "answer": "hiking",
         "evidence": ["D3:1; D3:3"], "category": 1},
        # D9:99 names no turn: a miss, reported under missing_evidence
        {"question": "What did Alice make in her pottery classes?", "answer": "a bowl",
         "evidence": ["D1:3", "D9:99"], "category": 3},
        {"question": "Would Bob enjoy a concert?", "answer": "yes", "evidence": [],
         "category": 3},
        {"question": "What did Bob say about his violin teacher?", "evidence": ["D1:2"],
         "category": 5, "adversarial_answer": "strict"},
    ],
}  # fmt: skip


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "conv-1.json").write_text(json.dumps(CONVERSATION), encoding="utf-8")
    (folder / "README.md").write_text("not a conversation", encoding="utf-8")
    return folder


def _run(args: list[str]) -> Any:
    """The CLI on bare turns (``--turn-context none``) unless a test asks otherwise, so
    token counts can be checked by hand."""
    if "--turn-context" not in args:
        args = [*args, "--turn-context", "none"]
    result = CliRunner().invoke(main, ["eval", "locomo", *args], catch_exceptions=False)
    return result


def test_json_shape_recall_by_hand_and_category_5_skipped(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_dir = tmp_path / "user-data"
    monkeypatch.setenv("MEMORYD_DATA_DIR", str(user_dir))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    used: list[Path] = []
    original = locomo.open_eval_engine

    def spy(path: Path, *args: Any, **kwargs: Any) -> Any:
        used.append(path)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(locomo, "open_eval_engine", spy)

    result = _run(["--data", str(data_dir), "--embedder", "none", "--k", "1,5,25", "--json"])

    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) >= {"strategies", "embedder", "elapsed_s"}
    assert out["embedder"] == "none"
    assert set(out["strategies"]) == {"recent", "semantic", "hybrid"}
    assert out["questions"] == {
        "evaluated": 4,
        "skipped_category_5": 1,
        "skipped_no_evidence": 1,
    }
    assert out["missing_evidence"]["ids"] == 1
    assert out["missing_evidence"]["examples"] == ["conv-1:D9:99"]
    assert out["turns"] == 10
    for strategy in out["strategies"].values():
        assert strategy["n"] == 4
        assert set(strategy["recall"]) == set(strategy["tokens"]) == {"1", "5", "25"}
        assert set(strategy["per_category"]) == {"1", "2", "3", "4"}
        assert all(c["n"] == 1 for c in strategy["per_category"].values())

    hybrid = out["strategies"]["hybrid"]
    assert hybrid["served_by"] == {"keyword": 4}  # no embedder: the keyword (FTS5) tier
    single_hop = hybrid["per_category"]["4"]
    assert single_hop["recall"]["1"] == 1.0  # "violin" is in that turn only: rank 1
    assert single_hop["session_recall"] == {"1": 1.0, "3": 1.0, "5": 1.0, "10": 1.0}
    assert set(hybrid["session_recall"]) == {"1", "3", "5", "10"}
    assert single_hop["tokens"]["1"] == math.ceil(len(f"Bob: {VIOLIN}") / 4)
    open_domain = hybrid["per_category"]["3"]
    assert open_domain["recall"] == {"1": 0.5, "5": 0.5, "25": 0.5}  # D9:99 never found
    multi_hop = hybrid["per_category"]["1"]  # "D3:1; D3:3" is read as two ids
    assert multi_hop["recall"]["25"] == 1.0
    overall = hybrid["recall"]
    assert overall["25"] == pytest.approx((1 + 1 + 1 + 0.5) / 4, abs=1e-4)

    assert "asking" in result.stderr  # the progress bar goes to stderr, not stdout
    assert not user_dir.exists()  # never the user's data dir
    assert len(used) == 1
    assert used[0].is_relative_to(scratch)
    assert not list(scratch.iterdir())  # the temporary dir is gone


def test_vector_strategies_use_the_vector_tier(data_dir: Path) -> None:
    import tests.embedders as embedders  # noqa: F401  (registers the deterministic "hash" source)

    conversations = locomo.load_conversations(data_dir)
    source = locomo.EvalEmbedder("hash", EmbeddingResolution("hash", "hash-64", 64, "test"))
    progressed: list[int] = []
    out = locomo.run_eval(
        conversations, source, ks=(1, 3), progress=progressed.append, log=lambda _m: None
    )
    assert sum(progressed) == 4 * 3
    assert out["pending_vectors"] == 0  # drained: every turn had its vector
    assert out["embedding_model"] == "hash-64"
    assert out["config"]["vec_top_k"] == locomo.VEC_TOP_K
    assert out["strategies"]["semantic"]["served_by"] == {"semantic": 4}
    assert out["strategies"]["hybrid"]["served_by"] == {"hybrid": 4}
    assert out["strategies"]["recent"]["served_by"] == {"exact": 4}


def test_text_table_and_one_strategy(data_dir: Path) -> None:
    result = _run(["--data", str(data_dir), "--embedder", "none", "--strategy", "hybrid"])
    assert result.exit_code == 0, result.output
    assert "R@5" in result.stdout
    assert "R@25" in result.stdout
    assert "hybrid" in result.stdout
    assert "recent" not in result.stdout
    assert "4 single-hop" in result.stdout


@pytest.mark.parametrize("ks", ["0,5", "5,abc", "101", ""])
def test_bad_k_is_a_usage_error(data_dir: Path, ks: str) -> None:
    result = _run(["--data", str(data_dir), "--embedder", "none", "--k", ks])
    assert result.exit_code == 2
    assert "--k" in result.stderr


def test_a_folder_without_conversations_is_a_clean_error(tmp_path: Path) -> None:
    result = _run(["--data", str(tmp_path), "--embedder", "none", "--json"])
    assert result.exit_code == 1
    assert "no LoCoMo conversation" in result.stderr
    assert not result.stdout


def test_loader_and_metrics() -> None:
    conversation = locomo.parse_conversation(CONVERSATION, "conv-x")
    assert conversation.speakers == ("Alice", "Bob")
    assert [t.session for t in conversation.turns] == [1] * 4 + [2] * 3 + [3] * 3
    pottery = conversation.turns[2]
    assert pottery.date_time == "1:00 pm on 3 May, 2023"
    assert locomo.turn_content(conversation, pottery) == (
        "Alice: Nice, I started pottery classes downtown. "
        "[shared a photo of a clay bowl on a wheel]"
    )
    assert locomo.parse_evidence(["D8:6; D9:17", "D8:6", " "]) == ("D8:6", "D9:17")
    assert locomo.recall_at(["a", "b", "c"], ["c", "x"], 2) == 0.0
    assert locomo.recall_at(["a", "b", "c"], ["c", "x"], 3) == 0.5
    assert [q.category for q in locomo.evaluated(conversation)] == [4, 2, 1, 3]


def test_session_recall_maps_the_top_ten_to_distinct_sessions() -> None:
    from memoryd.eval.metrics import session_hits

    ranked = ["D1:1", "D1:2", "D2:5", "D1:3", "D3:1", "", "D4:2"]
    # sessions in order: D1, D2, D3, D4 (repeats and ids naming nothing dropped)
    assert session_hits(ranked, ["D3:9"]) == {1: 0.0, 3: 1.0, 5: 1.0, 10: 1.0}
    assert session_hits(ranked, ["D1:7", "D9:1"]) == {1: 1.0, 3: 1.0, 5: 1.0, 10: 1.0}
    assert session_hits(ranked, ["D9:1"]) == {1: 0.0, 3: 0.0, 5: 0.0, 10: 0.0}
    # only the top 10 turns count, however many were ranked
    late = [f"D1:{i}" for i in range(10)] + ["D5:1"]
    assert session_hits(late, ["D5:3"])[10] == 0.0


def test_candidates_per_leg_can_be_set(data_dir: Path) -> None:
    args = ["--data", str(data_dir), "--embedder", "none", "--strategy", "hybrid"]
    result = _run([*args, "--vec-top-k", "2", "--k", "5", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["config"]["vec_top_k"] == 2
    # the keyword tier returns at most 2 candidates, so at most 2 turns count
    conversation = locomo.parse_conversation(CONVERSATION, "conv-1")
    sizes = sorted(
        math.ceil(len(locomo.turn_content(conversation, t)) / 4) for t in conversation.turns
    )
    assert out["strategies"]["hybrid"]["tokens"]["5"] <= sum(sizes[-2:])
    assert out["strategies"]["hybrid"]["per_category"]["4"]["tokens"]["5"] > 0


def test_a_missing_static_model_is_reported_when_not_built(tmp_path: Path) -> None:
    with pytest.raises(locomo.EvalDataError, match="no static model"):
        locomo.static_embedder(tmp_path / "nothing", build=False)


def test_default_turn_context_adds_the_date_and_the_turn_it_answers(data_dir: Path) -> None:
    conversation = locomo.load_conversations(data_dir)[0]
    turns = conversation.turns
    second = next(t for i, t in enumerate(turns) if i > 0 and turns[i - 1].session == t.session)
    previous = turns[turns.index(second) - 1]
    text = locomo.turn_with_context(conversation, second)
    assert text.startswith(f"[{locomo.session_day(second)}] ")
    assert locomo.turn_content(conversation, second) in text
    assert f"(replying to: {previous.text}" in text
    assert f"{previous.speaker}:" not in text.split("(replying to:")[1]  # one name per turn
    first_of_session = next(
        t for i, t in enumerate(turns) if i == 0 or turns[i - 1].session != t.session
    )
    assert "replying to" not in locomo.turn_with_context(conversation, first_of_session)
    result = CliRunner().invoke(
        main, ["eval", "locomo", "--data", str(data_dir), "--embedder", "none", "--json"]
    )
    assert json.loads(result.stdout)["config"]["turn_context"] == "date+previous"
