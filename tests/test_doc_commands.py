"""Every command the README and the docs write in a bash block is classified (tests/doc_commands.yaml): the slow tier
runs the ones that can run here, as written, in a scratch copy of the checkout; the others say why not and which tests
run what they do (issue 47). A new or edited command fails the pure test below until it is classified."""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from doc_commands import ROOT, DocCommand, ManifestEntry, _units, commands_outside_shell_fences, doc_commands, manifest

COMMANDS = doc_commands()
MANIFEST = manifest()


def _suggested(command: DocCommand) -> str:
    return (f"- key: {command.key}\n  document: {command.document}\n  starts: {command.starts!r}\n"
            f"  status: runs | not_run\n  why: ...\n  minutes: N (runs) | covered_by: [tests/FILE.py::NAME] (not_run)")


def test_every_command_of_the_docs_is_classified_and_every_entry_is_a_command() -> None:
    assert len(COMMANDS) >= 40 and {c.document for c in COMMANDS} >= {"README.md", "docs/experiments.md"}
    missing = [c for c in COMMANDS if c.key not in MANIFEST]
    assert not missing, "classify in tests/doc_commands.yaml:\n" + "\n".join(_suggested(c) for c in missing)
    stale = sorted(set(MANIFEST) - {c.key for c in COMMANDS})
    assert not stale, f"tests/doc_commands.yaml lists commands no document writes any more: {stale}"


def test_every_test_an_entry_names_exists() -> None:
    named = {test for entry in MANIFEST.values() for test in entry.covered_by if test != ".ci/run"}
    assert named
    for test in named:
        path, name = test.split("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
        assert name in functions, f"tests/doc_commands.yaml names {test}, which does not exist"


def test_a_command_not_run_says_why_and_one_that_runs_has_a_bound() -> None:
    with pytest.raises(ValueError, match="minutes"):
        ManifestEntry(key="0" * 16, document="README.md", starts="x", status="runs", why="runs as it is written here")
    with pytest.raises(ValueError, match="minutes"):
        ManifestEntry(key="0" * 16, document="README.md", starts="x", status="not_run", why="a server this lacks here",
                      minutes=3)
    with pytest.raises(ValueError, match="covered_by"):
        ManifestEntry(key="0" * 16, document="README.md", starts="x", status="not_run", why="a server this lacks here",
                      covered_by=["tests/test_x.py"])
    with pytest.raises(ValueError):
        ManifestEntry(key="0" * 16, document="README.md", starts="x", status="not_run", why="too short")


def test_a_block_is_cut_into_commands_with_their_continuations() -> None:
    block = ("# a comment line is left out\n"
             "a --one \\\n    --two   \n"
             "b && \\\n  c | \n  d\n"
             "\n"
             "e   # a trailing comment stays\n"
             "# another\n"
             "f &&\n"
             "  g\n")
    assert _units(block) == ["a --one \\\n    --two", "b && \\\n  c |\n  d", "e   # a trailing comment stays",
                             "f &&\n  g"]


def test_every_shell_fence_is_read_and_other_languages_are_not(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("```bash\nbash one.sh\n```\n\n```yaml\nkey: value\n```\n", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text("text\n```sh\nsh two\n```\n```console\nthree\n```\n```\nplain\n```\n"
                                            "1. a step\n\n   ```bash\n   four \\\n     --five\n   ```\n",
                                            encoding="utf-8")
    (tmp_path / "docs" / "b.md").write_text("```zsh\nsix\n```\n", encoding="utf-8")
    found = [(c.document, c.block, c.unit, c.text) for c in doc_commands(tmp_path)]
    assert found == [("README.md", 1, 1, "bash one.sh"), ("docs/a.md", 1, 1, "sh two"), ("docs/a.md", 2, 1, "three"),
                     ("docs/a.md", 3, 1, "four \\\n  --five"), ("docs/b.md", 1, 1, "six")]


def test_no_document_writes_a_command_where_no_test_reads_it(tmp_path: Path) -> None:
    assert commands_outside_shell_fences() == [], "put these commands in a ```bash fence (then classify them)"
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("```\n.venv/bin/computerops demo\n```\n```text\nDIR/manifest.json  a file\n"
                                        "```\n```yaml\nkey: value\n```\n```bash\n$ pip install x\nbash ok.sh\n```\n"
                                        "```python\nimport os\n```\n```\n   computerops run --tasks x\n```\n",
                                        encoding="utf-8")
    assert commands_outside_shell_fences(tmp_path) == [
        "README.md: .venv/bin/computerops demo", "README.md: $ pip install x", "README.md: computerops run --tasks x"]


# --- the slow tier runs them --------------------------------------------------------------------------------------

RUNNING = [document for document in dict.fromkeys(c.document for c in COMMANDS)
           if any(MANIFEST[c.key].status == "runs" for c in COMMANDS if c.document == document and c.key in MANIFEST)]
_RAN: set[str] = set()
"""Commands run by an earlier document's test in this session: a document that writes the same command again (the
security experiment in README.md and docs/security.md) does not run it twice."""


def _scratch_copy(into: Path) -> Path:
    """The checkout's files (tracked, and untracked ones git does not ignore) copied into `into`, with .venv and
    .cache (the real model) linked: what a reader who cloned it and ran the setup has."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for linked in (".venv", ".cache"):
        if (ROOT / linked).exists():
            (into / linked).symlink_to(ROOT / linked)
    return into


def _script(commands: list[DocCommand]) -> str:
    """One shell for a document's commands, in order, each announced (a failure names the last one announced)."""
    lines = ["set -euo pipefail"]
    for command in commands:
        lines.append(f"echo '>>> {command.key} {command.document} block {command.block} command {command.unit}'")
        lines.append(command.text)
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@pytest.mark.parametrize("document", RUNNING)
def test_the_commands_that_can_run_here_run_as_written(document: str, tmp_path: Path) -> None:
    commands = [c for c in COMMANDS if c.document == document and MANIFEST[c.key].status == "runs"]
    if all(c.key in _RAN for c in commands):
        pytest.skip(f"every command of {document} ran in an earlier document's test")
    minutes = sum(MANIFEST[c.key].minutes or 0 for c in commands)
    scratch = _scratch_copy(tmp_path / "checkout")
    log = tmp_path / "commands.log"
    env = {**os.environ, "PATH": f"{scratch / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    with log.open("w", encoding="utf-8") as out:
        process = subprocess.Popen(["bash", "-c", _script(commands)], cwd=scratch, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = process.wait(timeout=minutes * 60)
        except subprocess.TimeoutExpired:
            code = None
        finally:  # a server one command started in the background goes with the shell
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = log.read_text(encoding="utf-8", errors="replace")
    last = [line for line in text.splitlines() if line.startswith(">>> ")][-1:]
    assert code == 0, (f"{document}: {'timed out after ' + str(minutes) + ' min' if code is None else f'exit {code}'}"
                       f" at {last}\n{text[-4000:]}")
    _RAN.update(c.key for c in commands)
