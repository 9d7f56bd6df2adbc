"""The extraction benchmark: loading the labelled set, the matching and
supersede rules, scoring through the real engine, speed, the LoCoMo observation
counts, `memoryd eval extraction` and the bench table. The last test holds the
acceptance thresholds on the real dev split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memoryd.cli import main
from memoryd.eval import extraction, labelled, observations, speed
from memoryd.eval.labelled import Negative, Pair, Positive

REPO = Path(__file__).resolve().parents[2]
DEV = REPO / "bench" / "data" / "extraction" / "dev"

# Phrasings any rules extractor stores
# (docs/design/extraction.md#what-the-rules-capture), so these tests do not pin one
# version.
POSITIVES = [
    {
        "id": "p-1",
        "kind": "likes",
        "text": "I prefer dark mode in every editor.",
        "expect": ["dark mode"],
    },
    {"id": "p-2", "kind": "likes", "text": "Hello there, nice day.", "expect": ["zebra"]},
    {"id": "p-3", "kind": "likes", "text": "I love green tea.", "expect": ["green tea", "zebra"]},
]
NEGATIVES = [
    {"id": "n-1", "kind": "pleasantry", "text": "Thanks, that was helpful!"},
    {"id": "n-2", "kind": "labelled wrong", "text": "I prefer dark mode."},
]
PAIRS = [
    {"id": "s-1", "kind": "likes", "mode": "replace", "first": "I love Python.",
     "second": "I hate Python.", "old": "", "new": "Python", "negated": True},
    {"id": "s-2", "kind": "likes", "mode": "replace", "first": "I prefer dark mode.",
     "second": "I prefer green tea.", "old": "dark mode", "new": "green tea"},
    {"id": "s-3", "kind": "likes", "mode": "add", "first": "I like tea.",
     "second": "I like coffee.", "old": "tea", "new": "coffee"},
    {"id": "s-4", "kind": "likes", "mode": "repeat", "first": "I like tea.",
     "second": "I like tea.", "old": "tea", "new": "tea"},
]  # fmt: skip


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    root = tmp_path / "labelled"
    for split in ("dev", "test"):
        _jsonl(root / split / "positives.jsonl", POSITIVES)
        _jsonl(root / split / "negatives.jsonl", NEGATIVES)
        _jsonl(root / split / "supersede.jsonl", PAIRS)
    return root


@pytest.fixture
def short_long_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two short "long" messages instead of 22 of 64 KiB, so a run takes a second."""
    original = speed.long_messages
    monkeypatch.setattr(speed, "long_messages", lambda texts: original(texts, chars=256)[:2])


def _pair(**kw: Any) -> Pair:
    fields = {"id": "x", "kind": "k", "mode": "replace", "first": "a", "second": "b"}
    return Pair(**(fields | {"old": "", "new": ""} | kw))


# -- matching and judging (pure) -----------------------------------------------------------


def test_a_value_is_a_substring_ignoring_case_apostrophes_and_spacing() -> None:
    assert extraction.contains("User's name is O\u2019Brien", "o'brien")
    assert extraction.contains("User likes   dark\nmode", "Dark Mode")
    assert extraction.contains("User uses C++ daily", "c++")
    assert extraction.contains("User's wedding is on June 14th", "June 14")
    assert not extraction.contains("User likes dark themes", "dark mode")
    assert not extraction.contains("User lives in Madrid", "Lyon")
    assert not extraction.contains("anything", "  ")


@pytest.mark.parametrize(
    ("content", "negative"),
    [
        ("User doesn't like sushi anymore", True),
        ("User can\u2019t stand sushi", True),
        ("User has gone off sushi, cannot stand it", True),
        ("User no longer eats meat", True),
        ("User dislikes sushi", True),
        ("User hates Python", True),
        ("User is not vegan", True),
        ("User likes sushi", False),
        ("User loves Python", False),
        ("User notes everything", False),  # "not" only as a word
    ],
)
def test_negative_statements(content: str, negative: bool) -> None:
    assert extraction.is_negative(content) is negative


