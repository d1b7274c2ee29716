"""`computerops experiment ...`: freeze an experiment file into a lock, run it (and its noise floor), report it.

What each command does lives in `computerops.experiment`; what it prints in `computerops.cli.console`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from computerops.cli.options import ExecutorOption, RayAddressOption, WorkersOption, executor_choice

if TYPE_CHECKING:
    from computerops.core.execution import ExecutorChoice
    from computerops.experiment.analysis import NoiseFloor
    from computerops.runs.config import EndpointConfig

experiment_app = typer.Typer(help="Experiments: pre-registered, matched, counterbalanced designs with verdicts "
                                  "(docs/experiments.md).", no_args_is_help=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    from computerops.cli.console import print_error
    print_error(message)
    return typer.Exit(code)


def _endpoint(base_url: str | None, model: str | None, api_key_env: str | None, artifact_sha256: str | None,
              fallback_base_url: str | None = None, fallback_model: str | None = None,
              fallback_api_key_env: str | None = None) -> EndpointConfig | None:
    """The endpoint named at the freeze in place of the file's, with its pinned fallback (a serving experiment's);
    None keeps the file's."""
    from computerops.runs.config import EndpointConfig, fallback_endpoint, parse_endpoint
    fallback = fallback_endpoint(None, fallback_base_url, fallback_model, fallback_api_key_env)
    if base_url is None and model is None:
        if fallback is not None:
            raise ValueError("--fallback-base-url goes with --base-url (a real endpoint's pinned fallback; a scripted "
                             "endpoint's is the file's endpoint.fallback)")
        return None
    endpoint = parse_endpoint(None, base_url=base_url, model=model, api_key_env=api_key_env,
                              artifact_sha256=artifact_sha256)
    if fallback is None:
        return endpoint
    return EndpointConfig.model_validate({**endpoint.model_dump(), "fallback": fallback})


