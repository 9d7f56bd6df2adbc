"""The labelled extraction set: one folder per split of JSON-lines files.

``root/<split>/`` (``dev``, ``dev2``, ``test``) holds up to three files (field notes in
``bench/data/extraction/README.md``); a folder that holds the files itself is read as
one split named after it. A missing file is an empty list; a malformed line is an
``ExtractionDataError`` naming the file and line.

- ``positives.jsonl``: ``{"id", "kind", "text", "expect": [value, ...]}``
- ``negatives.jsonl``: ``{"id", "kind", "text"}`` (fact-free or must-not-store)
- ``supersede.jsonl``: ``{"id", "kind", "mode": "replace"|"add"|"repeat"|"retract",
  "first", "second", "old", "new", "negated"?}``
- every line may carry ``"register"`` (how it is written) and positives and pairs
  ``"attribute"`` (``core.extraction.attributes``), for the per-register and
  per-attribute tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPLITS = (
    "dev",
    "dev2",
    "dev3",
    "dev4",
    "dev5",
    "dev6",
    "dev7",
    "dev8",
    "test",
    "test2",
    "test4",
    "test6",
    "test7",
    "test8",
)
MODES = ("replace", "add", "repeat", "retract")
FILES = ("positives.jsonl", "negatives.jsonl", "supersede.jsonl")


class ExtractionDataError(ValueError):
    """The labelled directory or one of its files is not extraction benchmark data."""


@dataclass(frozen=True, slots=True)
class Positive:
    id: str
    kind: str
    text: str
    expect: tuple[str, ...]
    register: str = ""  # how it is written: "typed_fast", "uk", "non_native", ... (dev3+)
    attribute: str = ""  # the schema attribute of its main fact (dev3+)


@dataclass(frozen=True, slots=True)
class Negative:
    id: str
    kind: str
    text: str
    register: str = ""


@dataclass(frozen=True, slots=True)
class Pair:
    """A supersede pair; ``old`` may be empty when ``negated`` (the value is the same)."""

    id: str
    kind: str
    mode: str
    first: str
    second: str
    old: str
    new: str
    negated: bool = False
    register: str = ""
    attribute: str = ""


@dataclass(frozen=True, slots=True)
class LabelledSplit:
    name: str
    positives: tuple[Positive, ...]
    negatives: tuple[Negative, ...]
    pairs: tuple[Pair, ...]

    def texts(self) -> list[str]:
        """The typical messages: every positive and negative text."""
        return [p.text for p in self.positives] + [n.text for n in self.negatives]


# -- loading -------------------------------------------------------------------------------


def _lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.exists():
        return []
    out: list[tuple[int, dict[str, Any]]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExtractionDataError(f"{path}: cannot read: {exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ExtractionDataError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise ExtractionDataError(f"{path}:{number}: not a JSON object")
        out.append((number, row))
    return out


def _text(row: dict[str, Any], name: str, where: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ExtractionDataError(f"{where}: '{name}' must be a non-empty string")
    return value


def _parse(path: Path, parse: Callable[[dict[str, Any], str], Any]) -> tuple[Any, ...]:
    items = []
    seen: set[str] = set()
    for number, row in _lines(path):
        where = f"{path}:{number}"
        item = parse(row, where)
        if item.id in seen:
            raise ExtractionDataError(f"{where}: duplicate id {item.id!r}")
        seen.add(item.id)
        items.append(item)
    return tuple(items)


def _positive(row: dict[str, Any], where: str) -> Positive:
    expect = row.get("expect")
    if (
        not isinstance(expect, list)
        or not expect
        or not all(isinstance(v, str) and v.strip() for v in expect)
    ):
        raise ExtractionDataError(f"{where}: 'expect' must be a list of non-empty strings")
    ident, kind, text = (_text(row, n, where) for n in ("id", "kind", "text"))
    return Positive(ident, kind, text, tuple(expect), *_labels(row, where))


def _labels(row: dict[str, Any], where: str) -> tuple[str, str]:
    """The optional ``register`` and ``attribute`` labels ("" when absent)."""
    out = []
    for name in ("register", "attribute"):
        value = row.get(name, "")
        if not isinstance(value, str):
            raise ExtractionDataError(f"{where}: '{name}' must be a string")
        out.append(value)
    return out[0], out[1]


def _negative(row: dict[str, Any], where: str) -> Negative:
    ident, kind, text = (_text(row, n, where) for n in ("id", "kind", "text"))
    return Negative(ident, kind, text, _labels(row, where)[0])


def _pair(row: dict[str, Any], where: str) -> Pair:
    ident, kind, mode, first, second, new = (
        _text(row, n, where) for n in ("id", "kind", "mode", "first", "second", "new")
    )
    if mode not in MODES:
        raise ExtractionDataError(f"{where}: 'mode' must be one of {', '.join(MODES)}")
    negated = row.get("negated", False)
    if not isinstance(negated, bool):
        raise ExtractionDataError(f"{where}: 'negated' must be true or false")
    old = row.get("old", "")
    if not isinstance(old, str) or (not old.strip() and not negated):
        raise ExtractionDataError(f"{where}: 'old' must be a non-empty string unless negated")
    return Pair(ident, kind, mode, first, second, old, new, negated, *_labels(row, where))


def load_split(directory: Path, name: str | None = None) -> LabelledSplit:
    """One split: the three files of ``directory`` (a missing file is an empty list)."""
    directory = Path(directory)
    if not any((directory / f).is_file() for f in FILES):
        raise ExtractionDataError(f"{directory}: none of {', '.join(FILES)}")
    return LabelledSplit(
        name or directory.name,
        _parse(directory / "positives.jsonl", _positive),
        _parse(directory / "negatives.jsonl", _negative),
        _parse(directory / "supersede.jsonl", _pair),
    )


def load_labelled(root: Path, split: str = "all") -> list[LabelledSplit]:
    """The chosen split (``dev``, ``test``) or every split present (``all``)."""
    root = Path(root)
    if not root.is_dir():
        raise ExtractionDataError(f"{root}: not a directory")
    if any((root / f).is_file() for f in FILES):  # a split folder given directly
        return [load_split(root)]
    names = SPLITS if split == "all" else (split,)
    found = [load_split(root / n) for n in names if (root / n).is_dir()]
    if not found:
        wanted = "/".join(names)
        raise ExtractionDataError(f"{root}: no {wanted} folder with {', '.join(FILES)}")
    if split != "all" and len(found) != 1:
        raise ExtractionDataError(f"{root}: no {split} split")
    return found


def default_data_dir(cwd: Path | None = None) -> Path | None:
    """``bench/data/extraction`` under ``cwd`` or under the source checkout this package
    runs from (an installed wheel ships no ``bench/``); None when neither exists."""
    here = Path(__file__).resolve().parents[2]
    for base in (Path.cwd() if cwd is None else cwd, here):
        candidate = base / "bench" / "data" / "extraction"
        if candidate.is_dir():
            return candidate
    return None
