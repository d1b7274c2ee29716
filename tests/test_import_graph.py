"""No import circles among our modules: the import graph is read from the sources with `ast`, and any strongly
connected component of more than one module (or a module that imports itself) fails, printed as a path.

What counts as an edge from module `m` to a module of ours:

- Every `import` and `from ... import` statement in `m`'s file, wherever it stands: at module level, inside a
  function or method, inside `try`, and inside `if TYPE_CHECKING:` too. A function-level import runs the first time
  the function does, so it is still a dependency; a `TYPE_CHECKING` import does not run, but the two modules still
  need each other's names to be read and checked, and a circle there is the same knot one annotation away from a
  real one. Relative imports are resolved against `m`'s package (for an `__init__.py`, the package itself).
- `import a.b.c` runs `a/__init__.py`, then `a/b/__init__.py`, then `a/b/c.py`, so it is an edge to `a`, `a.b` and
  `a.b.c` (a package is its `__init__.py`). `from a.b import c` is an edge to `a`, `a.b`, and to `a.b.c` as well
  when `a/b/c.py` (or `a/b/c/`) exists: the statement imports that submodule.
- Except the packages that contain `m`: Python has run (or is running) those before `m`'s first line, so an import
  from `m` never runs them; `import a.b.c` from `a.b.x` is an edge to `a.b.c` only. Taking a *name* out of one's
  own package does read its `__init__.py`, though: `from a.b import name` (or `from . import name`) in `a.b.x`,
  where `name` is not a submodule, is an edge to `a.b`, and a circle through an `__init__.py` that re-exports from
  `a.b.x` is real (the name may not be defined yet when `a.b.x` runs).

So a package whose `__init__.py` gathers its submodules (`from sites.hrdesk.routes import dashboard`, or
`from . import dashboard`) is not a circle by that alone: that statement is an edge to the submodule only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("computerops", "sites", "tasks", "adapter", "verifier", "replays")
"""Our top-level packages (pyproject.toml's `[tool.setuptools.packages.find]`)."""


def modules_under(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of ours by dotted name; a package is named by its `__init__.py`."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _ancestors(name: str) -> list[str]:
    """`a.b.c` -> `a`, `a.b`: the packages Python runs before the module."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _resolve(importer: str, is_package: bool, module: str | None, level: int) -> str:
    """The absolute name a `from` import names (`from ..x import y` in `a.b.c` names `a.x`)."""
    if level == 0:
        return module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imports_of(importer: str, is_package: bool, source: str, known: Mapping[str, object]) -> set[str]:
    """The modules of ours (names in `known`) that `importer`'s source imports, by the rules of this file's
    docstring."""
    own = set(_ancestors(importer)) | ({importer} if is_package else set())
    targets: set[str] = set()

    def reach(name: str) -> None:
        # `name` and the packages above it that `importer` does not sit in.
        targets.update(n for n in (*_ancestors(name), name) if n in known and n not in own)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                reach(alias.name)
        elif isinstance(node, ast.ImportFrom):
            package = _resolve(importer, is_package, node.module, node.level)
            reach(package)
            for alias in node.names:
                submodule = f"{package}.{alias.name}"
                if submodule in known:
                    reach(submodule)
                elif package in known:
                    targets.add(package)  # a name read from the package's `__init__.py`, one's own included
    targets.discard(importer)  # `from . import name` inside an `__init__.py` reads what it has defined so far
    return targets


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    modules = modules_under(root, packages)
    return {name: imports_of(name, path.name == "__init__.py", path.read_text(encoding="utf-8"), modules)
            for name, path in modules.items()}


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return sorted(components)


def cycle_through(graph: Mapping[str, Iterable[str]], component: list[str]) -> list[str]:
    """One circle inside a strongly connected component, as a path that starts and ends at its first module: the
    shortest way back (breadth first), so every step is an import the fix has to remove or move."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph[node]):
                if successor not in members:
                    continue
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if successor not in came_from:
                    came_from[successor] = node
                    following.append(successor)
        frontier = following
    raise AssertionError(f"{component} is not a strongly connected component")


def import_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """A circle for each strongly connected component of more than one module, or one that imports itself."""
    return [cycle_through(graph, component) for component in strongly_connected(graph)
            if len(component) > 1 or component[0] in graph[component[0]]]


def test_no_module_of_ours_imports_itself_back() -> None:
    graph = import_graph(ROOT, OURS)
    assert len(graph) > 200
    assert sum(len(targets) for targets in graph.values()) > 500  # the graph is read, not empty
    cycles = import_cycles(graph)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


CYCLIC: list[tuple[dict[str, str], list[str]]] = [
    # two modules importing each other: one inside a function, the other through `from . import x`
    ({"pkg/__init__.py": "", "pkg/a.py": "def f():\n    import pkg.b\n", "pkg/b.py": "from . import a\n"},
     ["pkg.a", "pkg.b", "pkg.a"]),
    # two modules importing each other, one of them only inside a function
    ({"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import g\n", "pkg/b.py": "def g():\n    import pkg.a\n"},
     ["pkg.a", "pkg.b", "pkg.a"]),
    # a relative `from . import x` back to the first
    ({"pkg/__init__.py": "", "pkg/a.py": "from .b import g\n", "pkg/b.py": "from . import a\n"},
     ["pkg.a", "pkg.b", "pkg.a"]),
    # an import under TYPE_CHECKING counts too
    ({"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import g\n",
      "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n"},
     ["pkg.a", "pkg.b", "pkg.a"]),
    # through a package's `__init__.py` that re-exports a submodule which takes a name from that `__init__.py`
    ({"pkg/__init__.py": "from pkg.a import f\nLIMIT = 3\n", "pkg/a.py": "from pkg import LIMIT\n"},
     ["pkg", "pkg.a", "pkg"]),
    # importing a submodule of another package runs that package's `__init__.py`
    ({"one/__init__.py": "from one.x import f\n", "one/x.py": "import two.y\n",
      "two/__init__.py": "", "two/y.py": "from one import f\n"},
     ["one", "one.x", "two.y", "one"]),
    # three in a row, from two packages up
    ({"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/a.py": "from ..c import h\n",
      "pkg/b.py": "from pkg.sub import a\n", "pkg/c.py": "from pkg import b\n"},
     ["pkg.b", "pkg.sub.a", "pkg.c", "pkg.b"]),
]


@pytest.mark.parametrize(("files", "expected"), CYCLIC)
def test_the_check_finds_a_circle(tmp_path: Path, files: dict[str, str], expected: list[str]) -> None:
    _write(tmp_path, files)
    packages = sorted({name.split("/")[0] for name in files})
    assert import_cycles(import_graph(tmp_path, packages)) == [expected]


ACYCLIC: list[dict[str, str]] = [
    # the same two modules, one way only
    {"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import g\n", "pkg/b.py": "def g():\n    import json\n"},
    # a package's `__init__.py` gathering its submodules, which import their siblings through the package's name
    {"pkg/__init__.py": "from pkg.routes import build\n",
     "pkg/routes/__init__.py": "from pkg.routes import one, two\nfrom . import three\ndef build(): ...\n",
     "pkg/routes/one.py": "from pkg.models import M\n", "pkg/routes/two.py": "import pkg.routes.one\n",
     "pkg/routes/three.py": "from .one import x\n", "pkg/models.py": "M = 1\n"},
    # a lower module used by two that do not know each other
    {"pkg/__init__.py": "", "pkg/base.py": "", "pkg/a.py": "from pkg import base\n", "pkg/b.py": "import pkg.base\n"},
]


@pytest.mark.parametrize("files", ACYCLIC)
def test_the_check_finds_no_circle_where_there_is_none(tmp_path: Path, files: dict[str, str]) -> None:
    _write(tmp_path, files)
    packages = sorted({name.split("/")[0] for name in files})
    graph = import_graph(tmp_path, packages)
    assert any(graph.values())  # it read the imports there are
    assert import_cycles(graph) == []
