"""The tiers select what tests/tiers.py says they do, checked over the items pytest collects: the README's inner loop
(`-m "not browser and not real_model"`, which replaces addopts' `-m 'not slow'`) holds no slow, browser or real-model
test, and every slow test is in the browser tier (issue 47)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

TESTS = Path(__file__).parent
# Modules holding slow, browser and real-model tests, and pure ones: enough to see each tier's selection.
MODULES = ["test_blind.py", "test_real_model.py", "test_report_words.py", "test_dead_primary_at_start.py"]


def collected(*marker: str) -> set[str]:
    """The node ids `pytest --collect-only` selects from MODULES with the given `-m` (none: addopts' own)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *(["-m", marker[0]] if marker else []), *(str(TESTS / m) for m in MODULES)],
                          capture_output=True, text=True, cwd=TESTS.parent, timeout=600, check=False)
    assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_not_browser_holds_no_slow_or_browser_test() -> None:
    """`-m "not browser"` (the inner loop is it with `and not real_model`) selects the pure tests and no slow one:
    every slow test is in the browser tier. One collection (each takes tens of seconds)."""
    selected = collected("not browser")
    assert any("test_report_words.py" in item for item in selected), selected
    assert not [item for item in selected if any(name in item for name in (
        "test_the_whole_blind_set", "test_dead_primary_at_start.py"))], selected


def test_the_measured_seconds_per_module_name_only_modules_that_exist() -> None:
    # The order test runners are handed modules in (tests/conftest.py): a renamed or removed module left in the file
    # would leave its successor counted as quick and started last.
    from conftest import _measured_seconds

    tests = Path(__file__).parent
    listed = _measured_seconds()
    assert listed and all(seconds >= 0 for seconds in listed.values())
    missing = [module for module in listed if not (tests.parent / module).is_file()]
    assert not missing, f"tests/module_seconds.json names modules that no longer exist: {missing}"


def test_a_session_ends_with_its_tests_time_cpus_and_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The figure README.md states for the inner loop is the line any session ends with (tests/conftest.py): the
    tests run, the wall time from the session's start, the CPUs and the load average at both ends."""
    import conftest

    monkeypatch.delenv("COMPUTEROPS_MODULE_SECONDS_OUT", raising=False)  # no module seconds written after the line
    for name, fresh in (("_MODULE_SECONDS", {}), ("_RUN", set()), ("_SESSION", {})):
        monkeypatch.setattr(conftest, name, fresh)
    now, loads = iter([100.0, 100.0 + 731.0]), iter([0.25, 1.94])
    monkeypatch.setattr(conftest, "_now", lambda: next(now))
    monkeypatch.setattr(conftest, "_load", lambda: next(loads))
    cpu = iter([(1000.0, 5000.0), (1000.0 + 1170.0, 5000.0 + 1462.0)])
    monkeypatch.setattr(conftest, "_CPU", {})
    monkeypatch.setattr(conftest, "_cpu", lambda: next(cpu))
    conftest.pytest_sessionstart(SimpleNamespace(config=SimpleNamespace(option=SimpleNamespace())))  # type: ignore[arg-type]
    for nodeid, when in (("t.py::a", "setup"), ("t.py::a", "call"), ("t.py::b", "setup"), ("t.py::b", "call"),
                         ("t.py::c", "setup")):  # c skipped in its setup: not run
        conftest.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, when=when, duration=1.0))  # type: ignore[arg-type]
    lines: list[str] = []
    conftest.pytest_terminal_summary(SimpleNamespace(section=lambda _: None, write_line=lines.append,
                                                     config=SimpleNamespace()))
    assert re.fullmatch(rf"session: 2 tests in 12 min 11 s on {os.cpu_count()} CPUs, load average 0.2 at the start "
                        r"and 1.9 at the end \(\d{4}-\d\d-\d\d UTC\)", lines[-1]), lines
    assert lines[-2] == f"CPU: 80% busy over the session on {os.cpu_count()} CPUs (1,170 of 1,462 CPU seconds)", lines
