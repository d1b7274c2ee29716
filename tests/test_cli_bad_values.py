"""Every command of the CLI, found by walking the typer app (a new command or option is covered without editing this
file), given bad values generated from its own declarations: a number outside its declared range or no number, a word
outside its choices, an input file or folder that does not exist, an empty folder or a file of another kind where a
run, lock, design or corpus is read, a task id that is unknown or given twice. Each must be refused (exit code not 0)
naming the option or the file, with no traceback and no pydantic text (issue 47). Nothing is started: a command that
accepted the value and went on to launch Chromium (tests/conftest.py fails it) or listen on a port fails the case.

Every number option declares its range (typer's min/max), so an out-of-range value is refused by the command line
itself, in its words, before anything runs (ANY_NUMBER would list an exception, with its reason)."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
import typer
from typer.testing import CliRunner

from computerops.cli import words
from computerops.cli.main import app

PYDANTIC = re.compile(r"Traceback|pydantic|validation error for|Field required|\[type=\w+|Extra inputs are not "
                      r"permitted")
"""pydantic's own text. Not "Value error,": typer 0.29 coerces a choice through pydantic and says "Invalid value for
'--tool-mode': Value error, 'x' is not one of 'auto', 'native', 'text'." (one line, naming the option)."""
TASK = "helpdesk.solve-ticket@1"
FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "before-formats"
DESIGN = Path(__file__).parent.parent / "experiments" / "tool-ladder-map-ci.yaml"
"""A shipped design that plans a noise floor (so `experiment noise-floor` reads its lock through)."""
WRITTEN = {"--out", "--html", "--json-out", "--markdown-out"}
"""Path options a command writes (never read): a missing path is what they want."""
WRITTEN_BY = {("server", "--runs"), ("corpus record", "--dir")}
"""(command, option) that create the folder they name when it is missing."""
ANY_NUMBER: dict[tuple[str, str], str] = {}
"""(command, option) of a number option that declares no range, with the reason any whole number is meaningful."""
LISTS = {("run", "--endpoint"): ("scripted:", words.SCRIPTED), ("run", "--persistence"): ("", words.PERSISTENCE),
         ("run", "--serving"): ("", words.SERVING)}
"""(command, option) taking a comma-separated list of a vocabulary's words (computerops/cli/words.py), with the
prefix of each: tried with a word given twice and an unknown word."""
UNREACHED = {("experiment report", "--noise-floor"): "read only after its run is read as an experiment run, and no "
                                                     "experiment run is kept as a fixture"}
"""(command, parameter) whose bad values are not tried, with the reason."""


class Started(BaseException):
    """A command went past its checks and started a server (BaseException: no command's handler catches it)."""


def commands() -> list[tuple[str, Any]]:
    """(command path, click command) for every command of the app, subcommands of groups included."""
    found: list[tuple[str, Any]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, (*path, name))
        else:
            found.append((" ".join(path), command))

    walk(typer.main.get_command(app), ())
    return found


def annotation(param: Any) -> Any:
    """The parameter's type, `X | None` read as X."""
    hint = param.type_descriptor.annotation
    if get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(arg for arg in get_args(hint) if arg is not type(None))
    return hint


def name(param: Any) -> str:
    return str(param.opts[0]) if param.param_type_name == "option" else str(param.name)


def given(param: Any, value: str) -> list[str]:
    return [param.opts[0], value] if param.param_type_name == "option" else [value]


CONTEXT = {"run": ["--endpoint", "scripted:oracle"]}
"""Options a command needs before it reads the others (a new run names its endpoint), given unless one is tested or
`--resume` is (it takes them from the run)."""


def fillers(path: str, command: Any, tested: Any, tmp: Path, lock: Callable[[], Path]) -> list[str]:
    """Good values for the command's other required parameters (a run, a design or a lock for an input, the lowest
    number allowed), its CONTEXT, and a new path for each path it writes (but with `--resume`, which continues a run
    in place)."""
    context = CONTEXT.get(path, [])
    args: list[str] = [] if name(tested) in ("--resume", *context[::2]) else list(context)
    for param in command.params:
        if param is tested:
            continue
        hint = annotation(param)
        if hint is Path and name(param) in WRITTEN and (param.required or name(tested) != "--resume"):
            args += given(param, str(tmp / f"new-{param.name}"))
        elif not param.required:
            continue
        elif hint is Path:
            args += given(param, str(lock() if param.name == "lock" else DESIGN if param.name == "file"
                                     else FIXTURE_RUN))
        elif hint in (int, float):
            args += given(param, str(param.min if param.min is not None else 1))
        else:
            args += given(param, TASK)
    return args


