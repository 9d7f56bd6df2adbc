"""The code cites the design in the repository's own pages, and only there.

- Every ``docs/design/<page>.md#<anchor>`` named in the code, the tests or the docs
  names a page that exists and a heading of it (GitHub's anchors).
- Nothing cites the sections of an outside specification any more (``SPEC §n``).
- The comments and docstrings of ``memoryd/`` and ``bench/`` say the reason for a rule
  themselves instead of pointing at a tracker's issue number ("issue 18", "#38"). The
  changelog keeps its history; tests may name the regression they guard.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from tests.project.test_docs_links import anchors

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design"

#: Where citations are looked for: the code, the tests, the smoke suite, the docs.
CITING = ("memoryd", "bench", "tests", "smoke", "docs", "README.md", "CONTRIBUTING.md")
TEXT_SUFFIXES = {".py", ".md", ".sql", ".js", ".css", ".html", ".toml", ".txt", ".sh", ""}

CITATION = re.compile(r"docs/design/([\w.-]+?\.md)(?:#([\w-]+))?")
# Built from parts so this file does not cite what it forbids.
SPEC_SECTION = re.compile("SPEC" + r"\s*" + "\u00a7")
ISSUE = re.compile(r"(?i)\bissues?\b[\s#:(/*-]*\d+|(?<![&\w])#\d{1,3}\b(?![0-9a-fA-F])")


def _files(*roots: str) -> Iterator[Path]:
    for name in roots:
        top = ROOT / name
        paths = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in paths:
            if (
                path.is_file()
                and path != Path(__file__).resolve()  # its probes are meant to fail
                and path.suffix in TEXT_SUFFIXES
                and not {"results", "__pycache__", "node_modules"} & set(path.parts)
                and not any(p.startswith(".") for p in path.relative_to(ROOT).parts)
            ):
                yield path


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _where(path: Path, text: str, offset: int) -> str:
    return f"{_name(path)}:{text.count(chr(10), 0, offset) + 1}"


def unresolved(path: Path) -> list[str]:
    """The design citations in ``path`` that name no page, or no heading of it."""
    text = path.read_text(encoding="utf-8", errors="replace")
    problems = []
    for match in CITATION.finditer(text):
        page, anchor = DESIGN / match[1], match[2]
        if not page.is_file():
            problems.append(f"{_where(path, text, match.start())}: {match[0]} (no such page)")
        elif anchor and anchor not in anchors(page):
            problems.append(f"{_where(path, text, match.start())}: {match[0]} (no such heading)")
    return problems


def _runs(lines: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Comments on consecutive lines as one text, so a phrase may wrap."""
    run: list[tuple[int, str]] = []
    for line, text in lines:
        if run and line != run[-1][0] + 1:
            yield run[0][0], "\n".join(t for _, t in run)
            run = []
        run.append((line, text))
    if run:
        yield run[0][0], "\n".join(t for _, t in run)


def _python_prose(text: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every comment (a run of lines as one) and docstring."""
    comments = [
        (token.start[0], token.string.lstrip("#:").strip())
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    yield from _runs(comments)
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(first := node.body[0], ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            yield first.lineno, first.value.value


_LINE_COMMENTS = {".sql": re.compile(r"^\s*--(.*)$", re.MULTILINE)}
_COMMENTS = {
    ".js": re.compile(r"/\*.*?\*/", re.DOTALL),
    ".css": re.compile(r"/\*.*?\*/", re.DOTALL),
    ".html": re.compile(r"<!--.*?-->|\{#.*?#\}", re.DOTALL),
}


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of what in ``path`` is prose: comments and docstrings of code,
    the whole of a Markdown or text file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py":
        yield from _python_prose(text)
    elif path.suffix in _LINE_COMMENTS:
        found = _LINE_COMMENTS[path.suffix].finditer(text)
        yield from _runs([(text.count("\n", 0, m.start()) + 1, m[1].strip()) for m in found])
    elif path.suffix in _COMMENTS:
        for match in _COMMENTS[path.suffix].finditer(text):
            yield text.count("\n", 0, match.start()) + 1, match[0]
    elif path.suffix in (".md", ".txt"):
        yield 1, text


def issue_numbers(path: Path) -> list[str]:
    found = []
    for line, text in prose(path):
        for match in ISSUE.finditer(text):
            at = line + text.count("\n", 0, match.start())
            found.append(f"{_name(path)}:{at}: {match[0]!r}")
    return found


def test_the_design_pages_exist() -> None:
    pages = {p.name for p in DESIGN.glob("*.md")}
    assert {"README.md", "retrieval.md", "owners.md"} <= pages
    assert "fusion" in anchors(DESIGN / "retrieval.md")


def test_the_scans_find_what_they_should(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        '"""See docs/design/retrieval.md#fusion and docs/design/nowhere.md."""\n'
        "# fixed in issue 12; see also #38\n"
        "x = 'issue 7 in a string is output, not prose'  # docs/design/retrieval.md#nope\n"
        "COLOR = '#374151'\n",
        encoding="utf-8",
    )
    problems = [p.split(": ", 1)[1] for p in unresolved(source)]
    assert problems == [
        "docs/design/nowhere.md (no such page)",
        "docs/design/retrieval.md#nope (no such heading)",
    ]
    assert [p.split(": ", 1)[1] for p in issue_numbers(source)] == ["'issue 12'", "'#38'"]
    sql = tmp_path / "m.sql"
    sql.write_text("-- Issue 40, as\n-- the other (issue\n-- 21)\nSELECT 1;\n", encoding="utf-8")
    assert issue_numbers(sql) == ["m.sql:1: 'Issue 40'", "m.sql:2: 'issue\\n21'"]


def test_every_design_citation_resolves() -> None:
    files = list(_files(*CITING))
    cited = [p for p in files if CITATION.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert len(cited) > 30, "the scan found almost no design citations"
    problems = [problem for path in files for problem in unresolved(path)]
    assert not problems, "design citations that do not resolve:\n" + "\n".join(problems)


def test_nothing_cites_the_outside_specification() -> None:
    found = []
    for path in _files(*CITING):
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [_where(path, text, m.start()) for m in SPEC_SECTION.finditer(text)]
    assert not found, "cite docs/design/<page>.md#<heading> instead:\n" + "\n".join(found)


def test_no_issue_numbers_in_the_code_comments() -> None:
    """Say why, not which ticket: a reader of the code has the code, not the tracker."""
    code = _files("memoryd", "bench", "tests", "smoke")
    found = [hit for path in code for hit in issue_numbers(path)]
    assert not found, "issue numbers in comments or docstrings:\n" + "\n".join(found)
