"""The records of an import: JSON Lines, or one JSON array of the same objects.

``records`` turns an import's input into ``(line, item, value)`` per memory, the value
being the decoded JSON or the ``ValidationError`` that says why it is not one, so the
import reports each bad record where it is and still imports the others. A JSON array
(the input's first non-blank character is ``[``: what the seed's dashboard and mem0
export) is read whole, up to the REST import's body limit; its items are numbered
(``item``) and each has the line it starts on. Anything else is JSON Lines (``item``
None), each line at most 1 MiB. Every value is
held to the one nesting limit (``core.jsondepth``) before anything walks it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from memoryd.core.jsondepth import MAX_JSON_DEPTH, value_too_deep
from memoryd.errors import ValidationError

MAX_IMPORT_LINE_BYTES = 1_048_576
#: A JSON array is read whole: as large as the REST import's body may be.
MAX_IMPORT_ARRAY_BYTES = 64 * 1024 * 1024

#: ``(line, item number in an array or None, the decoded value or its ValidationError)``.
Record = tuple[int, int | None, Any]


def records(lines: Iterable[str | bytes]) -> Iterator[Record]:
    """Each memory of ``lines`` (a file's lines, or a body split into lines)."""
    numbered = iter(enumerate(lines, start=1))
    first = True
    for number, raw in numbered:
        if not raw.strip():
            continue
        if first and raw.lstrip()[:1] in ("[", b"["):  # the first non-blank line decides
            parts, size = [raw], len(raw)
            for _, more in numbered:
                parts.append(more)
                size += len(more)
                if size > MAX_IMPORT_ARRAY_BYTES:
                    message = f"a JSON array over {MAX_IMPORT_ARRAY_BYTES} bytes: send JSON Lines"
                    yield number, None, ValidationError(message)
                    return
            for line, item, value in _array(parts):
                yield line + number - 1, item, value  # counted from the array's first line
            return
        first = False
        if len(raw) > MAX_IMPORT_LINE_BYTES:
            yield number, None, ValidationError(f"line longer than {MAX_IMPORT_LINE_BYTES} bytes")
            continue
        text = _text(raw)
        yield number, None, text if isinstance(text, ValidationError) else _decoded(text)


def _text(raw: str | bytes) -> str | ValidationError:
    try:
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        return ValidationError(f"invalid UTF-8: {exc}")


def _checked(data: object) -> object:
    deep = value_too_deep(data)
    if deep is not None:
        return ValidationError(f"nested deeper than {MAX_JSON_DEPTH} levels (at {deep})")
    return data


def _decoded(text: str) -> object:
    """One JSON value, or the ValidationError saying why not (too deep included)."""
    try:
        return _checked(json.loads(text))
    except ValueError as exc:
        return ValidationError(f"invalid JSON: {exc}")
    except RecursionError:
        return ValidationError(f"nested deeper than {MAX_JSON_DEPTH} levels")


def _array(parts: list[str | bytes]) -> Iterator[Record]:
    """The items of one JSON array, each with the line it starts on; a document that is
    not one JSON array is one error at the line where reading stopped, and then no item
    is imported (its end cannot be trusted)."""
    texts = [_text(p) for p in parts]
    bad = next((t for t in texts if isinstance(t, ValidationError)), None)
    if bad is not None:
        yield 1 + texts.index(bad), None, bad
        return
    # a file's lines keep their line ends, a split body's do not: one newline each
    whole = "\n".join(str(t).rstrip("\r\n") for t in texts)
    try:
        items = _items(whole)
    except json.JSONDecodeError as exc:
        yield exc.lineno, None, ValidationError(f"invalid JSON array: {exc}")
        return
    except RecursionError:
        yield 1, None, ValidationError(f"nested deeper than {MAX_JSON_DEPTH} levels")
        return
    for number, (line, item) in enumerate(items, start=1):
        yield line, number, _checked(item)


def _items(text: str) -> list[tuple[int, Any]]:
    """``(line, value)`` of each item of the JSON array ``text`` (JSONDecodeError when it
    is not exactly one array)."""
    decoder = json.JSONDecoder()
    items: list[tuple[int, Any]] = []
    at, line, counted = _blank(text, 0), 1, 0
    if text[at : at + 1] != "[":
        raise json.JSONDecodeError("expected '['", text, at)
    at = _blank(text, at + 1)
    if text[at : at + 1] == "]":
        at += 1
    else:
        while True:
            line, counted = line + text.count("\n", counted, at), at
            value, at = decoder.raw_decode(text, at)
            items.append((line, value))
            at = _blank(text, at)
            if text[at : at + 1] == "]":
                at += 1
                break
            if text[at : at + 1] != ",":
                raise json.JSONDecodeError("expected ',' or ']'", text, at)
            at = _blank(text, at + 1)
    if _blank(text, at) != len(text):
        raise json.JSONDecodeError("extra data after the array", text, _blank(text, at))
    return items


def _blank(text: str, at: int) -> int:
    """The first position at or after ``at`` that is not JSON whitespace."""
    while at < len(text) and text[at] in " \t\n\r":
        at += 1
    return at