def bad_values(path: str, param: Any, tmp: Path | None) -> list[tuple[str, str]]:
    """(value, what the refusal must name) for one parameter, from its declaration; the files and folders are made
    in `tmp` (None: only listed, for the parametrization)."""
    hint = annotation(param)
    if getattr(param, "is_flag", False) or name(param) == "--help":
        return []
    if hint in (int, float):
        cases = [("many", name(param))]
        step = 1 if hint is int else 0.5
        if param.min is not None:
            cases.append((str(param.min - step), name(param)))
        if param.max is not None:
            cases.append((str(param.max + step), name(param)))
        return cases
    if get_origin(hint) is Literal:
        return [("no-such-choice", name(param))]
    if hint is Path and name(param) not in WRITTEN and (path, name(param)) not in WRITTEN_BY:
        folder = tmp or Path("unmade")
        missing, empty, garbage = folder / "no-such-input", folder / "empty-folder", folder / "garbage.json"
        if tmp is not None:
            empty.mkdir(exist_ok=True)
            garbage.write_text("not what any command reads\n", encoding="utf-8")
        return [(str(missing), str(missing)), (str(empty), str(empty)), (str(garbage), str(garbage))]
    if name(param) == "--tasks":
        return [(f"{TASK},{TASK}", TASK), ("helpdesk.no-such-task", "helpdesk.no-such-task")]
    if (path, name(param)) in LISTS:
        prefix, vocabulary = LISTS[(path, name(param))]
        word = words.words(*vocabulary)[0]
        return [(f"{prefix}{word},{word}", name(param)), (f"{prefix}no-such-word", name(param))]
    return []


def test_every_number_option_declares_its_range() -> None:
    """A number option without min (and max, where there is one) leaves its range to a check further in, which a bad
    value reaches only after work has started (or never: `--fault-rate 2` reached pydantic)."""
    open_ended = [f"{path} {name(param)}" for path, command in commands() for param in command.params
                  if annotation(param) in (int, float) and param.min is None and (path, name(param)) not in ANY_NUMBER]
    assert not open_ended, f"number options with no declared range (typer.Option(min=..., max=...)): {open_ended}"


CASES = [(path, name(param), index) for path, command in commands() for param in command.params
         if (path, name(param)) not in UNREACHED for index in range(len(bad_values(path, param, None)))]
"""(command path, parameter, which of its bad values): the values themselves are made per test, in its temp folder."""


def test_the_walk_sees_the_commands_and_the_kinds_of_bad_value() -> None:
    paths = {path for path, _, _ in CASES}
    assert {"run", "mock-llm", "experiment run", "verify", "compare", "tasks check", "subset reserve"} <= paths
    assert ("run", "--tasks", 0) in CASES and ("experiment run", "lock", 2) in CASES
    assert len(CASES) > 60


@pytest.fixture(scope="module")
def lock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], Path]]:
    """A lock frozen from the shipped design, made the first time a case needs one."""
    made: list[Path] = []

    def frozen() -> Path:
        if not made:
            out = tmp_path_factory.mktemp("lock") / "ci.lock.json"
            done = CliRunner().invoke(app, ["experiment", "freeze", str(DESIGN), "--out", str(out)])
            assert done.exit_code == 0, done.output
            made.append(out)
        return made[0]

    yield frozen


@pytest.mark.parametrize(("path", "option", "index"), CASES)
def test_a_generated_bad_value_is_refused_naming_it(path: str, option: str, index: int, tmp_path: Path,
                                                    lock: Callable[[], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    def started(*_: Any, **__: Any) -> None:
        raise Started(f"{path}: started a server with {option} bad")

    monkeypatch.setattr(uvicorn, "run", started)
    command = dict(commands())[path]
    param = next(param for param in command.params if name(param) == option)
    value, named = bad_values(path, param, tmp_path)[index]
    argv = [*path.split(), *given(param, value), *fillers(path, command, param, tmp_path, lock)]
    said = CliRunner().invoke(app, argv, env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert said.exit_code not in (0, None), f"{argv} accepted:\n{said.output}"
    assert said.exception is None or isinstance(said.exception, SystemExit), repr(said.exception)
    assert not PYDANTIC.search(said.output), said.output
    assert named in said.output, f"{argv}: the refusal does not name {named}:\n{said.output}"
