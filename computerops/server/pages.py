"""The server's HTML pages (Jinja2, a little JavaScript for live progress, no build step, nothing fetched from
elsewhere): runs with the launch form, a run with its report and episodes, an episode step by step, two runs
compared, and the login page of a server with a token. Each page calls the same service functions as the API."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import annotated_types
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from pydantic import ValidationError

from computerops.core.problems import problems_of
from computerops.core.stats import wilson_interval
from computerops.server import api
from computerops.server.auth import COOKIE, session_value, token_matches
from computerops.server.index import IndexedRun
from computerops.server.launching import LaunchExperiment, LaunchRun
from computerops.server.names import NAME
from computerops.server.state import ServerState
from computerops.service.errors import ServiceError

router = APIRouter(include_in_schema=False)

LAUNCH_FIELDS = ("run_id", "subset", "tasks", "endpoint", "base_url", "model", "api_key_env", "repeat",
                 "action_budget", "max_response_tokens", "context_tokens", "temperature", "seed", "tool_mode",
                 "request_timeout", "wall_clock", "fault_rate", "fault_classes", "fault_seed", "matched_controls",
                 "broker", "persistence", "recovery",
                 "serving", "fallback_policy", "fallback_base_url", "fallback_model", "fallback_api_key_env",
                 "continuation", "noise", "concurrency", "executor", "workers", "trace")
"""The launch form's fields, each a `LaunchRun` field of the same name; an empty field takes the default (a
checkbox sends `on` when ticked and nothing when not)."""


_LABELLED = re.compile(r'<label for="([^"]+)">([^<]+)</label> <(?:input|select) id="\1" name="([^"]+)"')


@cache
def form_labels(form: str) -> dict[str, str]:
    """The label of each field of the runs page's form `form` (its id: launch, experiment, reserve) by field name,
    read from the template the page is rendered from."""
    source = Path(__file__).with_name("templates").joinpath("runs.html").read_text(encoding="utf-8")
    start = source.index(f'id="{form}"')
    block = source[start:source.index("</form>", start)]
    return {name: label for _, label, name in _LABELLED.findall(block)}


def in_form_words(message: str, form: str) -> str:
    """A refusal as the form says it: a field's name (`api_key_env: ...`, `another run_id`) or a `computerops run`
    option (`--fault-classes`) that is a field of `form` given as its label, quoted (the form has labels, not options
    or field names); a command quoted in backticks (`computerops server --api-key-env NAME`) is left as it is."""
    labels = form_labels(form)

    def label(match: re.Match[str]) -> str:
        name = match.group(1).replace("-", "_")
        return f"“{labels[name]}”" if name in labels else match.group(0)

    def words(text: str) -> str:
        text = re.sub(r"(?<![\w-])--([a-z][a-z-]*[a-z])\b", label, text)
        text = re.sub(r"(?:^|(?<=; ))([a-z][a-z_]*)(?=: )", lambda m: label(m).strip("“”"), text)
        return re.sub(r"(?<![\w-])([a-z]+_[a-z_]*[a-z])\b", label, text)

    return "`".join(part if quoted % 2 else words(part) for quoted, part in enumerate(message.split("`")))


def form_problems(exc: ValidationError, form: str) -> list[str]:
    """A form that does not validate: one sentence per field, led by the field's label (never pydantic's text)."""
    said = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else ""
        where = form_labels(form).get(field, field.replace("_", " ") or "the form")
        said.append(f"{where}: {in_form_words(problems_of([error], located=False), form)}")
    return said


@cache
def environment() -> Environment:
    from computerops.report.html import with_report_blocks
    loader = ChoiceLoader([PackageLoader("computerops.server", "templates"),
                           PackageLoader("computerops.report", "templates")])
    env = Environment(loader=loader, autoescape=True, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True)
    env.globals["interval"] = _interval
    env.globals["name_pattern"] = NAME.browser_pattern
    env.globals["bounds"] = field_bounds
    env.filters["quote"] = quote
    return with_report_blocks(env)


def field_bounds(field: str) -> Markup:
    """A number field's `min`/`max` attributes from the launch's own bounds (`LaunchRun`, whose run settings are
    `computerops run`'s: one vocabulary), so the browser refuses what the server would."""
    said = []
    for rule in LaunchRun.model_fields[field].metadata:
        if isinstance(rule, annotated_types.Ge | annotated_types.Gt):
            said.append(f' min="{rule.ge if isinstance(rule, annotated_types.Ge) else rule.gt}"')
        if isinstance(rule, annotated_types.Le):
            said.append(f' max="{rule.le}"')
    return Markup("".join(said))


def _interval(successes: int, n: int) -> str:
    bounds = wilson_interval(successes, n)
    return "" if bounds is None else f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"


def render(name: str, status_code: int = 200, headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    return HTMLResponse(environment().get_template(name).render(**context), status_code=status_code, headers=headers)


def _state(request: Request) -> ServerState:
    return api.state_of(request)


@router.get("/", response_class=HTMLResponse)
def runs_page(request: Request) -> HTMLResponse:
    return _runs_page(request, {}, [], 200)


def _runs_page(request: Request, form: dict[str, str], errors: list[str], status_code: int) -> HTMLResponse:
    state = _state(request)
    runs = state.runs()
    return render("runs.html", status_code, runs=runs, jobs={r.run_id: state.jobs.state(r.run_id) for r in runs},
                  subsets=api.subsets(request), locks=api.locks(request), form=form, errors=errors,
                  token=state.settings.token is not None, ray_address=state.settings.ray_address)


@router.post("/runs", response_class=HTMLResponse)
async def launch_form(request: Request) -> Response:
    """The launch form: a run started (redirect to its page), or the form again with what was wrong beside it."""
    submitted = await request.form()
    form = {name: str(submitted.get(name, "")).strip() for name in LAUNCH_FIELDS}
    fields = {name: value for name, value in form.items() if value}
    try:
        launch = LaunchRun.model_validate(fields)
        api.launch(launch, request)
    except ValidationError as exc:
        return _runs_page(request, form, form_problems(exc, "launch"), 422)
    except ServiceError as exc:
        return _runs_page(request, form, [in_form_words(exc.message, "launch")], exc.http_status)
    return RedirectResponse(f"/runs/{quote(launch.run_id)}", status_code=303)


@router.post("/subsets", response_class=HTMLResponse)
async def reserve_form(request: Request, name: str = Form(""), count: str = Form(""), seed: str = Form("")
                       ) -> Response:
    try:
        body = api.ReserveSubset.model_validate({"name": name, "count": count, "seed": seed})
        api.reserve(body, request)
    except ValidationError as exc:
        return _runs_page(request, {}, [f"Reserve a subset: {said}" for said in form_problems(exc, "reserve")], 422)
    except ServiceError as exc:
        return _runs_page(request, {}, [in_form_words(exc.message, "reserve")], exc.http_status)
    return RedirectResponse("/", status_code=303)


@router.post("/experiments/runs", response_class=HTMLResponse)
async def experiment_form(request: Request) -> Response:
    """Run a frozen experiment's lock from the runs page."""
    submitted = await request.form()
    fields = {name: str(submitted.get(name, "")).strip() for name in ("run_id", "lock", "concurrency", "executor",
                                                                       "workers")}
    try:
        body = LaunchExperiment.model_validate({name: value for name, value in fields.items() if value})
        api.launch_experiment(body, request)
    except ValidationError as exc:
        return _runs_page(request, {}, [f"Run a frozen experiment: {said}"
                                        for said in form_problems(exc, "experiment")], 422)
    except ServiceError as exc:
        return _runs_page(request, {}, [in_form_words(exc.message, "experiment")], exc.http_status)
    return RedirectResponse(f"/runs/{quote(body.run_id)}", status_code=303)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: str, outcome: str = "", site: str = "", false_completion_kind: str = "",
             fault_fired: str = "") -> Response:
    state = _state(request)
    try:
        run = state.indexed(run_id)
    except ServiceError as exc:
        return render("error.html", exc.http_status, message=exc.message)
    filters = {"outcome": outcome, "site": site, "false_completion_kind": false_completion_kind,
               "fault_fired": fault_fired}
    episodes = state.index.episodes(run_id, **{k: v or None for k, v in filters.items()})
    everything = state.index.episodes(run_id)
    view = _report_view(state, run) if run.admitted else None
    return render("run.html", run=run, job=state.jobs.state(run_id), view=view, episodes=episodes,
                  filters=filters, choices=_choices(everything))


def _report_view(state: ServerState, run: IndexedRun) -> Any:
    """The run's report as the HTML report lays it out: an experiment's (its cells, estimates and verdicts) for an
    experiment run, else the run's."""
    from computerops.experiment.collect import LOCK_FILE
    from computerops.experiment.layout import experiment_view
    from computerops.report.layout import report_view
    from computerops.service.reading import experiment_result, run_report_of
    try:
        bundle = state.bundle(run.run_id)
        if (bundle.root / LOCK_FILE).is_file():
            result = experiment_result(bundle)
            return experiment_view(result.analysis, result.lock, result.level)
        return report_view(run_report_of(bundle))
    except ServiceError:
        return None


def _choices(episodes: list[Any]) -> dict[str, list[str]]:
    return {"outcome": sorted({e.outcome for e in episodes}), "site": sorted({e.site for e in episodes}),
            "false_completion_kind": sorted({e.false_completion_kind for e in episodes if e.false_completion_kind}),
            "fault_fired": sorted({f for e in episodes for f in e.faults_fired})}


def _back_to_run(run_id: str, act: Callable[[], object]) -> Response:
    """A run page's button: do it, then show the run again (or the refusal)."""
    try:
        act()
    except ServiceError as exc:
        return render("error.html", exc.http_status, message=exc.message)
    return RedirectResponse(f"/runs/{quote(run_id)}", status_code=303)


@router.post("/runs/{run_id}/cancel", response_class=HTMLResponse)
async def cancel_form(request: Request, run_id: str) -> Response:
    try:
        await api.cancel(run_id, request)
    except ServiceError as exc:
        return render("error.html", exc.http_status, message=exc.message)
    return RedirectResponse(f"/runs/{quote(run_id)}", status_code=303)


@router.post("/runs/{run_id}/resume", response_class=HTMLResponse)
def resume_form(request: Request, run_id: str) -> Response:
    return _back_to_run(run_id, lambda: api.resume(run_id, api.Resume(), request))


@router.post("/runs/{run_id}/verify", response_class=HTMLResponse)
def verify_form(request: Request, run_id: str) -> Response:
    return _back_to_run(run_id, lambda: api.verify(run_id, request))


@router.get("/runs/{run_id}/episodes/{episode_id}", response_class=HTMLResponse)
def episode_page(request: Request, run_id: str, episode_id: str) -> Response:
    try:
        view = api.episode(run_id, episode_id, request)
    except ServiceError as exc:
        return render("error.html", exc.http_status, message=exc.message)
    return render("episode.html", run_id=run_id, episode=view)


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, a: str = "", b: str = "") -> Response:
    from computerops.report.compare import comparison_table
    state = _state(request)
    state.fresh_index()
    runs = [r.run_id for r in state.index.runs()]
    comparison, error = None, None
    if a and b:
        try:
            from computerops.service import reading
            comparison = reading.compare(state.bundle(a).root, state.bundle(b).root)
        except ServiceError as exc:
            error = exc.message
    table = None if comparison is None else comparison_table(comparison)
    return render("compare.html", 200 if error is None else 422, runs=runs, a=a, b=b, comparison=comparison,
                  table=table, error=error)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return render("login.html", next=_local(next), error=None)


@router.post("/login", response_class=HTMLResponse)
def login(request: Request, token: str = Form(""), next: str = Form("/")) -> Response:
    expected = _state(request).settings.token
    if expected is None:
        return RedirectResponse(_local(next), status_code=303)
    if not token_matches(expected, token):
        return render("login.html", 401, next=_local(next), error="That is not this server's token.")
    response = RedirectResponse(_local(next), status_code=303)
    response.set_cookie(COOKIE, session_value(expected), httponly=True, samesite="strict")
    return response


def _local(target: str) -> str:
    """`target` if it is a path of this server, else / (a login never redirects elsewhere)."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"
