"""A cheap, sound pre-check for large regular expressions.

Python's ``re`` tries every alternative of a pattern like ``\\b(?:ignore|disregard|...)``
at every position of the text, so the guard's patterns cost ~5 µs per character (300 ms
for a 64 KiB paste, on the request thread). Most text holds none of the words a pattern
needs, and ``str.__contains__`` finds that out a hundred times faster. ``Gated`` reads,
from the pattern's own parse tree, a set of literals of which every match must contain at
least one, and runs the pattern only when one of them occurs. It never changes what
matches: a pattern with no such literals always runs.
"""

from __future__ import annotations

import re
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

Condition = frozenset[str] | None  # one of these occurs in every match; None: no promise


def _score(condition: frozenset[str]) -> tuple[int, int]:
    return (min(len(s) for s in condition), -len(condition))


def _best(candidates: list[frozenset[str]]) -> Condition:
    useful = [c for c in candidates if c and all(c)]
    return max(useful, key=_score) if useful else None


def _of_branch(alternatives: list[Any]) -> Condition:
    out: set[str] = set()
    for alternative in alternatives:
        found = _of_sequence(alternative)
        if found is None:
            return None  # one way to match needs no literal: no promise
        out |= found
    return frozenset(out)


def _of_sequence(nodes: Any) -> Condition:
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def close() -> None:
        if run:
            candidates.append(frozenset({"".join(run)}))
            run.clear()

    for op, arg in nodes:
        if op is sre.LITERAL:
            run.append(chr(arg).casefold())
            continue
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # zero width: the literals on both sides stay one run
        close()
        sub: Condition = None
        if op is sre.SUBPATTERN:
            sub = _of_sequence(arg[-1])
        elif op is sre.BRANCH:
            sub = _of_branch(arg[1])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and arg[0] >= 1:
            sub = _of_sequence(arg[2])
        elif op is sre.ATOMIC_GROUP:
            sub = _of_sequence(arg)
        if sub is not None:
            candidates.append(sub)
    close()
    return _best(candidates)


def necessary(pattern: re.Pattern[str]) -> Condition:
    """Casefolded literals of which every match of ``pattern`` holds one, or None."""
    try:
        return _of_sequence(sre_parse.parse(pattern.pattern, pattern.flags))
    except Exception:  # a parse tree this module does not know: no promise, it always runs
        return None


class Gated:
    """``pattern``, searched only in text that holds one of its necessary literals."""

    __slots__ = ("needs", "pattern")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.needs = necessary(pattern)

    def search(self, text: str, folded: str) -> re.Match[str] | None:
        """``folded`` is ``text.casefold()``, computed once for every gate."""
        if self.needs is not None and not any(s in folded for s in self.needs):
            return None
        return self.pattern.search(text)
