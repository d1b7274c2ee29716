"""Every command refuses a bad value in the CLI's words: the option or file it names, on one line, with no traceback
and no pydantic text (model names, `[type=...]` codes, errors.pydantic.dev links) — issue 47. Each case is a command
with one bad value; what each must name is the option or file a person typed."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from computerops.cli.main import app

PYDANTIC = re.compile(r"Traceback|pydantic|validation error for|Field required|\[type=\w+|"
                      r"Extra inputs are not permitted|Value error,")
TASK = "helpdesk.solve-ticket@1"


def held_port() -> tuple[socket.socket, int]:
    """A loopback port something listens on (the caller closes it)."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    return held, int(held.getsockname()[1])


def cases(tmp: Path) -> list[tuple[list[str], str]]:
    not_a_lock = tmp / "not-a-lock.json"
    not_a_lock.write_text('{"a": 1}')
    not_yaml = tmp / "design.yaml"
    not_yaml.write_text("arms: [control\n")
    wrong_design = tmp / "wrong.yaml"
    wrong_design.write_text("colour: blue\n")
    return [
        (["run", "--endpoint", "scripted:oracle", "--tasks", TASK, "--fault-rate", "2", "--out", str(tmp / "r1")],
         "--fault-rate"),
        (["run", "--endpoint", "scripted:oracle", "--tasks", TASK, "--fault-rate", "-0.5", "--out", str(tmp / "r2")],
         "--fault-rate"),
        (["run", "--endpoint", "scripted:oracle", "--tasks", "helpdesk.no-such-task", "--out", str(tmp / "r3")],
         "helpdesk.no-such-task"),
        (["run", "--endpoint", "scripted:no-such-policy", "--tasks", TASK, "--out", str(tmp / "r4")],
         "no-such-policy"),
        (["run", "--endpoint", "scripted:oracle", "--tasks", TASK, "--temperature", "-1", "--out", str(tmp / "r5")],
         "--temperature"),
        (["run", "--endpoint", "scripted:oracle", "--tasks", TASK, "--seed", "-3", "--out", str(tmp / "r6")],
         "--seed"),
        (["experiment", "run", str(not_a_lock), "--out", str(tmp / "e1")], str(not_a_lock)),
        (["experiment", "freeze", str(not_yaml), "--out", str(tmp / "l1.json")], str(not_yaml)),
        (["experiment", "freeze", str(wrong_design), "--out", str(tmp / "l2.json")], "colour"),
        (["mock-llm", "--port", "99999", "--tasks", TASK], "--port"),
        (["mock-llm", "--port", "0", "--tasks", TASK], "--port"),
        (["serve", "--port", "70000"], "--port"),
        (["server", "--runs", str(tmp / "runs"), "--api-key-env", "COMPUTEROPS_SERVER_TOKEN"], "--api-key-env"),
        (["verify", str(tmp / "no-such-run")], "no-such-run"),
        (["replay", str(tmp / "no-such-run")], "no-such-run"),
    ]


@pytest.mark.parametrize("number", range(15))
def test_a_bad_value_is_refused_in_the_clis_words(number: int, tmp_path: Path) -> None:
    command, named = cases(tmp_path)[number]
    said = CliRunner().invoke(app, command)
    assert said.exit_code not in (0, None), said.output
    assert said.exception is None or isinstance(said.exception, SystemExit), repr(said.exception)
    assert not PYDANTIC.search(said.output), said.output
    assert named in said.output, said.output


def test_a_port_in_use_is_refused_naming_it_before_anything_starts() -> None:
    held, port = held_port()
    with held:
        said = CliRunner().invoke(app, ["mock-llm", "--port", str(port), "--tasks", TASK])
    assert said.exit_code == 2 and f"--port {port}: cannot listen" in said.output, said.output
    assert len([line for line in said.output.splitlines() if line.strip()]) == 1, said.output


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.replace("│", " ").split())


def test_the_help_lists_every_word_of_its_vocabularies() -> None:
    """`run --help` names every persistence arm, recovery and compaction policy and serving arm, and `mock-llm --help`
    every scripted policy: the help reads each vocabulary where it is defined (computerops/cli/words.py, without
    importing pydantic), so a vocabulary that grows cannot leave its help behind (the hand-written compaction help
    lacked model/1, mock-llm's once listed 7 of 14 policies)."""
    import importlib

    from computerops.cli import words
    for module, name in words.VOCABULARIES:  # the source read as Python computes it
        assert words.words(module, name) == tuple(getattr(importlib.import_module(module), name)) or \
            set(words.words(module, name)) == set(getattr(importlib.import_module(module), name)), name
    run_help = _help("run")
    for vocabulary in (words.PERSISTENCE, words.RECOVERY, words.COMPACTION, words.SERVING):
        assert [word for word in words.words(*vocabulary) if word not in run_help] == [], vocabulary
    mock_help = _help("mock-llm")
    assert [word for word in words.words(*words.SCRIPTED) if word not in mock_help] == []


def test_the_top_level_help_imports_no_pydantic() -> None:
    import subprocess
    import sys
    probe = ("import sys\nfrom computerops.cli.main import main\nsys.argv = ['computerops', '--help']\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\nprint('pydantic' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_problems_of_names_each_field_on_one_line_whatever_the_location() -> None:
    """Generated: any location and message give `<where>: <what>` per error, one line; a request's `body`/`query`/
    `path` part is dropped only when a field follows it, and a JSON decode error is named by its part alone."""
    from hypothesis import given
    from hypothesis import strategies as st
    from pydantic_core import ErrorDetails

    from computerops.core.problems import problems_of

    part = st.one_of(st.sampled_from(["body", "query", "path", "run_id", "bounds", "temperature"]),
                     st.integers(0, 9))
    error = st.builds(lambda loc, msg, kind: ErrorDetails(type=kind, loc=tuple(loc), msg=msg, input=None),
                      st.lists(part, min_size=1, max_size=4), st.text(min_size=1, max_size=30),
                      st.sampled_from(["missing", "greater_than_equal", "json_invalid", "string_type"]))

    @given(st.lists(error, min_size=1, max_size=4))
    def check(errors: list[ErrorDetails]) -> None:
        said = problems_of(errors, skip_first=("body", "query", "path"))
        assert "\\n" not in said and len(said.split("; ")) >= len(errors)
        for one in errors:
            loc = tuple(one["loc"])
            if one["type"] == "json_invalid":
                loc = loc[:1]
            if len(loc) > 1 and loc[0] in ("body", "query", "path"):
                loc = loc[1:]
            assert ".".join(map(str, loc)) + ": " in said

    check()


def test_a_ray_instance_that_does_not_start_is_refused_on_one_line(tmp_path: Path) -> None:
    """`--executor ray` where Ray's local instance cannot start (here: its temp folder cannot be made) is one line
    naming the option, not Ray's traceback; nothing is written. In a subprocess: Ray reads RAY_TMPDIR at start."""
    import os
    import subprocess
    import sys
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", "from computerops.cli.main import main; main()", "run",
                           "--endpoint", "scripted:oracle",
                           "--tasks", TASK, "--executor", "ray", "--out", str(out)],
                          env={**os.environ, "RAY_TMPDIR": "/proc/no-such-folder"},
                          capture_output=True, text=True, timeout=300, check=False)
    said = done.stdout + done.stderr
    errors = [line for line in said.splitlines() if line.strip() and "WARNING" not in line]  # Ray's own log line
    assert done.returncode == 2 and "Traceback" not in said, said
    assert len(errors) == 1 and "--executor ray" in errors[0], said
    assert not out.exists()
