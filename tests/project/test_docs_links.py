"""Every relative Markdown link in README.md and docs/ resolves: the file (or folder)
exists, and an anchor names a heading (GitHub's slugs) or an explicit anchor of it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[ \t]*$", re.DOTALL | re.MULTILINE)
CODE = re.compile(r"`[^`\n]*`")
# [text](target) and ![alt](target); the text may hold one level of brackets
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$", re.MULTILINE)
EXPLICIT = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)


def _prose(text: str) -> str:
    """The text without fenced code blocks (their lines kept, emptied)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup and punctuation out, spaces to dashes."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)  # `, *, ., (, ), :, ... (underscores stay)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    text = _prose(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set(EXPLICIT.findall(text))
    for _level, title in HEADING.findall(text):
        base = slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def links(page: Path) -> list[tuple[int, str]]:
    text = _prose(page.read_text(encoding="utf-8"))
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        line = CODE.sub("", line)
        found += [(number, m.group(1)) for m in LINK.finditer(line)]
    found += [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in REFERENCE.finditer(text)]
    return found


def broken(page: Path) -> list[str]:
    problems = []
    for number, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        name = f"{page.relative_to(ROOT)}:{number}: {target}"
        if not where.exists():
            problems.append(f"{name} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            problems.append(f"{name} (no such anchor in {where.relative_to(ROOT)})")
    return problems


def test_the_slugs_are_githubs() -> None:
    assert slug("A lean gateway (issue 21)") == "a-lean-gateway-issue-21"
    assert slug("Retrieval latency (`retrieval.json`, query embedding included)") == (
        "retrieval-latency-retrievaljson-query-embedding-included"
    )
    assert slug("A C parser, gateway routes without FastAPI's machinery, a 4 ms budget") == (
        "a-c-parser-gateway-routes-without-fastapis-machinery-a-4-ms-budget"
    )
    assert slug("Scale-out and load") == "scale-out-and-load"
    assert slug("`MEMORY_FUSION` and [the doc](x.md)") == "memory_fusion-and-the-doc"


def test_the_link_scan_finds_links_and_skips_code(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Same\n\n## Same\n\nSee [a](other.md#x), ![b](img.png) and "
        "`[not](a-link.md)`.\n\n```\n[nor](this.md)\n```\n\n[ref]: ref.md#same-1\n"
    )
    assert [t for _, t in links(page)] == ["other.md#x", "img.png", "ref.md#same-1"]
    assert {"title", "same", "same-1"} <= anchors(page)


def test_every_relative_link_and_anchor_in_the_docs_resolves() -> None:
    assert len(PAGES) > 5  # README.md and docs/ were found
    problems = [p for page in PAGES for p in broken(page)]
    assert not problems, "broken links:\n" + "\n".join(problems)
