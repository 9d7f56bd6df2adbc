"""Look-alikes of the memory block's markers: ``</memories>`` written with fullwidth or
small-form brackets, guillemets, a Cyrillic or Greek letter, a digit for a letter, spaced
letters or an accent.

A model reads these as the tag they imitate, so a memory holding one could seem to close
the block and speak as the system. Each character is read by its skeleton (compatibility
decomposition, accents dropped, case folded, then a table of the confusables that imitate
the marker's characters: Cyrillic and Greek letters, digits, and bracket and slash
look-alikes), and a marker found in the skeleton loses its brackets in the original text,
as a plain ``<memories>`` does. Pure and stdlib-only.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["defuse"]

#: Characters that imitate one of ``< > / m e o r i s`` (after NFKD and casefolding,
#: which already map fullwidth, small-form and mathematical letters and brackets).
_CONFUSABLE = str.maketrans(
    {
        **dict.fromkeys("\u2039\u02c2\u1438\u3008\u27e8\u276e\u227a\u29fc\ufe64\u2329", "<"),
        **dict.fromkeys("\u203a\u02c3\u1433\u3009\u27e9\u276f\u227b\u29fd\ufe65\u232a", ">"),
        **dict.fromkeys("\u2044\u2215\u29f8\u2571\u27cb", "/"),
        **dict.fromkeys("\u043c\u1d0d\ua7fd", "m"),
        **dict.fromkeys("\u0435\u04bd\u212e\uab32", "e"),
        **dict.fromkeys("0\u043e\u03bf\u0585\u1d0f", "o"),
        **dict.fromkeys("\u0433\u0280\uab47\u1d26", "r"),
        **dict.fromkeys("1l|!\u0456\u03b9\u0131\u026a\u04cf\ua647", "i"),
        **dict.fromkeys("$5\u0455\ua731", "s"),
    }
)
#: A marker in a skeleton: letters may be spaced ("m e m o r i e s"): a format character
#: between them was already a space.
_MARKER = re.compile(r"<\s*/?\s*m\s*e\s*m\s*o\s*r\s*i\s*e\s*s\s*>")
#: Where an ASCII text may hold one: a bracketed run short enough to be a marker.
_BRACKETED = re.compile(r"<[^<>]{0,40}>")


def _fold(ch: str) -> str:
    """One character's skeleton (``""`` for a combining mark)."""
    if ch.isascii():
        return ch.lower().translate(_CONFUSABLE)
    parts = unicodedata.normalize("NFKD", ch)
    return (
        "".join(c for c in parts if not unicodedata.combining(c)).casefold().translate(_CONFUSABLE)
    )


def _skeleton(text: str) -> tuple[str, list[int]]:
    """The skeleton of ``text`` and, per skeleton character, its index in ``text``."""
    out: list[str] = []
    at: list[int] = []
    for i, ch in enumerate(text):
        s = _fold(ch)
        out.append(s)
        at += [i] * len(s)
    return "".join(out), at


@functools.cache
def _openers() -> frozenset[str]:
    """Every character of the Basic Multilingual Plane whose skeleton holds ``<``: a
    text with none of them (and no ``<``) holds no marker (built once, ~50 ms)."""
    return frozenset(ch for ch in map(chr, range(0x80, 0x10000)) if "<" in _fold(ch))


def defuse(text: str) -> str:
    """``text`` with every look-alike of a memory marker's brackets turned to ``(``
    and ``)``; unchanged when it holds none (most texts: a cheap check first)."""
    if text.isascii():
        if not any(_MARKER.fullmatch(_skeleton(m[0])[0]) for m in _BRACKETED.finditer(text)):
            return text
    elif "<" not in text and _openers().isdisjoint(text):
        return text  # accents, curly quotes: no bracket of any kind
    skeleton, at = _skeleton(text)
    spans = [(at[m.start()], at[m.end() - 1]) for m in _MARKER.finditer(skeleton)]
    if not spans:
        return text
    chars = list(text)
    for first, last in spans:
        chars[first], chars[last] = "(", ")"
    return "".join(chars)
