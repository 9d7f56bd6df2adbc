"""The import graph of ``memoryd/``: one-way layers, no loops, a pure core.

The graph is read from the source with ``ast``: every ``import``/``from ... import``
anywhere in a module (module level, inside functions, under ``if TYPE_CHECKING:``)
plus ``importlib.import_module("memoryd....")`` with a literal name. Relative imports
are resolved; ``from memoryd.x import y`` is an import of ``memoryd.x.y`` when ``y`` is
a submodule, else of ``memoryd.x`` (the package's ``__init__.py``).

Rules, with no exceptions listed (the package ``__init__`` is outside the graph, see
``EXEMPT``):
- layers (``LAYERS``): a module imports only from a lower layer or from its own unit
  (its top package, or the module itself); in the domain layers (``PEERS_MAY_IMPORT``)
  a unit may also import another unit of its own layer;
- no import cycle (a strongly connected component of more than one module);
- ``import memoryd.core.<any>`` in a fresh interpreter loads no third-party module and
  no memoryd module outside core, models and errors.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
from functools import cache
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "memoryd"

#: Layer -> module patterns. A pattern names a module and everything under it and may
#: use ``fnmatch`` wildcards; when several match, the longest pattern wins. Update this
#: table as modules move (a module with no layer fails ``test_every_module_has_a_layer``).
LAYERS: Mapping[int, tuple[str, ...]] = {
    # stdlib-only shared vocabulary and utilities
    0: ("memoryd.core", "memoryd.models", "memoryd.errors", "memoryd.cache", "memoryd.priority"),
    # the primary store and every configuration (declarations, static config, and the
    # settings stored in it: memory, Qdrant, upstream providers)
    1: ("memoryd.storage", "memoryd.config"),
    # embedders, vector stores
    2: ("memoryd.embedding", "memoryd.vectors"),
    # the engine and its collaborators (retrieval, lifecycle, status, jobs, keys, ...)
    3: ("memoryd.engine",),
    # the engine opened from the configuration; what every HTTP interface shares
    4: ("memoryd.bootstrap", "memoryd.http"),
    # the interfaces, peers that never import one another; the test doubles of outside
    # parties (the upstream provider, a throwaway PostgreSQL)
    5: (
        "memoryd.api",
        "memoryd.gateway",
        "memoryd.mcp",
        "memoryd.dashboard",
        "memoryd.eval",
        "memoryd.testing",
    ),
    # the one ASGI app composed from the interfaces; what serve says at start (--demo
    # serves the stand-in provider from testing)
    6: ("memoryd.app", "memoryd.welcome"),
    # one server process
    7: ("memoryd.server",),
    # ``serve --workers N``: N server processes on one port
    8: ("memoryd.supervisor",),
    # the command line, and ``python -m memoryd``
    9: ("memoryd.cli",),
    10: ("memoryd.__main__",),
}

#: Layers whose units may import one another (cycles are still refused): the domain
#: is one body of code cut into packages; above it, each unit stands alone.
PEERS_MAY_IMPORT = frozenset({0, 1, 2, 3})

#: Modules outside the rules: the package ``__init__`` re-exports lazily (PEP 562); its
#: imports run only under TYPE_CHECKING, and ``from memoryd import __version__`` is free.
EXEMPT = frozenset({"memoryd"})

#: What ``import memoryd.core.<any>`` may load besides the stdlib and ``memoryd`` itself.
CORE_MAY_LOAD = ("memoryd.core", "memoryd.models", "memoryd.errors")


def _matches(name: str, pattern: str) -> bool:
    return fnmatchcase(name, pattern) or fnmatchcase(name, pattern + ".*")


def layer_of(module: str) -> int:
    """The layer of a memoryd module per ``LAYERS``; LookupError when none matches."""
    found = [(len(p), layer) for layer, pats in LAYERS.items() for p in pats if _matches(module, p)]
    if not found:
        raise LookupError(f"{module} has no layer: add it to LAYERS in {Path(__file__).name}")
    return max(found)[1]


def unit_of(module: str) -> str:
    """A module's unit: its top package under ``memoryd``, or the module itself."""
    return ".".join(module.split(".")[:2])


# -- the graph --------------------------------------------------------------------------

Graph = dict[str, dict[str, int]]  # importer -> imported -> first line


