"""Temporal cues: calendar dates named in a query, matched against a memory's dates.

"What did I cook on 9 October, 2022?" names a day that neither BM25 (the tokens
"9", "october" and "2022" are common) nor an embedding weighs properly. A memory's
dates are the ones written in its content plus the day it was stored; a candidate
whose dates fall within ``slack_days`` of a date the query names gains a fixed boost.
Month-only mentions ("in May 2023") cover the whole month. Only explicit calendar
dates are read: relative phrases ("last week") need an anchor the query lacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from functools import lru_cache

_MONTH_NAMES = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
_MONTHS = (
    {name: i + 1 for i, name in enumerate(_MONTH_NAMES)}
    | {name[:3]: i + 1 for i, name in enumerate(_MONTH_NAMES)}
    | {"sept": 9}
)
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_MON})\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}}){_ORD},?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MON})\.?,?\s+(\d{{4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")

#: Scanning a whole document for dates is pointless: they are stated early.
MAX_SCAN_CHARS = 2000

DateRange = tuple[date, date]


def _day(year: str, month: int, day: str) -> DateRange | None:
    try:
        when = date(int(year), month, int(day))
    except ValueError:  # 31 February, year 0
        return None
    return when, when


def mentioned_dates(text: str) -> list[DateRange]:
    """Calendar days and months named in ``text`` as inclusive ranges."""
    return list(_scan(text[:MAX_SCAN_CHARS]))


@lru_cache(maxsize=8192)
def _scan(text: str) -> tuple[DateRange, ...]:
    """Cached: a query naming a date checks every candidate memory's text, and the
    same memories come back query after query (four regexes over each cost ~70 us)."""
    return tuple(_dates_in(text))


def _dates_in(text: str) -> list[DateRange]:
    found: list[DateRange | None] = []
    for m in _DAY_MONTH_YEAR.finditer(text):
        found.append(_day(m[3], _MONTHS[m[2].lower()], m[1]))
    for m in _MONTH_DAY_YEAR.finditer(text):
        found.append(_day(m[3], _MONTHS[m[1].lower()], m[2]))
    for m in _ISO.finditer(text):
        if 1 <= int(m[2]) <= 12:
            found.append(_day(m[1], int(m[2]), m[3]))
    days = [r for r in found if r is not None]
    if days:
        return days
    months: list[DateRange] = []
    for m in _MONTH_YEAR.finditer(text):
        year, month = int(m[2]), _MONTHS[m[1].lower()]
        if not 1 <= year <= 9998:
            continue
        first = date(year, month, 1)
        last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
        months.append((first, last))
    return months


def overlaps(wanted: Sequence[DateRange], have: Iterable[DateRange], slack_days: int = 2) -> bool:
    """Whether any range in ``have`` comes within ``slack_days`` of one in ``wanted``
    (a turn stored on the 17th saying "yesterday" answers a question about the 16th)."""
    slack = timedelta(days=slack_days)
    have = list(have)
    return any(
        start <= q_end + slack and end >= q_start - slack
        for q_start, q_end in wanted
        for start, end in have
    )
