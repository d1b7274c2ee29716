"""The command line: clear errors for bad input, nothing overwritten, and the two servers it starts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.core.binding import TENANT_COOKIE
from tasks import load_catalog

runner = CliRunner()
CLI = [sys.executable, "-c", "from computerops.cli.main import main; main()"]


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, " ".join(result.output.split())


def test_tasks_list_shows_every_task_with_its_hash() -> None:
    code, output = invoke("tasks", "list")
    assert code == 0
    for task in load_catalog().values():
        assert task.id in output and task.sha256[:12] in output


def test_an_unknown_task_id_is_named(tmp_path: Path) -> None:
    out = str(tmp_path / "r")
    code, output = invoke("run", "--tasks", "helpdesk.nope", "--endpoint", "scripted:oracle", "--out", out)
    assert code == 2 and "unknown task ids: helpdesk.nope" in output


def test_an_unknown_scripted_policy_is_named(tmp_path: Path) -> None:
    code, output = invoke("run", "--endpoint", "scripted:oracle,wizard", "--out", str(tmp_path / "r"))
    assert code == 2 and "unknown scripted policy 'wizard'" in output


def test_a_run_needs_exactly_one_endpoint(tmp_path: Path) -> None:
    assert invoke("run", "--out", str(tmp_path / "r"))[0] == 2
    code, output = invoke("run", "--endpoint", "scripted:oracle", "--base-url", "http://127.0.0.1:1/v1",
                          "--out", str(tmp_path / "r"))
    assert code == 2 and "not both" in output


def test_an_unreachable_endpoint_fails_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "r"
    code, output = invoke("run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(out))
    assert code == 2 and "did not answer GET /models" in output
    assert not out.exists()


def test_a_missing_api_key_variable_is_named(tmp_path: Path) -> None:
    os.environ.pop("COMPUTEROPS_TEST_NO_SUCH_KEY", None)
    code, output = invoke("run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                          "--api-key-env", "COMPUTEROPS_TEST_NO_SUCH_KEY", "--out", str(tmp_path / "r"))
    assert code == 2 and "COMPUTEROPS_TEST_NO_SUCH_KEY" in output


def test_an_existing_run_directory_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "r"
    out.mkdir()
    (out / "keep.txt").write_text("earlier evidence")
    code, output = invoke("run", "--endpoint", "scripted:oracle", "--out", str(out))
    assert code == 2 and "already exists and is not empty" in output
    assert (out / "keep.txt").read_text() == "earlier evidence"


def test_a_task_list_longer_than_any_file_name_is_read_as_task_ids(tmp_path: Path) -> None:
    ids = list(load_catalog())
    out = tmp_path / "r"
    out.mkdir()
    (out / "keep.txt").write_text("earlier evidence")
    listed = ",".join(ids)
    assert len(listed) > 255  # longer than a file name may be: the OS refuses to look it up (ENAMETOOLONG)
    code, output = invoke("run", "--tasks", listed, "--endpoint", "scripted:oracle", "--out", str(out))
    assert code == 2 and "already exists and is not empty" in output, output  # the ids were read; then --out


def test_report_and_replay_refuse_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    for command in ("report", "replay"):
        code, output = invoke(command, str(tmp_path))
        assert code == 2 and "is not a run directory" in output


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def background(*args: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)


def wait_until_up(url: str, deadline_s: float = 60.0) -> None:  # generous: CI machines can be loaded
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not come up within {deadline_s} s")


def test_mock_llm_serves_an_openai_compatible_scripted_endpoint() -> None:
    port = free_port()
    # A task it knows answers by its own control (the whole catalog, the default, takes tens of seconds to load).
    with background("mock-llm", "--policy", "give-up", "--port", str(port), "--tasks", "helpdesk.solve-ticket@1"):
        base = f"http://127.0.0.1:{port}/v1"
        wait_until_up(f"{base}/models")
        models = httpx.get(f"{base}/models", timeout=30.0).json()
        assert [m["id"] for m in models["data"]] == ["scripted:give-up"]
        reply = httpx.post(f"{base}/chat/completions", json={
            "model": "whatever", "messages": [{"role": "user", "content": "Task: anything"}],
            "tools": [{"type": "function", "function": {"name": "done", "parameters": {}}}],
        }, timeout=30.0).json()
        assert reply["model"] == "scripted:give-up"
        call = reply["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == "done" and '"success": false' in call["arguments"]



def test_mock_llm_refuses_tasks_it_cannot_find_before_it_takes_the_port() -> None:
    result = CliRunner().invoke(app, ["mock-llm", "--tasks", "helpdesk.no-such-task", "--port", str(free_port())])
    assert result.exit_code == 2 and "unknown task ids: helpdesk.no-such-task" in result.output

def test_serve_lets_a_person_enter_a_fresh_tenant_once_and_never_prints_nor_logs_its_token() -> None:
    port = free_port()
    with background("serve", "--port", str(port)) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "/_enter/" in line, line
        enter = line.split("Open ", 1)[1].split()[0]
        wait_until_up(f"http://127.0.0.1:{port}/healthz")
        stranger = httpx.get(f"http://127.0.0.1:{port}/helpdesk/tickets", timeout=30.0)
        assert stranger.status_code == 401 and "T-2001" not in stranger.text
        with httpx.Client(timeout=30.0) as person:
            page = person.get(enter, follow_redirects=True)
            assert page.status_code == 200 and "Helpdesk" in page.text
            assert "T-2005" in person.get(f"http://127.0.0.1:{port}/helpdesk/tickets").text
            token = person.cookies[TENANT_COOKIE]
        late = httpx.get(enter, timeout=30.0, follow_redirects=False)  # the address someone copied from the log
        assert late.status_code == 403 and "set-cookie" not in late.headers
        process.terminate()
        written = line + process.communicate(timeout=10)[0]
    assert token and token not in written and "/_enter/" in written


@pytest.mark.parametrize(("base_url", "said"), [
    ("http://[::1", "is not a valid URL"), ("http://127.0.0.1:99999/v1", "is not a valid URL"),
    ("http://127.0.0.1:abc/v1", "is not a valid URL"), ("ftp://127.0.0.1/v1", "must start with http"),
    ("127.0.0.1:8080/v1", "must start with http"), ("http:///v1", "names no host"),
    ("http://127.0.0.1:8080/v1?x=1", "query or fragment"),
])
def test_a_malformed_base_url_is_one_line_before_anything_is_written(tmp_path: Path, base_url: str,
                                                                      said: str) -> None:
    out = tmp_path / "r"
    code, output = invoke("run", "--base-url", base_url, "--model", "m", "--out", str(out))
    assert code == 2 and said in output and "Traceback" not in output
    assert not out.exists()


def test_an_unwritable_out_directory_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, output = invoke("run", "--tasks", "helpdesk.solve-ticket@1", "--endpoint", "scripted:noop",
                          "--out", str(blocker / "run"))
    assert code == 2 and "cannot write the run directory" in output and "Traceback" not in output


def test_negative_concurrency_is_refused_on_resume_too(tmp_path: Path) -> None:
    code, output = invoke("run", "--resume", str(tmp_path), "--concurrency", "-1")
    assert code == 2 and "--concurrency" in output


@pytest.mark.parametrize("command", ["report", "verify", "replay"])
def test_a_run_directory_without_its_episode_records_is_named_damaged(tmp_path: Path, command: str) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    code, output = invoke(command, str(tmp_path))
    assert code == 2 and "episodes.jsonl is missing" in output and "Traceback" not in output


HEAVY_PACKAGES = ("playwright", "statsmodels", "scipy", "numpy", "sqlmodel", "sqlalchemy", "fastapi", "uvicorn",
                  "openai", "lxml", "bs4", "babel", "phonenumbers", "num2words", "httpx")


def test_the_cli_imports_no_heavy_package_before_a_command_needs_it() -> None:
    """`computerops --help` (and every command's start) imports only what the command needs: the heavy packages
    are imported inside the commands (docs/bench/profile.md has the import times)."""
    import subprocess
    import sys

    probe = ("import sys; from typer.testing import CliRunner; import computerops.cli.main as cli; "
             "assert CliRunner().invoke(cli.app, ['--help']).exit_code == 0; "
             f"print(sorted(m for m in {HEAVY_PACKAGES!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize("message", ["pip install 'computerops[ray]'", "the endpoint said [/x] and [bold]no[/]",
                                     "[red]", "x[/]"])
def test_an_error_message_is_printed_as_it_is_never_as_markup(message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Error messages quote what no one here wrote (an endpoint's answer, a page's text): brackets in them are text
    (as markup `[ray]` vanished, and `[/x]` raised MarkupError instead of the error)."""
    from computerops.cli.console import print_error
    print_error(message)
    assert capsys.readouterr().err.strip() == f"error: {message}"