def discover(package: Path) -> dict[str, Path]:
    """Module name -> file for every importable ``.py`` under ``package``."""
    modules: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if not all(part.isidentifier() for part in parts):
            continue
        is_init = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_init else parts)
        if is_init or name not in modules:  # a package shadows a module of its name
            modules[name] = path
    return modules


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module ``name`` loads: itself or its nearest existing ancestor."""
    probe = name
    while probe and probe not in modules:
        probe = probe.rpartition(".")[0]
    if not probe or ("." not in probe and name != probe):
        return None  # not this package, or a name that no longer exists
    return probe


def _targets(
    node: ast.AST, module: str, is_package: bool, modules: Mapping[str, Path]
) -> Iterator[str | None]:
    if isinstance(node, ast.Import):
        yield from (_resolve(alias.name, modules) for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = module if is_package else module.rpartition(".")[0]
            parts = anchor.split(".")
            if node.level - 1 >= len(parts):
                return
            anchor = ".".join(parts[: len(parts) - (node.level - 1)])
            base = f"{anchor}.{base}" if base else anchor
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield sub if sub in modules else _resolve(base, modules)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        yield _resolve(node.args[0].value, modules)


def build_graph(package: Path = PACKAGE) -> Graph:
    """Importer -> imported -> line, over the memoryd modules only (self-imports dropped)."""
    modules = discover(package)
    graph: Graph = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for target in _targets(node, module, path.name == "__init__.py", modules):
                if target is not None and target != module:
                    line = getattr(node, "lineno", 0)
                    edges[target] = min(edges.get(target, line), line)
    return graph


@cache
def _graph() -> Graph:
    return build_graph()


def _where(graph: Graph, importer: str, imported: str) -> str:
    return f"{importer} -> {imported} (line {graph[importer][imported]})"


# -- cycles -----------------------------------------------------------------------------


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """Tarjan's algorithm, iterative; the components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _loop(graph: Mapping[str, Iterable[str]], component: frozenset[str]) -> list[str]:
    """One shortest loop through the component's first module (breadth-first)."""
    start = min(component)
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child == start:
                    chain = [node]
                    while chain[-1] != start:
                        chain.append(parent[chain[-1]])
                    return [*reversed(chain), start]
                if child in component and child not in parent:
                    parent[child] = node
                    following.append(child)
        frontier = following
    return [start]


def cycles(graph: Graph) -> list[frozenset[str]]:
    """The import loops; the exempt package ``__init__`` has no outgoing edges."""
    edges = {m: set(targets) for m, targets in graph.items() if m not in EXEMPT}
    return strongly_connected(edges)


def _describe(graph: Graph, component: frozenset[str]) -> str:
    loop = _loop(graph, component)
    steps = [f"{a} (line {graph[a][b]})" for a, b in pairwise(loop)]
    return f"{sorted(component)}\n    e.g. {' -> '.join([*steps, loop[-1]])}"


# -- layer violations -------------------------------------------------------------------


def layer_violations(graph: Graph) -> set[tuple[str, str]]:
    """Imports that point up a layer, or across units of a layer whose units stand alone."""
    bad: set[tuple[str, str]] = set()
    for importer, targets in graph.items():
        if importer in EXEMPT:
            continue
        for imported in targets:
            if imported in EXEMPT:
                continue
            low, high = layer_of(importer), layer_of(imported)
            across = low == high not in PEERS_MAY_IMPORT and unit_of(importer) != unit_of(imported)
            if high > low or across:
                bad.add((importer, imported))
    return bad


# -- tests ------------------------------------------------------------------------------


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / "memoryd"
    files = {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memoryd import b\n",
        "b.py": "def f() -> None:\n    import memoryd.sub.c\n",
        "sub/__init__.py": "from . import c\nfrom .c import NAME\n",
        "sub/c.py": "NAME = 1\nfrom ..a import X\nfrom memoryd.ns import d\nimport json\n",
        "ns/d.py": "import importlib\nimportlib.import_module('memoryd.sub')\n"
        "from memoryd.gone import x\n",
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text, encoding="utf-8")
    graph = {m: set(t) for m, t in build_graph(pkg).items()}
    assert graph == {
        "memoryd": set(),
        "memoryd.a": {"memoryd.b"},
        "memoryd.b": {"memoryd.sub.c"},
        "memoryd.sub": {"memoryd.sub.c"},
        "memoryd.sub.c": {"memoryd.a", "memoryd.ns.d"},
        "memoryd.ns.d": {"memoryd.sub"},
    }
    (loop,) = strongly_connected(graph)
    assert loop == set(graph) - {"memoryd"}
    assert _loop(graph, loop) == ["memoryd.a", "memoryd.b", "memoryd.sub.c", "memoryd.a"]


