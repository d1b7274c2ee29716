"""Every test function of tests/ carries the tier markers of what it does, read from its source (ast: no module is
imported, so this takes a second, whatever a module builds at import): a test that launches Chromium itself — in its
body, a helper of its module, a fixture it takes (here or in tests/conftest.py) or a function of the project that
starts it (found by name: `library_launchers`) — is in the browser tier (marked, or
given the `browser` fixture, which tests/conftest.py marks), and so is every slow and real-model test (issue 47:
a slow test launching Chromium unmarked failed every `scripts/test.sh --slow`). tests/conftest.py fails an unmarked
test that launches Chromium in its own process when it runs; this finds it in a tier the inner loop never runs."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).parent
LAUNCHES = frozenset({"launch_browser", "async_playwright", "sync_playwright", "launch_persistent_context"})
"""Calls that start Chromium (adapter/browser.py's launcher, Playwright's own entry points)."""
MARKED_BROWSER = frozenset({"browser", "slow"})
"""Markers that put a test in the browser tier: its own, and `slow` (tests/conftest.py adds `browser` to it)."""


@dataclass
class Found:
    module: str
    name: str
    marks: set[str]
    fixtures: set[str]
    launches: bool
    path: list[str] = field(default_factory=list)


def _marks(decorators: list[ast.expr], aliases: dict[str, set[str]] | None = None) -> set[str]:
    """`pytest.mark.X` names among decorators (called or not), or a module name bound to one (`browser_test =
    pytest.mark.browser`)."""
    found = set()
    for decorator in decorators:
        node = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark":
            found.add(node.attr)
        elif isinstance(node, ast.Name) and aliases and node.id in aliases:
            found |= aliases[node.id]
    return found


def _aliases(tree: ast.Module) -> dict[str, set[str]]:
    """Module names bound to markers: `browser_test = pytest.mark.browser`, or a decorator function of the module that
    applies them (`return pytest.mark.slow(pytest.mark.browser(test))`)."""
    found: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id != "pytestmark" and _marks([node.value]):
                    found[target.id] = _marks([node.value])
        elif isinstance(node, ast.FunctionDef) and not node.name.startswith("test"):
            applied = _marks([sub for sub in ast.walk(node) if isinstance(sub, ast.Attribute)])
            if applied:
                found[node.name] = applied
    return found


def _module_marks(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            value = node.value
            return _marks(list(value.elts) if isinstance(value, ast.List | ast.Tuple) else [value])
    return set()


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.setdefault(node.name, node)
    return found


def _names(function: ast.AST) -> set[str]:
    """The names a function calls (a method's or a module attribute's last part)."""
    return {node.func.id if isinstance(node.func, ast.Name) else node.func.attr for node in ast.walk(function)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)}


PACKAGES = ("computerops", "adapter", "tasks", "verifier", "replays", "sites")


def library_launchers() -> set[str]:
    """The project's functions that start Chromium, directly or through others: by name, over the functions whose name
    is defined once in the project (a name defined twice, or a dunder, is left out rather than guessed at), so a
    test calling `run_blind` or `execute_run` is seen to start Chromium."""
    root = TESTS.parent
    defined: dict[str, int] = {}
    calls: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    defined[node.name] = defined.get(node.name, 0) + 1
                    calls.setdefault(node.name, set()).update(_names(node))
    unique = {name for name, count in defined.items() if count == 1 and not name.startswith("__")}
    reach = set(LAUNCHES)
    grew = True
    while grew:
        grew = False
        for name in unique - reach:
            if calls[name] & reach:
                reach.add(name)
                grew = True
    return reach


def _launching(functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], outer: set[str]) -> set[str]:
    """The names of `functions` that start Chromium, directly or through one another (or a name in `outer`)."""
    launching = {name for name, node in functions.items() if _names(node) & (LAUNCHES | outer)}
    grew = True
    while grew:
        grew = False
        for name, node in functions.items():
            if name not in launching and _names(node) & launching:
                launching.add(name)
                grew = True
    return launching


def read_tests(source: str, module: str, conftest_launching: set[str]) -> list[Found]:
    """Every test function of a module's source, with its markers (module, class, function), the fixtures it takes
    and whether it starts Chromium (its body, a helper or a fixture of its module, a conftest fixture)."""
    tree = ast.parse(source)
    functions = _functions(tree)
    launching = _launching(functions, conftest_launching)
    module_marks = _module_marks(tree)
    found = []
    scopes: list[tuple[set[str], list[ast.stmt]]] = [(set(), tree.body)]
    aliases = _aliases(tree)
    scopes += [(_marks(node.decorator_list, aliases), node.body) for node in tree.body
               if isinstance(node, ast.ClassDef)]
    for class_marks, body in scopes:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                fixtures = {arg.arg for arg in node.args.args}
                starts = bool((_names(node) | fixtures) & (LAUNCHES | launching | conftest_launching))
                found.append(Found(module, node.name, module_marks | class_marks | _marks(node.decorator_list, aliases),
                                  fixtures, starts))
    return found


REFUSED_BEFORE_CHROMIUM = {
    "test_concurrency.py::test_execute_run_refuses_a_concurrency_below_one_before_writing_anything":
        "execute_run refuses concurrency 0 before it starts anything",
    "test_real_servers.py::test_a_base_url_without_v1_against_a_json_404_is_refused_with_a_hint":
        "execute_run refuses the endpoint at its probe, before Chromium",
}
"""Tests that call a function that starts Chromium only to see it refuse first, with the reason (tests/conftest.py
fails them if they ever start it)."""


def unmarked(tests: list[Found]) -> list[str]:
    """The tests that start Chromium outside the browser tier (no marker that puts them there, no `browser`
    fixture)."""
    return [f"{t.module}::{t.name}" for t in tests
            if t.launches and not t.marks & MARKED_BROWSER and "browser" not in t.fixtures
            and f"{t.module}::{t.name}" not in REFUSED_BEFORE_CHROMIUM]


def _conftest_launching() -> set[str]:
    functions = _functions(ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8")))
    return _launching(functions, set()) - {"browser"}  # the browser fixture's tests are marked by conftest


def test_every_test_that_starts_chromium_is_in_the_browser_tier() -> None:
    library = library_launchers()
    assert {"run_blind", "execute_run", "check_tasks", "audit_tasks"} <= library, library
    outer = _conftest_launching() | library
    found = [t for path in sorted(TESTS.glob("test_*.py"))
             for t in read_tests(path.read_text(encoding="utf-8"), path.name, outer)]
    assert len(found) > 1000 and any("browser" in t.fixtures for t in found)
    assert unmarked(found) == []


def test_the_rule_finds_a_launch_however_it_is_reached() -> None:
    """Generated from the ways a test reaches Chromium: each unmarked is found, each marked passes."""
    reaches = {
        "direct": "async def test_x():\n    async with async_playwright() as p:\n        pass\n",
        "helper": "async def _open():\n    return await launch_browser(p)\n\nasync def test_x():\n    await _open()\n",
        "fixture": "import pytest\n@pytest.fixture\nasync def chrome():\n    yield await launch_browser(p)\n\n"
                   "async def test_x(chrome):\n    pass\n",
        "conftest": "def test_x(chrome):\n    pass\n",
        "library": "async def test_x():\n    await run_blind(cases)\n",
        "class": "class TestX:\n    def test_x(self):\n        sync_playwright()\n",
    }
    for how, source in reaches.items():
        assert unmarked(read_tests(source, how, {"chrome", "run_blind"})) == [f"{how}::test_x"], how
        for marker in MARKED_BROWSER:
            marked = f"import pytest\npytestmark = [pytest.mark.{marker}]\n" + source
            assert unmarked(read_tests(marked, how, {"chrome", "run_blind"})) == [], (how, marker)
        decorated = re.sub(r"^( *)((?:async )?def test_x)", r"\1@chromium\n\1\2", source, flags=re.MULTILINE)
        aliased = "import pytest\nchromium = pytest.mark.browser\n" + decorated
        assert unmarked(read_tests(aliased, how, {"chrome", "run_blind"})) == [], (how, "alias")
    assert unmarked(read_tests("def test_x(browser):\n    launch_browser(p)\n", "m", set())) == []
    assert unmarked(read_tests("def test_x():\n    assert 1\n", "m", set())) == []


def test_the_readme_and_the_tiers_write_the_same_inner_loop() -> None:
    """README.md's inner loop is tests/tiers.py's expression; no other `pytest -m` is called the inner loop there."""
    from tiers import INNER_LOOP
    readme = (TESTS.parent / "README.md").read_text(encoding="utf-8")
    loops = re.findall(r'pytest -m "([^"]+)"` is the inner loop', " ".join(readme.split()))
    assert loops == [INNER_LOOP], loops
    assert f'`pytest -m "{INNER_LOOP}"` is the inner loop' in " ".join((TESTS / "tiers.py").read_text().split())
