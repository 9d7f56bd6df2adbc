"""Architecture rules that code review alone would let slip."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memoryd"
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


def test_only_the_storage_layer_talks_sql() -> None:
    for path in PACKAGE.rglob("*.py"):
        if "storage" in path.parts:
            continue
        assert "apsw" not in _imports(path), f"{path} imports the SQLite driver"


def test_no_module_is_over_500_lines() -> None:
    for path in PACKAGE.rglob("*.py"):
        lines = path.read_text(encoding="utf-8").count("\n")
        assert lines <= 500, f"{path.relative_to(PACKAGE)} has {lines} lines"
