"""Rules extraction against LoCoMo's own per-session observation annotations.

LoCoMo annotates each session with ``session_N_observation``: per speaker, a list of
``[observation, dia_id]`` pairs (the id may also be a list, or several ids in one
string separated by commas or semicolons). A turn *carries an observation* when any
observation of its conversation cites its dia_id. For every turn, ``extract_facts`` runs
on the turn's text alone (no caption, no speaker name); reported: the fraction of
turns with an observation from which at least one fact is extracted (a recall proxy),
and the fraction of turns without one from which something is (a false-positive proxy).

Only ``session_N`` and ``session_N_observation`` are read: never the questions.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.core.extraction import extract_facts

_SESSION = re.compile(r"session_(\d+)")
_OBSERVATION = re.compile(r"session_(\d+)_observation")
_ID_SEPARATORS = re.compile(r"[;,\s]+")
EXAMPLES = 10


class ObservationDataError(ValueError):
    """A file is not a LoCoMo conversation with sessions."""


@dataclass(frozen=True, slots=True)
class ObservedConversation:
    name: str
    turns: tuple[tuple[str, str], ...]  # (dia_id, text)
    observed: frozenset[str]  # every dia_id an observation cites


def cited_ids(raw: object) -> list[str]:
    """The dia_ids of one observation's evidence: a string ("D1:3", "D1:3, D1:5") or a
    list of them."""
    parts = raw if isinstance(raw, list) else [raw]
    return [i for p in parts if isinstance(p, str) for i in _ID_SEPARATORS.split(p) if i]


def parse_conversation(data: Mapping[str, Any], name: str) -> ObservedConversation:
    # locomo10.json nests the sessions under "conversation"; the per-file release does not
    conv: Mapping[str, Any] = data.get("conversation") or data
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := _SESSION.fullmatch(key)) and isinstance(conv[key], list)
    )
    if not sessions:
        raise ObservationDataError(f"{name}: no session_N turn lists")
    turns = tuple(
        (str(turn["dia_id"]), str(turn.get("text") or ""))
        for _, key in sessions
        for turn in conv[key]
    )
    observations = data.get("observation") or data  # nested under "observation" in locomo10
    observed: set[str] = set()
    for key, per_speaker in observations.items():
        if _OBSERVATION.fullmatch(key) and isinstance(per_speaker, dict):
            for items in per_speaker.values():
                for item in items if isinstance(items, list) else []:
                    if isinstance(item, list) and len(item) >= 2:
                        observed.update(cited_ids(item[1]))
    return ObservedConversation(str(data.get("sample_id") or name), turns, frozenset(observed))


def load(directory: Path) -> list[ObservedConversation]:
    """Every conversation of every ``*.json`` in ``directory`` (sorted by file name)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ObservationDataError(f"{directory}: not a directory")
    found: list[ObservedConversation] = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ObservationDataError(f"{path.name}: cannot read JSON: {exc}") from None
        items = data if isinstance(data, list) else [data]
        try:
            found += [
                parse_conversation(item, path.stem if len(items) == 1 else f"{path.stem}-{i}")
                for i, item in enumerate(items)
            ]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ObservationDataError(f"{path.name}: malformed LoCoMo data ({exc!r})") from None
    if not found:
        raise ObservationDataError(f"{directory}: no LoCoMo conversation JSON files")
    return found


def count(
    conversations: Iterable[ObservedConversation],
    extract: Callable[[str], list[Any]] = extract_facts,
    examples: int = EXAMPLES,
) -> dict[str, Any]:
    """The figures of the module docstring, with a few example turns of each kind of
    disagreement."""
    started = time.perf_counter()
    n_conv = turns = observed = observed_hit = unobserved_hit = facts = 0
    unknown: list[str] = []
    missed: list[dict[str, str]] = []
    extra: list[dict[str, Any]] = []
    for conv in conversations:
        n_conv += 1
        known = {dia_id for dia_id, _ in conv.turns}
        unknown += sorted(f"{conv.name}:{i}" for i in conv.observed - known)
        for dia_id, text in conv.turns:
            turns += 1
            found = extract(text)
            facts += len(found)
            if dia_id in conv.observed:
                observed += 1
                observed_hit += bool(found)
                if not found and len(missed) < examples:
                    missed.append({"dia_id": f"{conv.name}:{dia_id}", "text": text})
            elif found:
                unobserved_hit += 1
                if len(extra) < examples:
                    stored = [getattr(f, "content", str(f)) for f in found]
                    extra.append({"dia_id": f"{conv.name}:{dia_id}", "text": text, "facts": stored})
    unobserved = turns - observed
    return {
        "conversations": n_conv,
        "turns": turns,
        "observed_turns": observed,
        "observed_with_facts": observed_hit,
        "recall": round(observed_hit / observed, 6) if observed else None,
        "unobserved_turns": unobserved,
        "unobserved_with_facts": unobserved_hit,
        "false_positive_rate": round(unobserved_hit / unobserved, 6) if unobserved else None,
        "facts": facts,
        "unknown_ids": {"n": len(unknown), "examples": unknown[:examples]},
        "examples": {"observed_no_fact": missed, "unobserved_with_fact": extra},
        "elapsed_s": round(time.perf_counter() - started, 3),
    }
