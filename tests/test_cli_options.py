"""Every option of the command line has one meaning: an option name taken by several commands is a flag in all of
them or takes a value in all of them, of the same kind (a path, a number, text), and an option name is never a flag
in one command and a file in another (`--json` prints JSON; `--json-out FILE` writes it)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import typer

from computerops.cli.main import app


def _options(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, str, Any]]:
    """(command path, option name, the click option) for every option of every command under `command`."""
    if hasattr(command, "commands"):
        return [found for name, sub in command.commands.items() for found in _options(sub, (*path, name))]
    return [(" ".join(path), name, param) for param in command.params if hasattr(param, "is_flag")
            for name in (*param.opts, *param.secondary_opts)]


def test_the_walk_sees_every_command_and_option() -> None:
    found = _options(typer.main.get_command(app))
    commands = {command for command, _, _ in found}
    assert {"run", "report", "demo", "tasks audit", "experiment freeze", "experiment report"} <= commands
    assert len(found) > 80


def test_every_option_name_has_one_meaning_across_commands() -> None:
    kinds: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for command, name, option in _options(typer.main.get_command(app)):
        kinds[name]["flag" if option.is_flag else "value"].append(command)
    mixed = {name: dict(by_kind) for name, by_kind in kinds.items() if len(by_kind) > 1}
    assert not mixed, f"an option is a flag in some commands and takes a value in others: {mixed}"


def test_a_json_or_markdown_option_prints_and_its_out_form_writes_a_file() -> None:
    for command, name, option in _options(typer.main.get_command(app)):
        if name in ("--json", "--markdown"):
            assert option.is_flag, f"{command} {name} takes a value: name it {name}-out"
        if name.endswith("-out"):
            assert not option.is_flag, f"{command} {name} is a flag"


def test_an_option_that_takes_a_value_takes_the_same_kind_of_value_everywhere() -> None:
    types: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for command, name, option in _options(typer.main.get_command(app)):
        if not option.is_flag:
            types[name][str(option.bare_type)].append(command)
    mixed = {name: dict(by_type) for name, by_type in types.items() if len(by_type) > 1}
    assert not mixed, f"an option takes different kinds of value in different commands: {mixed}"