def test_replace_is_right_only_when_the_new_value_is_current_and_the_old_is_not() -> None:
    pair = _pair(old="Madrid", new="Lyon")
    assert extraction.judge_pair(pair, ["User lives in Lyon"]) is None
    assert extraction.judge_pair(pair, ["User lives in Lyon", "User lives in Madrid"]) == (
        "the old value is still current"
    )
    assert extraction.judge_pair(pair, ["User lives in Madrid"]) == "the new value is not stored"
    # the old value inside the new one ("Python" in "Python 3") is not the old memory
    python3 = _pair(old="Python", new="Python 3")
    assert extraction.judge_pair(python3, ["User uses Python 3"]) is None


def test_negated_replace_needs_a_negative_memory_and_no_positive_one() -> None:
    pair = _pair(new="sushi", negated=True)
    assert extraction.judge_pair(pair, ["User doesn't like sushi"]) is None
    assert extraction.judge_pair(pair, ["User loves sushi"]) == (
        "no current negative memory holds the value"
    )
    assert extraction.judge_pair(pair, ["User loves sushi", "User can't stand sushi"]) == (
        "a current memory still holds the value positively"
    )
    assert extraction.judge_pair(pair, []) == "no current negative memory holds the value"
    with_old = _pair(old="sushi", new="sashimi", negated=True)
    assert extraction.judge_pair(with_old, ["User hates sashimi", "User loves sushi"]) == (
        "the old value is still current"
    )
    assert extraction.judge_pair(with_old, ["User hates sashimi", "User hates sushi"]) is None


def test_add_needs_both_and_repeat_exactly_one() -> None:
    add = _pair(mode="add", old="Spanish", new="Portuguese")
    assert extraction.judge_pair(add, ["User speaks Spanish", "User speaks Portuguese"]) is None
    assert extraction.judge_pair(add, ["User speaks Spanish and Portuguese"]) is None
    assert extraction.judge_pair(add, ["User speaks Portuguese"]) == (
        "the old value is no longer current"
    )
    assert extraction.judge_pair(add, ["User speaks Spanish"]) == "the new value is not stored"
    repeat = _pair(mode="repeat", old="Madrid", new="Madrid")
    assert extraction.judge_pair(repeat, ["User lives in Madrid"]) is None
    assert extraction.judge_pair(repeat, ["User lives in Madrid"] * 2) == (
        "2 current memories hold it"
    )
    assert extraction.judge_pair(repeat, []) == "0 current memories hold it"


def test_summary_counts_items_values_kinds_and_modes() -> None:
    p1 = Positive("p1", "pets", "t", ("Rex", "dog"))
    p2 = Positive("p2", "work", "t", ("Bosch",))
    n1, n2 = Negative("n1", "question", "q"), Negative("n2", "code", "c")
    r, a = _pair(id="r", old="a", new="b"), _pair(id="a", mode="add", old="a", new="b")
    scored = [
        extraction.Scored("dev", p1, False, ("User has a dog",), ("dog",)),
        extraction.Scored("dev", p2, True, ("User works at Bosch",), ("Bosch",)),
        extraction.Scored("dev", n1, True, ()),
        extraction.Scored("dev", n2, False, ("User x",)),
        extraction.Scored("dev", r, True, ("b",)),
        extraction.Scored("dev", a, False, ("b",), why="the old value is no longer current"),
    ]
    s = extraction.summarize(scored)
    groups = {"per_kind": None, "per_register": None, "per_attribute": None}
    assert s["positives"] | groups == {
        "n": 2, "recalled": 1, "recall": 0.5, "values": 3, "values_found": 2,
        "value_recall": 0.666667, **groups,
    }  # fmt: skip
    assert s["positives"]["per_register"]["unlabelled"]["n"] == 2
    assert s["positives"]["per_kind"]["pets"]["value_recall"] == 0.5
    assert s["negatives"]["false_memory_rate"] == 0.5
    assert s["negatives"]["per_kind"]["code"]["false_memories"] == 1
    assert s["supersede"]["per_mode"] == {
        "add": {"n": 1, "correct": 0, "accuracy": 0.0},
        "replace": {"n": 1, "correct": 1, "accuracy": 1.0},
    }
    assert s["misses"]["positives"] == [
        {"split": "dev", "id": "p1", "kind": "pets", "text": "t", "missing": ["Rex"],
         "stored": ["User has a dog"]}
    ]  # fmt: skip
    assert s["misses"]["supersede"][0]["why"] == "the old value is no longer current"
    assert extraction.meets(s) == {
        "recall": False,
        "false_memory_rate": False,
        "supersede_accuracy": False,
    }
    assert extraction.meets(extraction.summarize([])) == dict.fromkeys(
        ("recall", "false_memory_rate", "supersede_accuracy")
    )