@experiment_app.command("freeze")
def freeze_command(
    file: Annotated[Path, typer.Argument(help="An experiment file (experiments/*.yaml).")],
    out: Annotated[Path, typer.Option(help="The lock file to write (refused if it exists).")],
    base_url: Annotated[str | None, typer.Option(help="Run against this OpenAI-compatible endpoint instead of "
                                                      "the file's (e.g. http://127.0.0.1:1234/v1).")] = None,
    model: Annotated[str | None, typer.Option(help="Model name to request (with --base-url).")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the API key.")] = None,
    artifact_sha256: Annotated[str | None, typer.Option(help="SHA-256 of the model file (the E3 gate needs "
                                                             "it for a real model; never guessed).")] = None,
    fallback_base_url: Annotated[str | None, typer.Option(help="With --base-url, for a serving experiment: the "
                                                               "pinned fallback's OpenAI-compatible endpoint.")] = None,
    fallback_model: Annotated[str | None, typer.Option(help="The pinned fallback's model name.")] = None,
    fallback_api_key_env: Annotated[str | None, typer.Option(help="The environment variable holding the fallback's "
                                                                  "API key.")] = None,
) -> None:
    """Hash every fixed input into a lock file before any model call, and print the plan."""
    from computerops.cli.console import console, print_experiment_plan
    from computerops.experiment.lock import ExperimentRefused, freeze
    from computerops.experiment.spec import ExperimentFileError
    from tasks import TaskFileError, load_catalog
    if out.exists():
        raise _fail(f"{out} exists; a lock is written once (choose a new --out)")
    try:
        lock = freeze(file, load_catalog(), _endpoint(base_url, model, api_key_env, artifact_sha256,
                                                      fallback_base_url, fallback_model, fallback_api_key_env))
    except (ExperimentFileError, ExperimentRefused, TaskFileError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(lock.model_dump_json(indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise _fail(f"could not write {out}: {exc}") from exc
    print_experiment_plan(lock)
    console.print(f"Wrote {out} (lock {lock.lock_sha256[:12]}); run it with `computerops experiment run {out} "
                  "--out DIR`", markup=False)


def _run(lock: Path, out: Path | None, resume: Path | None, concurrency: int, *, noise_floor: bool,
         executor: ExecutorChoice) -> Path:
    from computerops.cli.console import console
    from computerops.service.errors import ServiceError
    from computerops.service.launch import launch_experiment
    if (out is None) == (resume is None):
        raise _fail("give --out DIR for a new run, or --resume DIR to continue one")
    target = out if out is not None else resume
    assert target is not None
    try:
        launch_experiment(lock, target, lambda line: console.print(line, markup=False), resume=resume is not None,
                          concurrency=concurrency, noise_floor=noise_floor, executor=executor)
    except ServiceError as exc:
        raise _fail(exc.message, exc.exit_code) from exc
    return target


@experiment_app.command("run")
def run_command(
    lock: Annotated[Path, typer.Argument(help="A lock file (`computerops experiment freeze`).")],
    out: Annotated[Path | None, typer.Option(help="New run directory to write.")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue this interrupted run of the same lock.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes run at once (same evidence as serial).")] = 1,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
) -> None:
    """Run a frozen experiment; refused, naming the input, when anything changed since the freeze. Exit 1 unless every
    planned episode has an agent outcome (`--resume` continues it)."""
    run_dir = _run(lock, out, resume, concurrency, noise_floor=False,
                   executor=executor_choice(executor, ray_address, workers))
    _report(run_dir, as_json=False, html=None)
    _exit_unless_complete(run_dir, "experiment run", lock)


@experiment_app.command("noise-floor")
def noise_floor_command(
    lock: Annotated[Path, typer.Argument(help="A lock file whose plan has analysis.noise_floor.")],
    out: Annotated[Path | None, typer.Option(help="New run directory to write.")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue this interrupted noise-floor run.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes run at once.")] = 1,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
) -> None:
    """Rerun one cell of a frozen experiment: identical reruns, then reruns with new seeds. Exit 1 unless every planned
    rerun has an agent outcome (`--resume` continues it)."""
    run_dir = _run(lock, out, resume, concurrency, noise_floor=True,
                   executor=executor_choice(executor, ray_address, workers))
    _report(run_dir, as_json=False, html=None)
    _exit_unless_complete(run_dir, "experiment noise-floor", lock)


def _exit_unless_complete(run_dir: Path, command: str, lock: Path) -> None:
    """Exit 1, saying how to continue, when the run stopped with planned episodes missing or failed as
    infrastructure (a recorded infrastructure failure is no agent outcome: `--resume` runs it again)."""
    from computerops.runs.bundle import RunDirectory

    completeness = RunDirectory.open(run_dir).completeness()
    if not completeness.complete:
        raise _fail(completeness.incomplete(f"continue it with `computerops {command} {lock} --resume {run_dir}`"),
                    code=1)


def _noise_floor_of(run_dir: Path, lock_sha256: str) -> NoiseFloor:
    """The noise floor measured by the run at `run_dir`, which must be a noise-floor run of the same lock."""
    from computerops.experiment.analysis import analyse
    from computerops.experiment.collect import read_experiment_run
    analysis = analyse(read_experiment_run(run_dir))
    if analysis.series != "noise_floor" or analysis.noise_floor is None:
        raise ValueError(f"{run_dir}: not a noise-floor run (made by `experiment noise-floor`)")
    if analysis.lock_sha256 != lock_sha256:
        raise ValueError(f"{run_dir}: its noise floor was run from another lock ({analysis.lock_sha256[:16]}, not "
                         f"{lock_sha256[:16]})")
    return analysis.noise_floor


def _report(run_dir: Path, *, as_json: bool, html: Path | None, noise_floor: Path | None = None) -> None:
    from computerops.cli.console import console, errors, print_view
    from computerops.experiment.layout import experiment_html, experiment_view
    from computerops.service.errors import ServiceError
    from computerops.service.reading import experiment_result, open_run
    try:
        result = experiment_result(open_run(run_dir))
        analysis, lock, level = result.analysis, result.lock, result.level
        floor = None if noise_floor is None else _noise_floor_of(noise_floor, analysis.lock_sha256)
    except ServiceError as exc:
        raise _fail(exc.message, exc.exit_code) from exc
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    if html is not None:
        try:
            html.write_text(experiment_html(analysis, lock, level, floor), encoding="utf-8")
        except OSError as exc:
            raise _fail(f"could not write {html}: {exc}") from exc
    if as_json:
        shown = analysis if floor is None else analysis.model_copy(update={"noise_floor": floor})
        typer.echo(json.dumps({**shown.model_dump(mode="json"), "evidence_level": level}, indent=2))
    else:
        print_view(experiment_view(analysis, lock, level, floor))
    if html is not None:
        (errors if as_json else console).print(f"HTML report written to {html}", markup=False)


@experiment_app.command("report")
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="An experiment's run directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the analysis as JSON.")] = False,
    html: Annotated[Path | None, typer.Option(help="Also write the report as one HTML file.")] = None,
    noise_floor: Annotated[Path | None, typer.Option(
        help="A noise-floor run of the same lock (`experiment noise-floor`), reported beside the intervals.")] = None,
) -> None:
    """The experiment's tables, grid heatmap, paired estimates, verdicts with their frozen rules, noise floor and
    gate, recomputed from the raw evidence."""
    _report(run_dir, as_json=as_json, html=html, noise_floor=noise_floor)


@experiment_app.command("measure")
def measure_command(
    episodes: Annotated[int, typer.Option(min=10, help="Synthetic episode rows to analyse.")] = 20_000,
    resamples: Annotated[int, typer.Option(min=100, help="Bootstrap resamples of each interval.")] = 2000,
) -> None:
    """Time every analysis step on synthetic rows (what an experiment of that size costs to report)."""
    from computerops.cli.console import print_analysis_timings
    from computerops.experiment.measure import measure
    timings = measure(episodes, resamples=resamples)
    print_analysis_timings(episodes, timings)
