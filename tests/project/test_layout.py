"""Architecture rules that code review alone would let slip."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "memoryd"
CORE = PACKAGE / "core"
ALLOWED_IN_CORE = {"memoryd.models", "memoryd.errors"} | {
    ".".join(("memoryd", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
    for p in CORE.rglob("*.py")
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_core_is_pure_stdlib() -> None:
    """Every module under core/, subpackages included (core/extraction/)."""
    assert (CORE / "extraction" / "table.py") in set(CORE.rglob("*.py"))
    for path in CORE.rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "memoryd":
                assert name in ALLOWED_IN_CORE, f"{path.name} imports {name}"
            else:
                assert top in sys.stdlib_module_names, f"{path.name} imports {name}"


SQLITE_STORE = PACKAGE / "storage" / "sqlite"
POSTGRES_STORE = PACKAGE / "storage" / "postgres"
PORTABLE_SQL = PACKAGE / "storage" / "sql"
STORES = (SQLITE_STORE, POSTGRES_STORE, PORTABLE_SQL)

#: What makes a string SQL: a statement's opening words. Upper case only, as every
#: statement in memoryd is written, so prose ("select from the list") does not count.
SQL_STATEMENT = re.compile(
    r"\bSELECT\b[^;]*?\bFROM\b"
    r"|\bSELECT\s+(?:\d|\w+\()"  # SELECT 1, SELECT vec_version()
    r"|\bINSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\b"
    r"|\bUPDATE\s+\w+\s+SET\b"
    r"|\bDELETE\s+FROM\b"
    r"|\b(?:CREATE|DROP)\s+(?:UNIQUE\s+|VIRTUAL\s+)?(?:TABLE|INDEX|TRIGGER|VIEW)\b"
    r"|\bALTER\s+TABLE\b"
    r"|\bPRAGMA\s+\w+"
    r"|\bBEGIN\s+(?:IMMEDIATE|EXCLUSIVE|DEFERRED)\b"
    # a WHERE-clause fragment passed around as a string: "m.expires_at <= ?"
    r"|\b[a-z]\.[a-z_]+\s+(?:IS\s+(?:NOT\s+)?NULL\b|(?:[<>]=?|=|IN)\s*[?(])"
    r"|\b[a-z_]+\s+(?:[<>]=?|=)\s+\?"
)


def _outside(*folders: Path) -> list[Path]:
    return [
        p for p in sorted(PACKAGE.rglob("*.py")) if not any(p.is_relative_to(f) for f in folders)
    ]


def _outside_sqlite_store() -> list[Path]:
    return _outside(SQLITE_STORE)


def _docstrings(tree: ast.AST) -> set[int]:
    """``id()`` of every docstring constant: the first statement of a module, class or
    function when it is a string (prose that may name SQL words)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(
            node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ) and (
            node.body
            and isinstance(first := node.body[0], ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            found.add(id(first.value))
    return found


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, text)`` of every string literal but docstrings. An f-string is one text
    with ``{}`` where its values go, so ``f"SELECT {cols} FROM t"`` reads as SQL."""
    skip = _docstrings(tree)
    parts_of_fstrings: set[int] = set()
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = ""
            for value in node.values:
                parts_of_fstrings.add(id(value))
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    text += value.value
                else:
                    text += "{}"
            found.append((node.lineno, text))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip | parts_of_fstrings
        ):
            found.append((node.lineno, node.value))
    return found


def _sql_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {match.group(0)!r}"
        for line, text in sorted(_strings(tree))
        if (match := SQL_STATEMENT.search(text))
    ]


def test_only_the_sqlite_store_imports_apsw() -> None:
    outside = _outside_sqlite_store()
    assert PACKAGE / "storage" / "__init__.py" in outside
    offenders = [p for p in outside if any(n.split(".")[0] == "apsw" for n in _imports(p))]
    assert not offenders, f"import the SQLite driver outside storage/sqlite/: {offenders}"


def test_only_the_postgres_store_imports_psycopg() -> None:
    offenders = [
        p
        for p in _outside(POSTGRES_STORE)
        if any(n.split(".")[0] in ("psycopg", "psycopg_pool") for n in _imports(p))
    ]
    assert not offenders, f"import the PostgreSQL driver outside storage/postgres/: {offenders}"


def test_only_the_stores_contain_sql() -> None:
    """Every SQL statement lives under ``memoryd/storage/``: ``sql/`` (portable),
    ``sqlite/`` and ``postgres/`` (their dialects); elsewhere code speaks the Store
    contract. Docstrings and comments may name SQL words."""
    assert (POSTGRES_STORE / "dialect.py").exists()
    found = [hit for path in _outside(*STORES) for hit in _sql_in(path)]
    assert not found, "SQL outside memoryd/storage/{sql,sqlite,postgres}/:\n" + "\n".join(found)


def test_the_sql_probe_finds_what_it_should(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        '"""Module docstring: SELECT id FROM memories is fine here."""\n'
        "def f(table: str) -> None:\n"
        '    """UPDATE memories SET x in a docstring is fine too."""\n'
        "    # DELETE FROM memories (a comment)\n"
        '    a = "select from the list of options"\n'
        '    b = f"SELECT COUNT(*) FROM {table}"\n'
        '    c = ("INSERT OR REPLACE INTO t (a) "\n'
        '         "VALUES (1)")\n'
        '    d = "PRAGMA query_only = 1"\n'
        '    e = "m.expires_at IS NOT NULL"\n'
        '    g = "api_key_id = ?"\n'
        '    h = "a = b, if x is None"\n',
        encoding="utf-8",
    )
    tree = ast.parse(source.read_text(encoding="utf-8"))
    hits = [
        (line, m.group(0)) for line, text in _strings(tree) if (m := SQL_STATEMENT.search(text))
    ]
    assert sorted(hits) == [
        (6, "SELECT COUNT(*) FROM"),
        (7, "INSERT OR REPLACE INTO"),
        (9, "PRAGMA query_only"),
        (10, "m.expires_at IS NOT NULL"),
        (11, "api_key_id = ?"),
    ]