# -- loading -------------------------------------------------------------------------------


def test_loading_splits_and_a_split_folder(data_dir: Path) -> None:
    both = labelled.load_labelled(data_dir)
    assert [s.name for s in both] == ["dev", "test"]
    dev = both[0]
    assert dev.positives[2] == Positive("p-3", "likes", "I love green tea.", ("green tea", "zebra"))
    assert dev.pairs[0].negated
    assert not dev.pairs[1].negated
    assert len(dev.texts()) == len(POSITIVES) + len(NEGATIVES)
    assert [s.name for s in labelled.load_labelled(data_dir, "test")] == ["test"]
    assert [s.name for s in labelled.load_labelled(data_dir / "dev")] == ["dev"]


@pytest.mark.parametrize(
    ("file", "line", "message"),
    [
        ("positives.jsonl", "{nope", "positives.jsonl:2: not JSON"),
        ("positives.jsonl", '{"id": "p-1", "kind": "k", "text": "t", "expect": ["v"]}',
         "duplicate id 'p-1'"),
        ("positives.jsonl", '{"id": "p-9", "kind": "k", "text": "t", "expect": []}',
         "'expect' must be a list"),
        ("negatives.jsonl", '{"id": "n-9", "kind": "k"}', "'text' must be a non-empty string"),
        ("supersede.jsonl", '{"id": "s-9", "kind": "k", "mode": "swap", "first": "a", '
         '"second": "b", "old": "a", "new": "b"}', "'mode' must be one of"),
        ("supersede.jsonl", '{"id": "s-9", "kind": "k", "mode": "replace", "first": "a", '
         '"second": "b", "old": "", "new": "b"}', "'old' must be a non-empty string"),
    ],
)  # fmt: skip
def test_a_malformed_line_names_the_file_and_line(
    tmp_path: Path, file: str, line: str, message: str
) -> None:
    first = {
        "positives.jsonl": POSITIVES[0],
        "negatives.jsonl": NEGATIVES[0],
        "supersede.jsonl": PAIRS[0],
    }[file]
    split = tmp_path / "dev"
    split.mkdir()
    (split / file).write_text(json.dumps(first) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(labelled.ExtractionDataError, match="dev/" + file.split(".")[0]) as exc:
        labelled.load_labelled(tmp_path)
    assert message in str(exc.value)


def test_a_folder_without_splits_is_an_error(tmp_path: Path) -> None:
    splits = "/".join(labelled.SPLITS)
    with pytest.raises(labelled.ExtractionDataError, match=f"no {splits} folder"):
        labelled.load_labelled(tmp_path)
    with pytest.raises(labelled.ExtractionDataError, match="not a directory"):
        labelled.load_labelled(tmp_path / "missing")


def test_the_default_data_dir_is_looked_for_under_the_current_directory(tmp_path: Path) -> None:
    here = tmp_path / "bench" / "data" / "extraction"
    here.mkdir(parents=True)
    assert labelled.default_data_dir(tmp_path) == here


# -- through the engine --------------------------------------------------------------------


def test_scoring_through_the_real_engine(data_dir: Path, short_long_messages: None) -> None:
    splits = labelled.load_labelled(data_dir, "dev")
    result = extraction.run_eval(splits, speed_seconds=0)
    assert set(result["splits"]) == {"dev"}  # one split: no pooled "all"
    assert result["extraction_mode"] == "rules"
    dev = result["splits"]["dev"]
    pos = dev["positives"]
    assert (pos["n"], pos["recalled"], pos["values"], pos["values_found"]) == (3, 1, 4, 2)
    missed = {m["id"]: m for m in dev["misses"]["positives"]}
    assert set(missed) == {"p-2", "p-3"}
    assert missed["p-2"]["stored"] == []
    assert missed["p-3"]["missing"] == ["zebra"]
    assert any("green tea" in s.lower() for s in missed["p-3"]["stored"])
    assert dev["negatives"]["false_memories"] == 1
    assert [m["id"] for m in dev["misses"]["negatives"]] == ["n-2"]
    assert dev["negatives"]["per_kind"]["pleasantry"]["false_memories"] == 0
    sup = dev["supersede"]
    assert sup["per_mode"] == {
        "add": {"n": 1, "correct": 1, "accuracy": 1.0},
        "repeat": {"n": 1, "correct": 1, "accuracy": 1.0},
        "replace": {"n": 1, "correct": 0, "accuracy": 0.0},  # preferences accumulate
        "replace negated": {"n": 1, "correct": 1, "accuracy": 1.0},
    }
    assert dev["misses"]["supersede"][0]["why"] == "the old value is still current"
    assert result["engine"]["messages"] == 3 + 2 + 2 * 4
    assert result["throughput"]["calls"] == 5  # one pass over the typical messages
    assert result["throughput"]["messages_per_s"] > 0
    assert "locomo_observations" not in result


# -- speed ---------------------------------------------------------------------------------


def test_throughput_runs_whole_passes_until_the_time_is_up() -> None:
    out = speed.throughput(["I like tea.", "Thanks!"], seconds=0.05)
    assert out["calls"] == 2 * out["passes"]
    assert out["elapsed_s"] >= 0.05
    assert out["messages_per_s"] == pytest.approx(out["calls"] / out["elapsed_s"], rel=0.01)
    assert speed.throughput([], 1)["messages_per_s"] is None


def test_long_messages_are_all_64_kib_and_the_worst_is_reported() -> None:
    inputs = speed.long_messages(["I like tea.", "Thanks!"])
    assert len(inputs) > 15
    assert {len(text) for _, text in inputs} == {speed.LONG_CHARS}
    assert "I like tea.\nThanks!\nI like tea.\nThanks!\n" in inputs[0][1]
    assert "Thanks! I like tea. Thanks! I like" in inputs[1][1]
    assert speed.long_messages([])[0][0] == '"I " repeated'
    worst = speed.worst_case([("short", "I like tea."), ("long", "I like tea. " * 2000)], 1)
    assert [r["input"] for r in worst["inputs"]] == ["short", "long"]
    assert worst["worst_input"] == "long"
    assert worst["worst_ms"] == max(r["ms"] for r in worst["inputs"])
    assert worst["timed_out"] == []


def test_a_runaway_long_message_is_stopped_and_the_rest_still_measured() -> None:
    text = speed.long_messages(["I like tea and coffee.", "Thanks!"])[0][1]
    inputs = [("a", text), ("b", text), ("c", "I like tea.")]
    # "a" may wait for the child to start; "b" cannot be done in 0.1 ms; "c" gets a new child
    out = speed.worst_case(inputs, repeats=1, limit_s=0.0001)
    assert [r["timed_out"] for r in out["inputs"]] == [False, True, False]
    assert out["timed_out"] == ["b"]
    assert out["inputs"][1]["ms"] == pytest.approx(0.1)
    assert out["inputs"][0]["ms"] > 0


# -- LoCoMo observations -------------------------------------------------------------------


def _turn(dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": "A", "dia_id": dia_id, "text": text}


CONVERSATION: dict[str, Any] = {
    "speaker_a": "A",
    "speaker_b": "B",
    "session_1": [
        _turn("D1:1", "I like tea."),
        _turn("D1:2", "How are you?"),
        _turn("D1:3", "I like the beach."),
    ],
    "session_2": [_turn("D2:1", "We went hiking."), _turn("D2:2", "I like hiking too.")],
    "session_1_observation": {
        "A": [["A likes tea.", "D1:1"], ["A asked.", ["D1:2"]]],
        "B": [["B hikes.", "D2:1, D9:9"]],
    },
    "session_2_observation": {"A": [["A hikes.", "D2:1; D2:1"]]},
    "qa": "never read",
}


def _likes(text: str) -> list[str]:
    return ["a fact"] if "I like" in text else []


def test_observation_counts_on_a_synthetic_conversation(tmp_path: Path) -> None:
    (tmp_path / "conv-1.json").write_text(json.dumps(CONVERSATION), encoding="utf-8")
    (tmp_path / "README.md").write_text("not a conversation", encoding="utf-8")
    conversations = observations.load(tmp_path)
    assert conversations[0].observed == {"D1:1", "D1:2", "D2:1", "D9:9"}
    out = observations.count(conversations, extract=_likes)
    assert {k: out[k] for k in ("turns", "observed_turns", "observed_with_facts", "recall")} == {
        "turns": 5,
        "observed_turns": 3,  # D1:1, D1:2, D2:1
        "observed_with_facts": 1,  # D1:1
        "recall": 0.333333,
    }
    assert (out["unobserved_turns"], out["unobserved_with_facts"]) == (2, 2)
    assert out["false_positive_rate"] == 1.0
    assert out["unknown_ids"] == {"n": 1, "examples": ["conv-1:D9:9"]}
    assert [e["dia_id"] for e in out["examples"]["observed_no_fact"]] == [
        "conv-1:D1:2",
        "conv-1:D2:1",
    ]
    real = observations.count(conversations)  # the real extractor runs on each turn
    assert real["turns"] == 5
    assert real["observed_turns"] == 3


def test_the_locomo10_nesting_is_read_too(tmp_path: Path) -> None:
    nested = {
        "sample_id": "conv-x",
        "conversation": {k: v for k, v in CONVERSATION.items() if "observation" not in k},
        "observation": {k: v for k, v in CONVERSATION.items() if "observation" in k},
    }
    (tmp_path / "locomo10.json").write_text(json.dumps([nested, nested]), encoding="utf-8")
    conversations = observations.load(tmp_path)
    assert [c.name for c in conversations] == ["conv-x", "conv-x"]
    assert conversations[0].observed == {"D1:1", "D1:2", "D2:1", "D9:9"}
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(observations.ObservationDataError, match="no LoCoMo conversation"):
        observations.load(empty)
    (empty / "x.json").write_text('{"qa": []}', encoding="utf-8")
    with pytest.raises(observations.ObservationDataError, match="x: no session_N"):
        observations.load(empty)


# -- the CLI -------------------------------------------------------------------------------


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["eval", "extraction", *args], catch_exceptions=False)


def test_cli_json_on_stdout_with_locomo(
    data_dir: Path, tmp_path: Path, short_long_messages: None
) -> None:
    locomo_dir = tmp_path / "locomo"
    locomo_dir.mkdir()
    (locomo_dir / "conv-1.json").write_text(json.dumps(CONVERSATION), encoding="utf-8")
    result = _cli("--data", str(data_dir), "--speed-seconds", "0", "--locomo", str(locomo_dir),
                  "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["data"] == str(data_dir)
    assert set(out["splits"]) == {"dev", "test", "all"}
    assert out["splits"]["all"]["positives"]["n"] == 2 * len(POSITIVES)
    assert (
        out["splits"]["all"]["positives"]["recalled"]
        == 2 * out["splits"]["dev"]["positives"]["recalled"]
    )
    assert out["splits"]["dev"]["meets"]["recall"] is False
    assert out["locomo_observations"]["turns"] == 5
    assert out["targets"]["recall"] == 0.9
    assert "scoring dev" in result.stderr


def test_cli_table_misses_and_a_json_file(
    data_dir: Path, tmp_path: Path, short_long_messages: None
) -> None:
    target = tmp_path / "out.json"
    result = _cli("--data", str(data_dir), "--split", "test", "--speed-seconds", "0",
                  "--show-misses", "1", "--json", str(target))  # fmt: skip
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "\ntest " in text
    assert "\ndev " not in text
    assert "targets: recall >= 0.90, false memories <= 0.02, supersede >= 0.90" in text
    assert "misses, positives (first 1 of 2):" in text
    assert "test/p-2 [likes] 'Hello there, nice day.'; missing zebra; stored: (nothing)" in text
    assert "misses, negatives (first 1 of 1):" in text
    assert "messages/s (extract_facts, one thread" in text
    assert "64 KiB messages: worst" in text
    saved = json.loads(target.read_text())
    assert set(saved["splits"]) == {"test"}
    assert saved["splits"]["test"]["negatives"]["false_memories"] == 1


def test_cli_data_errors_are_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _cli("--data", str(tmp_path))
    assert result.exit_code == 1
    assert "error: data:" in result.stderr
    assert f"no {'/'.join(labelled.SPLITS)} folder" in result.stderr
    monkeypatch.setattr(labelled, "default_data_dir", lambda cwd=None: None)
    result = _cli()
    assert result.exit_code == 1
    assert "pass --data DIR" in result.stderr
    assert "Traceback" not in result.output


# -- the bench stage -------------------------------------------------------------------------


def test_bench_rows_and_the_generated_table(data_dir: Path, short_long_messages: None) -> None:
    from bench import extraction as stage
    from bench.tables import extraction_section

    result = stage.run(data_dir, None, speed_seconds=0)
    rows = stage.rows(result)
    assert [r["split"] for r in rows] == ["dev", "test", "all"]
    assert rows[0]["recall"] == pytest.approx(1 / 3, abs=1e-3)
    assert rows[0]["false_memory_rate"] == 0.5
    assert rows[0]["supersede_accuracy"] == 0.75
    assert rows[0]["supersede_replace negated"] == 1.0
    text = extraction_section({"extraction": result})
    assert "### Extraction" in text
    assert "| dev | 3 | 0.333 (not met) | 0.500 | 2 | 0.500 (not met) | 4 | 0.750 (not met) |" in (
        text
    )
    assert "| likes | 0.333 | 0.333 | 0.333 |" in text
    assert "messages/s**" in text
    assert "LoCoMo" not in text
    assert "throughput:" in stage.summary(result)


# -- acceptance -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("split", ["dev", "dev2"])
def test_acceptance_issue_15_the_dev_splits_meet_the_targets(
    short_long_messages: None, split: str
) -> None:
    """ACCEPTANCE: the rules extractor on the development splits reaches recall >= 0.90,
    false memories <= 0.05 and supersede >= 0.90. A rule change that loses a
    labelled statement fails here; never weaken the thresholds, grow the data."""
    assert (DEV.parent / split).is_dir()
    result = extraction.run_eval(labelled.load_labelled(DEV.parent, split), speed_seconds=0)
    dev = result["splits"][split]
    figures = (
        dev["positives"]["recall"],
        dev["negatives"]["false_memory_rate"],
        dev["supersede"]["accuracy"],
    )
    said = f"recall, false memories, supersede: {figures}"
    assert dev["positives"]["n"] >= 100
    assert figures[0] >= 0.90, said
    assert figures[1] <= 0.05, said
    assert figures[2] >= 0.90, said
