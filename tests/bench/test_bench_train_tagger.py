"""The tagger's training labels: every occurrence of a value is B then I, the rest O;
fact-free messages are all O; an update pair gives each message the value it holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import train_tagger
from bench.train_tagger import BEGIN, INSIDE, OUT, examples, labels


def test_a_value_is_labelled_wherever_it_occurs() -> None:
    text = "my dog Rex. Rex is 3"
    offsets = [(0, 2), (3, 6), (7, 10), (10, 11), (12, 15), (16, 18), (19, 20)]
    got = labels(offsets, text, ["Rex"]).tolist()
    assert got == [OUT, OUT, BEGIN, OUT, BEGIN, OUT, OUT]
    pieces = [(0, 3), (4, 7), (7, 10)]  # "pen", "##ici" ...: one value over pieces
    assert labels(pieces, "use penicilin", ["penicilin"]).tolist() == [OUT, BEGIN, INSIDE]


def test_examples_read_every_file_of_a_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    split = tmp_path / "s"
    split.mkdir()
    (split / "positives.jsonl").write_text(
        '{"text": "I live in Oslo", "expect": ["Oslo"],'
        ' "facts": [{"value": "Oslo", "attribute": "home"}]}\n'
    )
    (split / "negatives.jsonl").write_text('{"text": "What is the capital of Norway?"}\n')
    (split / "supersede.jsonl").write_text(
        '{"mode": "replace", "first": "I live in Oslo", "second": "Moved to Bergen",'
        ' "old": "Oslo", "new": "Bergen", "attribute": "home"}\n'
        '{"mode": "retract", "first": "I play chess", "second": "forget the chess",'
        ' "old": "chess", "new": "chess"}\n'
    )
    monkeypatch.setattr(train_tagger, "DATA", tmp_path)
    assert examples("s") == [
        ("I live in Oslo", ["Oslo"], "positive"),
        ("What is the capital of Norway?", [], "negative"),
        ("I live in Oslo", ["Oslo"], "pair"),
        ("Moved to Bergen", ["Bergen"], "pair"),
        ("I play chess", ["chess"], "pair"),
    ]
    assert train_tagger.attributed("s") == [
        ("I live in Oslo", [("Oslo", "home")]),
        ("I live in Oslo", [("Oslo", "home")]),
        ("Moved to Bergen", [("Bergen", "home")]),
    ]