def test_layer_table() -> None:
    assert layer_of("memoryd.core.extraction.table") == 0
    assert layer_of("memoryd.models") == 0
    assert layer_of("memoryd.storage.sql.memories") == 1
    assert layer_of("memoryd.vectors.qdrant.sync") == 2
    assert layer_of("memoryd.embedding.service") == 2
    assert layer_of("memoryd.engine") == layer_of("memoryd.engine.lifecycle") == 3
    assert layer_of("memoryd.http.protocol.guard") == layer_of("memoryd.bootstrap") == 4
    assert layer_of("memoryd.api.routes_memory") == layer_of("memoryd.gateway.wire") == 5
    assert layer_of("memoryd.app") < layer_of("memoryd.server") < layer_of("memoryd.cli")
    assert unit_of("memoryd.cli.keys") == "memoryd.cli"
    assert unit_of("memoryd.bootstrap") == "memoryd.bootstrap"


def test_peers_above_the_domain_stand_alone() -> None:
    """An interface importing another interface is refused; the domain's are not."""
    graph = {
        "memoryd.mcp.results": {"memoryd.api.schemas": 1, "memoryd.http.public": 2},
        "memoryd.engine.keys": {"memoryd.storage.base": 1, "memoryd.core.ids": 2},
        "memoryd.storage.sql.kv": {"memoryd.config": 1},
        "memoryd.http.deps": {"memoryd.dashboard.routes": 1},
    }
    assert layer_violations(graph) == {
        ("memoryd.mcp.results", "memoryd.api.schemas"),
        ("memoryd.http.deps", "memoryd.dashboard.routes"),
    }


def test_every_module_has_a_layer() -> None:
    missing = []
    for module in _graph():
        if module in EXEMPT:
            continue
        try:
            layer_of(module)
        except LookupError:
            missing.append(module)
    assert not missing, f"modules with no layer (add them to LAYERS): {sorted(missing)}"


def test_no_import_cycle() -> None:
    graph = _graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_describe(graph, c) for c in found)


#: The other trees with importable Python: no loop anywhere, bench included.
OTHER_PACKAGES = (ROOT / "bench", ROOT / "tests")


def test_no_import_cycle_outside_memoryd() -> None:
    for package in OTHER_PACKAGES:
        graph = build_graph(package)
        assert len(graph) > 5, f"{package.name}/ was not scanned"
        found = strongly_connected({m: set(t) for m, t in graph.items()})
        assert not found, f"import cycles in {package.name}/:\n" + "\n".join(
            _describe(graph, c) for c in found
        )


def test_no_bench_module_imports_the_runner() -> None:
    """``bench/__main__.py`` only dispatches: what stages share lives in ``bench.output``."""
    graph = build_graph(ROOT / "bench")
    assert "bench.output" in graph["bench.load"]  # the scan sees bench's own imports
    importers = sorted(m for m, targets in graph.items() if "bench.__main__" in targets)
    assert not importers, f"modules importing bench.__main__: {importers}"


def test_no_layer_violation() -> None:
    graph = _graph()
    new = layer_violations(graph)
    lines = [
        f"{_where(graph, a, b)}: layer {layer_of(a)} -> layer {layer_of(b)}" for a, b in sorted(new)
    ]
    assert not new, "imports against the layers:\n" + "\n".join(lines)


_PROBE = """
import importlib, json, sys
loaded = {}
for name in sys.argv[1:]:
    before = set(sys.modules)
    importlib.import_module(name)
    loaded[name] = sorted(set(sys.modules) - before)
print(json.dumps(loaded))
"""


def _core_may_load(module: str) -> bool:
    if module.split(".")[0] in sys.stdlib_module_names:
        return True
    return module in EXEMPT or any(_matches(module, pattern) for pattern in CORE_MAY_LOAD)


def test_core_loads_no_third_party_module() -> None:
    """One fresh interpreter imports every core module in turn; each adds only allowed
    modules (what the interpreter loaded before the first import is not counted). A
    module a previous import already loaded is charged to that first importer."""
    core = sorted(m for m in discover(PACKAGE) if _matches(m, "memoryd.core"))
    assert "memoryd.core.extraction.table" in core
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *core],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, list[str]] = json.loads(done.stdout)
    bad = {name: [m for m in mods if not _core_may_load(m)] for name, mods in loaded.items()}
    bad = {name: mods for name, mods in bad.items() if mods}
    assert not bad, "core modules that load more than the stdlib:\n" + "\n".join(
        f"{name}: {mods}" for name, mods in bad.items()
    )
