"""The operator server's forms in process (issue 47): a refused form is told in the form's words (its fields' labels,
never pydantic's text, a field's code name or a `computerops run` option), the run-name fields' HTML `pattern` is a
regular expression browsers compile (they use the `v` flag) and accepts exactly the names the server accepts, number
fields carry the launch's own bounds, a launch is shown as `starting` until its worker writes the run, and a CORS
preflight from another site is refused in words."""

from __future__ import annotations

import html
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from operator_server import runs_folder, serve
from tiers import examples

from computerops.server.jobs import Jobs, JobSpec, JobState
from computerops.server.launching import LaunchRun
from computerops.server.names import NAME, checked_name
from computerops.server.pages import field_bounds, form_labels, in_form_words
from computerops.server.settings import ServerSettings
from computerops.server.state import ServerState
from computerops.service.errors import ServiceError

TASK = "helpdesk.solve-ticket@1"


class LiveJobs(Jobs):
    """Jobs that start no worker and stay running (their worker has written nothing yet)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.started: list[JobSpec] = []

    def start(self, spec: JobSpec) -> JobState:
        self.started.append(spec)
        return self._running(spec)

    def _running(self, spec: JobSpec) -> JobState:
        return JobState(run_id=spec.run_id, kind=spec.kind, state="running", exit_code=None, started=0.0, log_tail=[])

    def state(self, run_id: str) -> JobState | None:
        return next((self._running(s) for s in self.started if s.run_id == run_id), None)

    def running(self, run_id: str) -> bool:
        return any(s.run_id == run_id for s in self.started)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[tuple[TestClient, ServerState]]:
    c, state = serve(ServerSettings(runs=runs_folder(tmp_path)), LiveJobs)
    with c:
        yield c, state
    state.close()


def _errors(page: str) -> list[str]:
    block = page.split('id="launch-errors"', 1)[1].split("</div>", 1)[0]
    return [html.unescape(item) for item in re.findall(r"<li>(.*?)</li>", block)]


PYDANTIC = re.compile(r"Input should|Value error|validation error|type=|pydantic|errors\.pydantic")
"""What pydantic's own text looks like."""


@pytest.mark.parametrize(("form", "said"), [
    ({"run_id": "t", "tasks": TASK, "endpoint": "scripted:oracle", "temperature": "-1"},
     "Temperature: input should be greater than or equal to 0 (given '-1')"),
    ({"run_id": "t", "tasks": TASK, "endpoint": "scripted:oracle", "seed": "-3"},
     "Seed: input should be greater than or equal to 0 (given '-3')"),
    ({"run_id": "t", "tasks": TASK, "endpoint": "scripted:oracle", "concurrency": "two"},
     "Concurrency: input should be a valid integer, unable to parse string as an integer (given 'two')"),
    ({"run_id": "fixture", "tasks": TASK, "endpoint": "scripted:oracle"},
     "a run named fixture already exists: choose another “Run name” (or resume that run)"),
    ({"run_id": "t", "tasks": TASK, "endpoint": "scripted:oracle", "fault_rate": "0.5"}, "“Fault classes”"),
    ({"run_id": "t", "tasks": TASK, "endpoint": "scripted:oracle", "workers": "2"}, "“Executor”"),
    ({"run_id": "t", "tasks": TASK, "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "HOME"},
     "API key variable: HOME is not an API key variable this server lets launches use (it allows none); its "
     "operator allows it by starting the server with `--api-key-env HOME`"),
])
def test_a_refused_form_says_what_is_wrong_in_the_forms_words(client: tuple[TestClient, ServerState],
                                                             form: dict[str, str], said: str) -> None:
    c, state = client
    page = c.post("/runs", data=form)
    assert page.status_code in (409, 422)
    [error] = _errors(page.text)
    assert said in error
    assert not PYDANTIC.search(error), error
    assert str(state.settings.runs.resolve()) not in page.text
    # No code name of a field, nor a `computerops run` option, outside a quoted command.
    unquoted = "".join(error.split("`")[0::2])
    assert not re.search(r"--[a-z]", unquoted) and not re.search(r"\b[a-z]+_[a-z_]+\b", unquoted), error
    assert isinstance(state.jobs, LiveJobs) and state.jobs.started == []


def test_the_subset_and_experiment_forms_say_it_in_their_words(client: tuple[TestClient, ServerState]) -> None:
    c, _ = client
    [count] = _errors(c.post("/subsets", data={"name": "s", "count": "", "seed": "1"}).text)
    assert count.startswith("Reserve a subset: Tasks: input should be a valid integer") and not PYDANTIC.search(count)
    [lock] = _errors(c.post("/experiments/runs", data={"run_id": "e", "lock": "nope"}).text)
    assert lock == "no experiment lock named 'nope' (the runs page lists this server's locks)"


def test_form_words_keep_a_quoted_command_and_other_words() -> None:
    said = "drop --concurrency with --executor ray; see `computerops run --concurrency 2`; model: m; tasks: all"
    assert in_form_words(said, "launch") == ("drop “Concurrency” with “Executor” ray; see `computerops run "
                                             "--concurrency 2`; Model: m; Tasks: all")
    assert in_form_words("--no-such-option and some_word", "launch") == "--no-such-option and some_word"
    labels = form_labels("launch")
    assert set(labels) == set(LaunchRun.model_fields) - {"artifact_sha256", "checkpoint_every", "compaction"}, (
        "every launch field the form has is labelled")


def _node() -> str:
    """A Node.js able to run the browsers' regular expressions: Playwright's own (it ships one)."""
    from playwright._impl._driver import compute_driver_executable
    node = compute_driver_executable()[0]
    return str(node)


def _browser_matches(pattern: str, names: list[str]) -> list[bool]:
    """Whether a browser's form validation accepts each name for an input with this `pattern` (the HTML standard
    compiles `^(?:pattern)$` with the `v` flag); raises when the pattern does not compile so."""
    script = ("const [p, names] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "const re = new RegExp('^(?:' + p + ')$', 'v');"
              "console.log(JSON.stringify(names.map(n => re.test(n))));")
    done = subprocess.run([_node(), "-e", script], input=json.dumps([pattern, names]), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    result: list[bool] = json.loads(done.stdout)
    return result


def _server_accepts(name: str) -> bool:
    try:
        checked_name(name, "run")
    except ServiceError:
        return False
    return True


def test_the_old_pattern_was_no_browser_pattern() -> None:
    """The check below can fail: the pattern the form had does not compile under the `v` flag."""
    with pytest.raises(AssertionError, match="Invalid"):
        _browser_matches("[A-Za-z0-9][A-Za-z0-9._-]*", ["x"])


NAMES = st.one_of(st.from_regex(r"[A-Za-z0-9._@ /-]{0,12}", fullmatch=True), st.text(max_size=8),
                  st.sampled_from(["a..b", "..", ".server", "a-", "-a", "a" * 100, "a" * 101, "run_1.2-x"]))


@given(st.lists(NAMES, min_size=1, max_size=40))
@settings(max_examples=examples(40), deadline=None)
def test_the_run_name_pattern_compiles_in_browsers_and_accepts_what_the_server_does(names: list[str]) -> None:
    assert _browser_matches(NAME.browser_pattern, names) == [_server_accepts(n) for n in names]


def test_every_name_field_of_the_runs_page_has_the_browser_pattern(client: tuple[TestClient, ServerState]) -> None:
    (state := client[1]).settings.locks.joinpath("e.json").write_text("{}")  # the experiment form is shown
    page = client[0].get("/").text
    inputs = re.findall(r'<input id="(?:run_id|experiment-run|subset-name)"[^>]*>', page)
    assert len(inputs) == 3 and state.settings.locks.is_dir()
    for field in inputs:
        assert f'pattern="{html.escape(NAME.browser_pattern)}"' in field and 'maxlength="100"' in field, field


def test_number_fields_carry_the_launchs_own_bounds(client: tuple[TestClient, ServerState]) -> None:
    assert str(field_bounds("temperature")) == ' min="0" max="2"' and str(field_bounds("seed")) == ' min="0"'
    page = client[0].get("/").text
    assert re.search(r'<input id="temperature" name="temperature" type="number" step="any" min="0" max="2"', page)
    assert re.search(r'<input id="seed" name="seed" type="number" min="0"', page)


def test_a_launched_run_is_starting_at_once_on_the_api_and_the_pages(client: tuple[TestClient, ServerState]) -> None:
    c, _ = client
    launched = c.post("/api/runs", json={"run_id": "new", "tasks": TASK, "endpoint": "scripted:oracle"})
    assert launched.status_code == 202 and launched.json()["run"]["status"] == "starting"
    assert c.get("/api/runs/new").json()["run"]["status"] == "starting"
    progress = c.get("/api/runs/new/progress")
    assert progress.status_code == 200 and (progress.json()["planned"], progress.json()["started"]) == (1, [])
    assert c.get("/api/runs/never/progress").json() == {"detail": "no run named 'never'"}
    runs_page = c.get("/").text
    row = runs_page.split('data-run="new"', 1)[1].split("</tr>", 1)[0]
    assert 'data-live="new"' in row and "starting" in row
    run_page = c.get("/runs/new").text
    assert 'id="status">starting<' in run_page and 'data-live="new"' in run_page
    assert "No episode admitted yet" in run_page and "No admitted episodes" not in run_page


def test_a_run_placed_while_its_progress_is_asked_is_not_a_404(client: tuple[TestClient, ServerState],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker renames the run into place between the progress route's look for the manifest and its look at the
    index (which then finds the run running, no longer starting): the progress is the run's, never `not_found`."""
    from computerops.server import api
    from computerops.server.progress import RunProgress

    c, state = client
    placed = RunProgress(run_id="racing", planned=1, started=[], admitted=[], being_written=True, sealed=False)

    def indexed(run_id: str) -> Any:
        (state.run_path(run_id)).mkdir(parents=True, exist_ok=True)
        (state.run_path(run_id) / "manifest.json").write_text("{}")  # the worker's rename, in the meantime
        return SimpleNamespace(status="running", planned=1)

    monkeypatch.setattr(state, "indexed", indexed)
    monkeypatch.setattr(api, "run_progress", lambda path: placed)
    progress = c.get("/api/runs/racing/progress")
    assert progress.status_code == 200 and progress.json()["being_written"] is True, progress.text


def test_a_cors_preflight_from_another_site_is_refused_in_words(client: tuple[TestClient, ServerState]) -> None:
    c, _ = client
    preflight = c.options("/api/runs", headers={"Origin": "https://evil.example",
                                                "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 403 and "cross-origin requests are not served" in preflight.json()["detail"]
    assert "access-control-allow-origin" not in preflight.headers
    own = c.options("/api/runs", headers={"Origin": "http://testserver", "Access-Control-Request-Method": "POST"})
    assert (own.status_code, own.headers["allow"]) == (204, "GET, HEAD, OPTIONS, POST")
