"""The `computerops` command line.

Over 400 lines because it holds every command's typer signature (options, help, validation); what a command
does lives in the module it calls (runner, demo, checking, audit, bench, run_verification) and what it prints in
console.py.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from computerops.cli.experiment import experiment_app
from computerops.service.errors import ServiceError

if TYPE_CHECKING:
    from computerops.core.execution import ExecutorChoice
    from computerops.runs.bundle import RunDirectory
    from computerops.runs.verification import Verification
    from computerops.service.launch import PlannedRun
    from tasks import LoadedTask

from computerops.cli import words
from computerops.cli.options import (
    ExecutorOption,
    PortOption,
    RayAddressOption,
    WorkersOption,
    executor_choice,
    unlistenable,
)
from computerops.core import defaults
from computerops.core.numbers import whole_number
from computerops.core.vocabulary import BrokerMode, ToolMode

app = typer.Typer(help="ComputerOps: a benchmark server for tool-using browser agents.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
tasks_app = typer.Typer(help="The task catalog.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
subset_app = typer.Typer(help="Reserved task subsets, drawn and hash-locked before any model runs.",
                         no_args_is_help=True)
app.add_typer(subset_app, name="subset")
app.add_typer(experiment_app, name="experiment")

def _mutants(every: tuple[str, str], sound: tuple[str, str]) -> list[str]:
    """The words of a vocabulary outside its sound subset (the mutants), in the vocabulary's order."""
    return [word for word in words.words(*every) if word not in words.words(*sound)]


def _fail(message: str, code: int = 2) -> typer.Exit:
    from computerops.cli.console import print_error
    print_error(message)
    return typer.Exit(code)


def _refused(error: ServiceError) -> typer.Exit:
    """A service layer refusal, printed; its kind gives the exit code."""
    return _fail(error.message, error.exit_code)


def _progress(line: str) -> None:
    from computerops.cli.console import console
    console.print(line)


@app.command()
def run(
    out: Annotated[Path | None, typer.Option(help="New run directory to write.")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue this interrupted run with the settings of its "
                                                     "manifest: admitted episodes are kept, the rest run.")] = None,
    repeat: Annotated[int, typer.Option(min=1, help="Trials per task (and policy): K of pass^k.")] = 1,
    tasks: Annotated[str, typer.Option(help="`all`, comma-separated task ids, or a reserved subset file "
                                            "(`computerops subset reserve`).")] = "all",
    endpoint: Annotated[str | None, typer.Option(help="scripted:POLICY[,POLICY...] (the built-in endpoint).")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:1234/v1")]
    = None,
    model: Annotated[str | None, typer.Option(help="Model name to request (with --base-url).")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the API key.")] = None,
    artifact_sha256: Annotated[str | None, typer.Option(help="SHA-256 of the model file, if you know it.")] = None,
    action_budget: Annotated[int, typer.Option(min=1, help="Actions an episode may take.")] = defaults.ACTION_BUDGET,
    max_response_tokens: Annotated[int, typer.Option(min=1, help="Tokens one model reply may take.")]
    = defaults.MAX_RESPONSE_TOKENS,
    context_tokens: Annotated[int, typer.Option(min=1, help="The model's context window in tokens.")]
    = defaults.CONTEXT_TOKENS,
    temperature: Annotated[float, typer.Option(min=0, max=2, help="Sampling temperature, 0 to 2.")]
    = defaults.TEMPERATURE,
    seed: Annotated[int, typer.Option(min=0, help="Requested sampling seed, 0 or more.")] = defaults.SEED,
    tool_mode: Annotated[ToolMode, typer.Option(help="auto (native tool calls, text fallback), native or text.")]
    = "auto",
    request_timeout: Annotated[float, typer.Option(min=0, help="Seconds one model reply may take (a model served on "
                                                   "a CPU may need more); the client waits as long, and so do the "
                                                   "server's probes before the run.")] = defaults.REQUEST_TIMEOUT_S,
    wall_clock: Annotated[float, typer.Option(min=0, help="Seconds one episode may take in all (at least "
                                              "--request-timeout).")] = defaults.WALL_CLOCK_S,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes run at once, each with its own browser context "
                                                         "and tenant; results are the same as a serial run's.")] = 1,
    trace: Annotated[bool, typer.Option("--trace", help="Save a Playwright trace per episode "
                                                        "(episodes/<id>/trace.zip, for `playwright show-trace`).")]
    = False,
    fault_rate: Annotated[float, typer.Option(min=0, max=1, help="Inject faults into this share of eligible operations "
                                                   "(docs/faults.md), besides those task files configure.")] = 0.0,
    fault_classes: Annotated[str, typer.Option(help="Comma-separated fault classes the rate draws for.")] = "",
    fault_seed: Annotated[int, typer.Option(min=0, help="Seed of the rate's decisions.")] = 0,
    matched_controls: Annotated[bool, typer.Option("--matched-controls", help="Also run every task that has "
                                                   "faults or an attack with injection disabled (its clean twin; "
                                                   "episode ids end --control).")]
    = False,
    broker: Annotated[BrokerMode, typer.Option(help="How the broker treats a request the task's grants do not allow: "
                                               "enforcing blocks it, observing only records it (docs/security.md).")]
    = "enforcing",
    persistence: Annotated[str, typer.Option(help=f"Run every task long-running, once per arm given "
                                             f"({words.listed(*words.PERSISTENCE, sep=',')}): the harness in child "
                                             "processes, checkpointed, killed and resumed as the arm says "
                                             "(docs/long-running.md).")] = "",
    recovery: Annotated[str, typer.Option(help=f"With --persistence: what a resumed harness does about the action "
                                          f"whose result it never saw ({words.listed(*words.SOUND_RECOVERY)}; the "
                                          f"mutants {', '.join(_mutants(words.RECOVERY, words.SOUND_RECOVERY))}).")]
    = "reconcile",
    checkpoint_every: Annotated[int, typer.Option(min=1, help="With --persistence: a checkpoint every N replies, "
                                                  "besides those before and after effects.")] = 5,
    compaction: Annotated[str, typer.Option(help=f"With --persistence compacted: the compaction policy, one of "
                                            f"{words.listed(*words.COMPACTION)} (docs/long-running.md).")]
    = "ledgers/1",
    serving: Annotated[str, typer.Option(help=f"Run every task once per serving arm given "
                                         f"({words.listed(*words.SERVING)}): serving faults between the harness "
                                         "and the endpoint, streamed replies, the serving protocol "
                                         "(docs/long-running.md).")] = "",
    fallback_policy: Annotated[str | None, typer.Option(help="With a scripted endpoint: the pinned fallback's "
                                                        "scripted policy.")] = None,
    fallback_base_url: Annotated[str | None, typer.Option(help="With --base-url: the pinned fallback endpoint's URL, "
                                                          "asked when the primary cannot be reached (and as "
                                                          "--serving's protocol says).")] = None,
    fallback_model: Annotated[str | None, typer.Option(help="The pinned fallback's model name.")] = None,
    fallback_api_key_env: Annotated[str | None, typer.Option(help="The environment variable holding the fallback's "
                                                             "API key.")] = None,
    continuation: Annotated[bool, typer.Option("--continuation", help="With --serving: declare a continuation design "
                                               "(a fallback may answer a turn whose stream was cut).")] = False,
    noise: Annotated[str, typer.Option(help=f"Run every task clean and once per page-noise kind given "
                                       f"({words.listed(*words.NOISE)}), paired (docs/noise.md).")] = "",
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
) -> None:
    """Run episodes against an endpoint and write a run directory (evidence, verdicts, receipts)."""
    from computerops.runs.bundle import RunDirectory
    from computerops.service.launch import RunRequest, plan_run
    if resume is not None:
        given = [flag for flag, value in (("--out", out), ("--endpoint", endpoint), ("--base-url", base_url),
                                          ("--model", model), ("--repeat", repeat != 1), ("--tasks", tasks != "all"),
                                          ("--fault-rate", fault_rate), ("--fault-classes", fault_classes),
                                          ("--matched-controls", matched_controls),
                                          ("--broker", broker != "enforcing"), ("--persistence", persistence),
                                          ("--serving", serving), ("--noise", noise),
                                          ("--fallback-policy", fallback_policy),
                                          ("--fallback-base-url", fallback_base_url),
                                          ("--request-timeout", request_timeout != defaults.REQUEST_TIMEOUT_S),
                                          ("--wall-clock", wall_clock != defaults.WALL_CLOCK_S))
                 if value]
        if given:
            raise _fail(f"--resume takes the run's settings from its manifest; drop {', '.join(given)}")
        _resume_run(resume, concurrency=concurrency, trace=trace,
                    executor=executor_choice(executor, ray_address, workers))
        return
    if out is None:
        raise _fail("give --out DIR for a new run, or --resume DIR to continue one")
    from computerops.core.problems import said
    try:
        request = RunRequest(
            tasks=tasks, endpoint=endpoint, base_url=base_url, model=model, api_key_env=api_key_env,
            artifact_sha256=artifact_sha256, repeat=repeat, action_budget=action_budget,
            max_response_tokens=max_response_tokens, context_tokens=context_tokens, temperature=temperature,
            seed=seed, tool_mode=tool_mode, request_timeout=request_timeout, wall_clock=wall_clock,
            fault_rate=fault_rate, fault_classes=fault_classes, fault_seed=fault_seed,
            matched_controls=matched_controls, broker=broker, persistence=persistence, recovery=recovery,
            checkpoint_every=checkpoint_every, compaction=compaction, serving=serving,
            fallback_policy=fallback_policy, fallback_base_url=fallback_base_url, fallback_model=fallback_model,
            fallback_api_key_env=fallback_api_key_env, continuation=continuation, noise=noise)
        planned = plan_run(request, out)
    except ValueError as exc:
        raise _fail(said(exc, as_option=True)) from exc
    except ServiceError as exc:
        raise _refused(exc) from exc
    _execute(planned, concurrency=concurrency, trace=trace, executor=executor_choice(executor, ray_address, workers))
    _report_complete(RunDirectory.open(out))


def _resume_run(run_dir: Path, *, concurrency: int, trace: bool, executor: ExecutorChoice | None = None) -> None:
    """Continue a run from its manifest: the same config, the tasks as they are in the catalog now."""
    from computerops.runs.bundle import RunDirectory
    from computerops.service.launch import plan_resume
    try:
        planned = plan_resume(run_dir)
    except ServiceError as exc:
        raise _refused(exc) from exc
    _execute(planned, concurrency=concurrency, trace=trace, resume=True, executor=executor)
    _report_complete(RunDirectory.open(run_dir))


def _report_complete(bundle: RunDirectory) -> None:
    """The report of a run that stopped of itself; exit 1 unless every planned episode has an agent outcome (a
    recorded infrastructure failure is none: `run --resume` runs it again) and at least one was attempted (a run
    whose every episode never reached the model says nothing of it)."""
    from computerops.report.outcomes import no_attempt
    _report(bundle, as_json=False)
    completeness = bundle.completeness()
    if not completeness.complete:
        raise _fail(completeness.incomplete(f"continue it with `computerops run --resume {bundle.root}`"), code=1)
    problem = no_attempt(bundle.records())
    if problem is not None:
        raise _fail(f"{problem} ({bundle.root})", code=1)


def _execute(planned: PlannedRun, *, concurrency: int = 1, trace: bool = False, resume: bool = False,
             executor: ExecutorChoice | None = None) -> None:
    from computerops.core.execution import LOCAL
    from computerops.service.launch import launch
    try:
        launch(planned, _progress, concurrency=concurrency, trace=trace, resume=resume, executor=executor or LOCAL)
    except ServiceError as exc:
        raise _refused(exc) from exc


def _report(bundle: RunDirectory, *, as_json: bool, html: Path | None = None, markdown: bool = False) -> None:
    """Print a run's report: the tables, or JSON (the whole report, `computerops.report/2`);
    with `html`, also write it as one self-contained HTML file (the same numbers as the JSON)."""
    from computerops.cli.console import console, errors, print_report
    from computerops.report.html import write_html
    from computerops.report.layout import report_view
    from computerops.report.markdown import outcomes_markdown
    from computerops.report.run import report_json
    from computerops.service.reading import run_report_of
    try:
        report_ = run_report_of(bundle)
    except ServiceError as exc:
        raise _refused(exc) from exc
    if html is not None:
        try:
            write_html(html, report_)
        except OSError as exc:
            raise _fail(f"could not write {html}: {exc}") from exc
    if as_json:
        typer.echo(json.dumps(report_json(report_), indent=2))
    elif markdown:
        typer.echo(outcomes_markdown(report_view(report_)), nl=False)
    else:
        print_report(report_)
    if html is not None:
        # On stderr with --json, so stdout stays one JSON document.
        (errors if as_json else console).print(f"HTML report written to {html}", markup=False)


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the numbers as JSON.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write the report as one self-contained HTML "
                                                             "file (no external CSS, scripts or fonts).")] = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print only the outcome table, as Markdown (the "
                                                              "README's demo table).")] = False,
    by: Annotated[str | None, typer.Option(
        "--by", help="Only the outcomes grouped by a difficulty dimension or what the instances were: steps, pages, "
                     "fields, distractors, carried, template, site or family.")] = None,
) -> None:
    """Print the report of a run: outcomes, 95% intervals, per-task table, tokens, latency and provenance."""
    from computerops.service.reading import open_run
    try:
        bundle = open_run(run_dir)
    except ServiceError as exc:
        raise _refused(exc) from exc
    if as_json and markdown:
        raise _fail("--json and --markdown each print the report alone; give one")
    if by is not None:
        _report_by(bundle, by, as_json=as_json)
        return
    _report(bundle, as_json=as_json, html=html, markdown=markdown)


def _report_by(bundle: RunDirectory, by: str, *, as_json: bool) -> None:
    """`report --by`: the run's outcomes grouped by what its instances were."""
    from computerops.cli.console import console, print_grouped
    from computerops.report.grouping import GROUPINGS, grouped_outcomes
    from computerops.runs.instances import INSTANCES_FILE, read_instances
    if by not in GROUPINGS:
        raise _fail(f"--by takes {', '.join(GROUPINGS)}; got {by!r}")
    instances = read_instances(bundle.root)
    if instances is None:
        raise _fail(f"{bundle.root} has no {INSTANCES_FILE} (a run made before instances were recorded): its "
                    "instances' dimensions are unknown")
    grouped = grouped_outcomes(bundle.records(), instances, by)
    if as_json:
        console.print_json(grouped.model_dump_json())
        return
    print_grouped(grouped, scripted=bundle.manifest().scripted)


@app.command()
def replay(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the receipts as JSON.")] = False,
) -> None:
    """Replay every episode's saved operations on a fresh tenant; exit 0 only if all PASS."""
    from computerops.cli.console import console, print_receipts
    from computerops.service import reading
    try:
        receipts = reading.replay(run_dir)
    except ServiceError as exc:
        raise _refused(exc) from exc
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in receipts], indent=2))
    else:
        print_receipts(receipts)
    failed = [r for r in receipts if r.result != "PASS"]
    if failed:
        raise _fail(f"{len(failed)} of {len(receipts)} replays FAILED; first: {failed[0].episode_id}: "
                    f"{failed[0].first_mismatch}", code=1)
    console.print(f"All {len(receipts)} replays PASS.")


@tasks_app.command("list")
def tasks_list() -> None:
    """List the catalog."""
    from computerops.cli.console import print_tasks
    from tasks import TaskFileError, load_catalog
    try:
        print_tasks(list(load_catalog().values()))
    except TaskFileError as exc:
        raise _fail(str(exc)) from exc


@tasks_app.command("stats")
def tasks_stats(
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Count the catalog: templates, published instances, sites, and each per site, family and difficulty."""
    from computerops.catalog.stats import catalog_stats
    from computerops.cli.console import console, print_catalog_stats
    from sites.registry import site_definitions
    from tasks import TaskFileError, load_catalog
    try:
        stats = catalog_stats(load_catalog(), sorted(site_definitions()))
    except TaskFileError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        console.print_json(stats.model_dump_json())
        return
    print_catalog_stats(stats)


@tasks_app.command("doc")
def tasks_doc(
    out: Annotated[Path, typer.Option(help="The document to write.")] = Path("docs/tasks.md"),
    check: Annotated[bool, typer.Option("--check", help="Only check that the file is current; exit 1 if not.")]
    = False,
) -> None:
    """Generate docs/tasks.md from the task files (id, site, family, what is checked, allowed mutations)."""
    from computerops.catalog.taskdoc import tasks_markdown
    from computerops.cli.console import console
    from tasks import TaskFileError, load_catalog
    try:
        text = tasks_markdown(load_catalog().values())
    except TaskFileError as exc:
        raise _fail(str(exc)) from exc
    if check:
        current = out.read_text(encoding="utf-8") if out.is_file() else None
        if current != text:
            raise _fail(f"{out} is stale: regenerate it with `computerops tasks doc --out {out}`", code=1)
        console.print(f"{out} is current.")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    console.print(f"Wrote {out}.")


T = TypeVar("T")


def _catalog_tasks(selection: str) -> list[LoadedTask]:
    """`all` or comma-separated ids of the catalog; a bad selection exits with its error."""
    from tasks import TaskFileError, load_catalog, select_tasks
    try:
        return select_tasks(load_catalog(), selection)
    except TaskFileError as exc:
        raise _fail(str(exc)) from exc


SampleOption = Annotated[int | None, typer.Option(
    "--sample", min=1, help="A seeded sample of this many of the selected instances (see --sample-seed).")]
PerTemplateOption = Annotated[int | None, typer.Option(
    "--per-template", min=1, help="At most this many instances of each template, drawn by --sample-seed.")]
SampleSeedOption = Annotated[int, typer.Option(
    "--sample-seed", min=0, help="The sample's seed (ranks instances by sha256('<seed>:<instance id>')).")]


def _sampled(selected: list[LoadedTask], count: int | None, per_template: int | None, seed: int
             ) -> list[LoadedTask]:
    """The selection, or its seeded sample (said in the progress, with every instance drawn)."""
    from computerops.catalog.sampling import sample_instances
    if count is None and per_template is None:
        return selected
    chosen = sample_instances(selected, seed=seed, count=count, per_template=per_template)
    _progress(f"a sample of {len(chosen)} of {len(selected)} instances (seed {seed}): "
              + ", ".join(t.id for t in chosen))
    return chosen


def _scripted_check(out: Path | None, name: str, check: Callable[[Path], Coroutine[Any, Any, T]]) -> T:
    """Run a check of scripted episodes into `out`, or into a scratch directory removed afterwards."""
    from computerops.runs.bundle import BundleError
    from computerops.runs.endpoint import EndpointError
    with tempfile.TemporaryDirectory(prefix=f"computerops-{name}-") as scratch:
        try:
            return asyncio.run(check(out or Path(scratch) / name))
        except (EndpointError, BundleError) as exc:
            raise _fail(str(exc)) from exc


@tasks_app.command("check")
def tasks_check(
    tasks: Annotated[str, typer.Option(help="`all` or comma-separated task ids.")] = "all",
    out: Annotated[Path | None, typer.Option(help="Keep the check's run directory here.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes at once (the results are the same).")] = 1,
    sample: SampleOption = None,
    per_template: PerTemplateOption = None,
    sample_seed: SampleSeedOption = 0,
    noise: Annotated[str, typer.Option(help=f"Instead: prove every selected instance's scripted control verified "
                                       f"under each page-noise kind given ({words.listed(*words.NOISE)}), the "
                                       "noise-aware control dismissing it, and the plain control failing where it "
                                       "stands in its way (docs/noise.md).")] = "",
) -> None:
    """Prove every selected instance solvable by its scripted control and every verifier strict (`--noise`: under
    page noise)."""
    from computerops.catalog.checking import check_plan, check_tasks
    from computerops.cli.console import print_task_checks
    if noise:
        _noise_check(tasks, noise, out, concurrency, sample, per_template, sample_seed)
        return
    whole = _catalog_tasks(tasks)
    selected = _sampled(whole, sample, per_template, sample_seed)
    started = time.monotonic()
    checks = _scripted_check(out, "tasks-check", lambda target: check_tasks(selected, target, _progress,
                                                                            concurrency=concurrency))
    seconds = time.monotonic() - started
    print_task_checks(checks)
    episodes = sum(len(c.results) for c in checks)
    line = (f"{len(checks)} instances, {episodes} episodes in {seconds:.0f} s at concurrency {concurrency} "
            f"({seconds / max(episodes, 1):.2f} s an episode)")
    if len(selected) < len(whole):
        planned = len(check_plan(whole))
        line += (f"; the whole selection ({len(whole)} instances, {planned} episodes) at this rate: about "
                 f"{planned * seconds / max(episodes, 1) / 60:.0f} minutes")
    _progress(line)
    if not all(c.ok for c in checks):
        raise _fail("some controls did not behave as the task declares", code=1)


def _noise_check(tasks: str, noise: str, out: Path | None, concurrency: int, sample: int | None,
                 per_template: int | None, sample_seed: int) -> None:
    """`tasks check --noise`: the noise-aware and the plain control of each selected instance under each kind; the
    kinds are read first, so a wrong one is refused before the catalog loads."""
    from computerops.catalog.noise_check import check_noise
    from computerops.cli.console import print_noise_checks
    from sites.kit.noise import parse_noise_kinds
    try:
        kinds = parse_noise_kinds(noise)
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    if not kinds:
        raise _fail("--noise: name at least one noise kind")
    selected = _sampled(_catalog_tasks(tasks), sample, per_template, sample_seed)
    started = time.monotonic()
    report = _scripted_check(out, "tasks-check-noise", lambda target: check_noise(
        selected, kinds, target, _progress, concurrency=concurrency))
    print_noise_checks(report)
    _progress(f"{len(selected)} instances x {len(kinds)} kinds, {2 * len(report.results)} episodes in "
              f"{time.monotonic() - started:.0f} s at concurrency {concurrency}")
    if not report.ok:
        raise _fail("a scripted control did not behave as page noise requires", code=1)


def audit_command(tasks: str, per_class: int | None, sample: int | None, per_template: int | None,
                  sample_seed: int) -> str:
    """The `tasks audit` command line that selects the same mutants again (what a Markdown report says made it)."""
    return ("computerops tasks audit" + ("" if tasks == "all" else f" --tasks {tasks}")
            + ("" if per_class is None else f" --per-class {per_class}")
            + ("" if sample is None else f" --sample {sample}")
            + ("" if per_template is None else f" --per-template {per_template}")
            + ("" if sample is None and per_template is None else f" --sample-seed {sample_seed}"))


@tasks_app.command("audit")
def tasks_audit(
    tasks: Annotated[str, typer.Option(help="`all` or comma-separated task ids.")] = "all",
    out: Annotated[Path | None, typer.Option(help="Keep the audit's two run directories here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json-out", help="Write the whole report (every mutant) here.")]
    = None,
    markdown: Annotated[Path | None, typer.Option("--markdown-out",
                                                  help="Write the counts and defects as Markdown here.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes at once.")] = 2,
    per_class: Annotated[int | None, typer.Option(min=1, help="A quicker audit: run at most this many browser "
                                                          "mutants of each class per task, and of each long-running "
                                                          "harness class in the whole audit (every answer mutant is "
                                                          "still judged).")] = None,
    sample: SampleOption = None,
    per_template: PerTemplateOption = None,
    sample_seed: SampleSeedOption = 0,
) -> None:
    """Generate mutants of every selected instance's scripted control, run them, and list every one the verifier let
    through (`--per-template K`: K sampled instances of each template)."""
    from computerops.catalog.audit import audit_markdown, audit_tasks
    from computerops.cli.console import print_audit
    selected = _sampled(_catalog_tasks(tasks), sample, per_template, sample_seed)
    report = _scripted_check(out, "tasks-audit",
                             lambda target: audit_tasks(selected, target, _progress, concurrency=concurrency,
                                                        per_class=per_class))
    print_audit(report)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(report.model_dump_json(indent=1), encoding="utf-8")
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        command = audit_command(tasks, per_class, sample, per_template, sample_seed)
        markdown.write_text(audit_markdown(report, command), encoding="utf-8")
    if not report.ok:
        raise _fail("the verifier let wrong solutions through or rejected a declared equivalent", code=1)


@tasks_app.command("blind")
def tasks_blind(
    files: Annotated[list[Path] | None, typer.Argument(help="Blind sets (files or folders); default: every set in "
                                                            "tasks/blind.")] = None,
    tasks: Annotated[str, typer.Option(help="`all` or comma-separated task ids: only their cases.")] = "all",
    out: Annotated[Path | None, typer.Option(help="Keep the run directory here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json-out", help="Write every case's result here.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes at once.")] = 2,
) -> None:
    """Run blind cases (wrong solutions and valid alternatives written without reading the checks) and list every
    wrong one the verifier let through and every valid one it refused."""
    from computerops.catalog.blind import BlindFileError, blind_cases, blind_files, run_blind
    from computerops.cli.console import print_blind
    from tasks import load_catalog
    catalog = load_catalog()
    wanted = None if tasks == "all" else {t.id for t in _catalog_tasks(tasks)}
    try:
        cases = blind_cases(blind_files(files or []), catalog, wanted)
    except BlindFileError as exc:
        raise _fail(str(exc)) from exc
    if not cases:
        raise _fail("no blind cases selected")
    results = _scripted_check(out, "tasks-blind", lambda target: run_blind(cases, catalog, target, _progress,
                                                                           concurrency=concurrency))
    print_blind(results)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(results.model_dump_json(indent=1), encoding="utf-8")
    if not results.ok:
        raise _fail("a wrong case was accepted, a valid one refused, or a case did not run", code=1)


@app.command()
def demo(
    out: Annotated[Path | None, typer.Option(help="Run directory (default: runs/demo-<time>).")] = None,
    tasks_check: Annotated[bool, typer.Option(help="End with `tasks check` on the subset (every control of its "
                                                   "tasks through the browser again: about two fifths of the time).")]
    = True,
    concurrency: Annotated[int, typer.Option(min=1, help="Episodes run at once, each with its own browser context "
                                                         "and tenant; results are the same as a serial run's.")] = 1,
) -> None:
    """Everything end to end against the SCRIPTED endpoint: reserve a subset, run it, verify, report, replay,
    tasks check (computerops/runs/demo.py says what it runs)."""
    from computerops.catalog.checking import check_tasks
    from computerops.catalog.subsets import SubsetError
    from computerops.cli.console import (
        print_demo_check,
        print_demo_check_start,
        print_demo_plan,
        print_demo_replays,
        print_demo_times,
    )
    from computerops.runs.bundle import BundleError, RunDirectory
    from computerops.runs.demo import DEMO_PHASES, PhaseTimes, default_target, plan_demo
    from computerops.runs.endpoint import EndpointError
    from tasks import TaskFileError, load_catalog
    try:
        plan = plan_demo(out or default_target(), load_catalog())
    except (BundleError, SubsetError, TaskFileError) as exc:
        raise _fail(str(exc)) from exc
    print_demo_plan(plan)
    from computerops.service.launch import PlannedRun
    times = PhaseTimes()
    with times.phase(DEMO_PHASES[0]):
        _execute(PlannedRun(config=plan.config, tasks=plan.tasks, out=plan.target), concurrency=concurrency)
        bundle = RunDirectory.open(plan.target)
        verification = _verify(bundle)  # replays every episode from disk; its receipts are printed below
    _report(bundle, as_json=False)
    episodes = len(bundle.records())
    print_demo_replays(verification.receipts, episodes, plan.target)
    checks = None
    if tasks_check:
        print_demo_check_start(plan.check_dir)
        try:
            with times.phase(DEMO_PHASES[1]):
                checks = asyncio.run(check_tasks(plan.tasks, plan.check_dir, _progress))
        except (EndpointError, BundleError) as exc:
            raise _fail(str(exc)) from exc
    print_demo_check(checks)
    print_demo_times(times)
    replayed = sum(r.result == "PASS" for r in verification.receipts) == episodes
    if not (replayed and verification.passed and all(c.ok for c in checks or [])):
        raise _fail("the demo found replay failures or tasks that do not behave as declared", code=1)


@subset_app.command("reserve")
def subset_reserve(
    count: Annotated[int, typer.Option(help="How many tasks to draw.", min=1)],
    seed: Annotated[int, typer.Option(min=0, help="The draw's seed (recorded in the file).")],
    out: Annotated[Path, typer.Option(help="The subset file to write (never overwritten).")],
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="Draw fresh instances: varying templates at seeds drawn now, never published.")] = False,
) -> None:
    """Draw a subset of the catalog's instances and lock it with every instance's hash and spec, before any run."""
    from computerops.catalog.subsets import SubsetError, reserve_subset, write_subset
    from computerops.cli.console import print_subset
    from tasks import TaskFileError, load_catalog
    try:
        subset = reserve_subset(load_catalog(), count, seed, fresh=fresh)
        write_subset(out, subset)
    except (TaskFileError, SubsetError) as exc:
        raise _fail(str(exc)) from exc
    print_subset(subset, out)


@app.command()
def serve(
    site: str = "helpdesk",
    seed: Annotated[int, typer.Option(min=0, help="Seed of the site's tenant.")] = 1,
    host: str = "127.0.0.1",
    port: PortOption = 8000,
) -> None:
    """Serve the sites for a person, with one fresh tenant; prints the URL that enters it."""
    import uvicorn

    from computerops.cli.console import console
    from sites.kit.app import create_app
    from sites.registry import tenant_registry
    if (cannot := unlistenable(host, port)) is not None:
        raise _fail(cannot)
    registry = tenant_registry()
    try:
        tenant = registry.create(site, seed)
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    # A one-time entry code, not the tenant token: the address may end up in a terminal's scrollback or the log.
    console.print(f"Tenant for {site} (seed {seed}) ready. Open http://{host}:{port}/_enter/"
                  f"{registry.entry_code(tenant)} (the address enters once)")
    uvicorn.run(create_app(registry), host=host, port=port, log_level="info")


@app.command()
def server(
    host: Annotated[str, typer.Option(help="Interface to bind; anything but loopback requires --token.")]
    = "127.0.0.1",
    port: PortOption = 8700,
    runs: Annotated[Path, typer.Option(help="The runs folder: every run directory in it is listed, launched runs "
                                            "are written there (the server keeps its own state in RUNS/.server).")]
    = Path("runs"),
    database: Annotated[str | None, typer.Option(help="The run index's SQLAlchemy URL (default: SQLite in "
                                                      "RUNS/.server; postgresql+psycopg://... for a shared one).")]
    = None,
    token: Annotated[str | None, typer.Option(envvar="COMPUTEROPS_SERVER_TOKEN",
                                              help="Required of every request: Authorization: Bearer TOKEN for the "
                                                   "API, a login for pages (or set COMPUTEROPS_SERVER_TOKEN).")]
    = None,
    ray_address: Annotated[str | None, typer.Option(help="The Ray cluster that runs launched with the ray executor "
                                                         "join (default: each starts a local Ray in its worker).")]
    = None,
    api_key_env: Annotated[list[str] | None, typer.Option(
        "--api-key-env", help="An environment variable launches may name as their endpoint's API key (repeat for "
                              "more; default: none). The server sends its value to the base URL a launch names.")]
    = None,
) -> None:
    """Serve the operator server: launch and watch runs, read reports and episodes step by step, compare runs
    (docs/server.md)."""
    import uvicorn
    from pydantic import ValidationError
    from sqlalchemy.exc import SQLAlchemyError

    from computerops.cli.console import console
    from computerops.core.problems import problems
    from computerops.server.app import create_server_app
    from computerops.server.settings import ServerSettings, is_loopback
    if not is_loopback(host) and not token:
        raise _fail(f"--host {host} serves beyond this machine: give --token (or COMPUTEROPS_SERVER_TOKEN)")
    from computerops.server.state import ServerState
    try:
        settings = ServerSettings(runs=runs, host=host, port=port, database=database, token=token or None,
                                  ray_address=ray_address, api_key_envs=tuple(api_key_env or ()))
    except ValidationError as exc:
        raise _fail(problems(exc, located=False)) from exc
    if (cannot := unlistenable(host, port)) is not None:
        raise _fail(cannot)
    try:
        state = ServerState.start(settings)  # the index opened and rebuilt before the port is taken
    except (OSError, ValueError, ImportError, SQLAlchemyError) as exc:
        raise _fail(f"cannot open the run index {settings.database_url.split('@')[-1]}: {exc}") from exc
    where = "this machine only" if is_loopback(host) else f"every client that reaches {host}"
    guard = "every request needs the token" if token else "no token"
    console.print(f"Operator server at http://{host}:{port}/ for {where} ({guard}); runs in {runs}, index "
                  f"{settings.database_url.split('://')[0]}.", markup=False)
    try:
        uvicorn.run(create_server_app(settings, state), host=host, port=port, log_level="info")
    finally:
        state.close()  # its jobs interrupted: their runs stay resumable


@app.command("mock-llm")
def mock_llm(
    policy: Annotated[str, typer.Option(help=f"Default scripted policy: {words.listed(*words.SCRIPTED)}.")]
    = "oracle",
    host: str = "127.0.0.1",
    port: PortOption = 8799,
    tasks: Annotated[str, typer.Option(help="The tasks it knows (found by their instruction): instance and "
                                             "template ids, comma-separated, or 'all' (every published instance: "
                                             "generating them takes tens of seconds).")] = "all",
) -> None:
    """Serve the SCRIPTED OpenAI-compatible endpoint (/v1/models, /v1/chat/completions)."""
    import uvicorn

    from adapter.scripted import create_scripted_app
    from computerops.cli.console import console
    from tasks import TaskFileError, load_catalog, select_tasks
    try:
        scripted = create_scripted_app(select_tasks(load_catalog(), tasks), default_policy=policy)
    except (TaskFileError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    if (cannot := unlistenable(host, port)) is not None:
        raise _fail(cannot)
    console.print(f"Scripted endpoint (policy {policy}) at http://{host}:{port}/v1 — results are SCRIPTED.")
    uvicorn.run(scripted, host=host, port=port, log_level="info")


@app.command()
def observe(
    target: Annotated[str, typer.Argument(help="A catalog page (/helpdesk/tickets), a local HTML file or a URL.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the observation as JSON.")] = False,
    compare: Annotated[bool, typer.Option(help="Also print Playwright's ai snapshot of the page, both sizes, and "
                                               "the controls checked against Chromium's accessibility tree.")]
    = False,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the fresh tenant a catalog page is served from.")] = 1,
    max_chars: Annotated[int, typer.Option(help="The observation's size bound.", min=500)] = defaults.OBSERVATION_CHARS,
) -> None:
    """Render a page exactly as the model sees it, with its control table."""
    from playwright.async_api import Error as PlaywrightError

    from computerops.catalog.observing import TargetError, observe_target, parse_target
    from computerops.cli.console import print_observed
    try:
        parsed = parse_target(target)
        observed = asyncio.run(observe_target(parsed, seed=seed, max_chars=max_chars, compare=compare))
    except (TargetError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    except PlaywrightError as exc:
        raise _fail(f"the browser could not open {target}: {str(exc).splitlines()[0]}") from exc
    if as_json:
        typer.echo(observed.model_dump_json(indent=2))
    else:
        print_observed(observed)


@dataclass(frozen=True)
class Levels:
    """`--levels 1,2,4,8`: positive whole numbers, comma-separated."""

    values: tuple[int, ...]

    @classmethod
    def parse(cls, text: str | Levels) -> Levels:
        if isinstance(text, Levels):  # the default
            return text
        numbers = [whole_number(n.strip()) for n in text.split(",") if n.strip()]
        if not numbers or not all(n is not None and n >= 1 for n in numbers):
            raise typer.BadParameter(f"--levels must be comma-separated positive integers like 1,2,4,8; got {text!r}")
        return cls(tuple(n for n in numbers if n is not None))

    def __str__(self) -> str:
        return ",".join(map(str, self.values))


def _bench_instances(out: Path) -> None:
    """`bench --only instances`: what a published and a fresh instance cost, beside the reset, as ratios."""
    from computerops.bench.instances import bench_instances
    from computerops.cli.console import console
    from tasks import TaskFileError, load_catalog
    try:
        with tempfile.TemporaryDirectory(prefix="computerops-bench-") as tmp:
            figures = bench_instances(load_catalog(), Path(tmp))
    except (TaskFileError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(figures.model_dump_json(indent=2) + "\n", encoding="utf-8")
    console.print(f"{figures.templates} varying templates. Reset (fresh tenant of a seeded site): median "
                  f"{figures.reset_ms.median} ms. Published instance generated: median "
                  f"{figures.published_instance_ms.median} ms ({figures.published_to_reset}x reset). Fresh instance "
                  f"(site seeded, instance generated, first tenant): median {figures.fresh_instance_ms.median} ms "
                  f"({figures.fresh_to_reset}x reset; {figures.fresh_undefined} fresh seeds at which a template "
                  f"defined no instance, each replaced by the next). Written to {out}.", markup=False)


def _bench_noise(out: Path, tasks: str, repeats: int) -> None:
    """`bench --only noise`: each page-noise kind against the clean page, as ratios (computerops/bench/noise.py)."""
    from computerops.bench.noise import run_noise_bench
    from computerops.cli.console import console
    from tasks import TaskFileError, load_catalog, select_tasks
    try:
        catalog = load_catalog()
        selected = ([t for t in catalog.values() if not t.spec.faults] if tasks.strip() == "all"
                    else select_tasks(catalog, tasks))
        with tempfile.TemporaryDirectory(prefix="computerops-bench-") as tmp:
            figures = asyncio.run(run_noise_bench(selected, Path(tmp), _progress, repeats))
    except (TaskFileError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(figures.model_dump_json(indent=2) + "\n", encoding="utf-8")
    console.print(f"{len(figures.pages)} page observations (clean and each kind). Written to {out}.", markup=False)


@app.command()
def bench(
    out: Annotated[Path, typer.Option(help="Where to write the figures as JSON.")] = Path("bench.json"),
    tasks: Annotated[str, typer.Option(help="`all` (the catalog without its fault scenarios, whose injected "
                                            "faults and waits are not the harness's overhead) or comma-separated "
                                            "task ids.")] = "all",
    episodes: Annotated[int, typer.Option(help="SCRIPTED episodes at each concurrency level and per executor.",
                                          min=1)] = 16,
    levels: Annotated[Levels, typer.Option(parser=Levels.parse, metavar="N[,N...]",
                                           help="Comma-separated concurrency levels.")] = Levels((1, 2, 4, 8)),
    reset_samples: Annotated[int, typer.Option(help="Fresh tenants created per site to time the reset.", min=1)] = 50,
    page_repeats: Annotated[int, typer.Option(help="Times each page is observed and snapshotted.", min=1)] = 5,
    floor_repeats: Annotated[int, typer.Option(help="Paired repetitions of each step kind against bare Playwright.",
                                               min=1)] = 10,
    page_limit: Annotated[int, typer.Option(help="Most pages crawled per site.", min=1)] = 40,
    markdown: Annotated[bool, typer.Option(help="Also print the README's figures table.")] = False,
    ray_workers: Annotated[int, typer.Option(help="W: the local executor at concurrency W against the Ray executor "
                                                  "at W workers, on the same plan (when Ray is installed).",
                                             min=1)] = 2,
    no_ray: Annotated[bool, typer.Option("--no-ray", help="Skip the local-against-Ray part and its scaling "
                                                          "model.")] = False,
    ray_address: Annotated[str | None, typer.Option(help="The Ray cluster to join (default: a local Ray started "
                                                         "in-process).")] = None,
    only: Annotated[str | None, typer.Option(help="`executors`: only the local-against-Ray part and its scaling "
                                                  "model (a minute or so, not the whole bench); written as "
                                                  "computerops.bench_executors/1. `instances`: only what a "
                                                  "published and a fresh task instance cost beside the reset "
                                                  "(seconds); computerops.bench_instances/1. `noise`: only "
                                                  "each page-noise kind against the clean page (one start page "
                                                  "a site); computerops.noise_bench/1.",
                                             metavar="PART")] = None,
) -> None:
    """Measure reset, observation size and time, control recall, step overhead, replay and throughput, and the local
    executor against the Ray executor with a modelled N-node scaling figure (computerops/bench/scaling.py)."""
    import importlib.util

    from computerops.bench.measure import (
        BenchOptions,
        bench_markdown,
        executors_markdown,
        run_bench,
        run_executors_bench,
        write_bench,
    )
    from computerops.cli.console import console, print_bench, print_executors
    from tasks import TaskFileError, load_catalog, select_tasks
    if only == "instances":
        _bench_instances(out)
        return
    if only == "noise":
        _bench_noise(out, tasks, page_repeats)
        return
    if only not in (None, "executors"):
        raise _fail(f"--only takes `executors`, `instances` or `noise`, got {only!r}")
    has_ray = importlib.util.find_spec("ray") is not None
    if only == "executors" and (no_ray or not has_ray):
        raise _fail("--only executors needs Ray (pip install -e '.[ray]') and no --no-ray")
    if not no_ray and not has_ray:
        _progress("executors: Ray is not installed, so local against Ray is not measured "
                  "(pip install -e '.[ray]')")
    try:
        catalog = load_catalog()
        if tasks.strip() == "all":
            selected = [task for task in catalog.values() if not task.spec.faults]
        else:
            selected = select_tasks(catalog, tasks)
        options = BenchOptions(episodes=episodes, levels=list(levels.values), reset_samples=reset_samples,
                               page_repeats=page_repeats, page_limit=page_limit,
                               floor_repeats=floor_repeats, ray_workers=None if no_ray or not has_ray else ray_workers,
                               ray_address=ray_address)
    except (TaskFileError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    if only == "executors":
        part = asyncio.run(run_executors_bench(selected, options, _progress))
        write_bench(out, part)
        print_executors(part.executors, part.targets)
        console.print(f"Figures written to {out}")
        if markdown:
            typer.echo(executors_markdown(part))
        return
    figures = asyncio.run(run_bench(selected, options, _progress))
    write_bench(out, figures)
    print_bench(figures)
    console.print(f"Figures written to {out}")
    if markdown:
        typer.echo(bench_markdown(figures))


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="The first run directory (A).")],
    run_b: Annotated[Path, typer.Argument(help="The second run directory (B).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Two runs task by task: which episodes changed outcome, and why (the first named check whose result differs)
    (computerops/report/compare.py)."""
    from computerops.cli.console import print_comparison
    from computerops.service import reading
    try:
        comparison = reading.compare(run_a, run_b)
    except ServiceError as exc:
        raise _refused(exc) from exc
    if as_json:
        typer.echo(comparison.model_dump_json(indent=1))
    else:
        print_comparison(comparison)


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    out: Annotated[Path, typer.Option(help="The file to write (refused if it exists).")],
    export_format: Annotated[str, typer.Option("--format", help="jsonl: one line per episode, its record, verdict "
                                                                "and receipt (pandas.read_json(FILE, lines=True)); "
                                                                "inspect: an Inspect AI log (FILE.eval, `inspect "
                                                                "view`; needs the inspect extra: pip install -e "
                                                                "'.\\[inspect]' in the checkout).")]
    = "jsonl",
) -> None:
    """Write a run's episodes for other tools (computerops/runs/export.py): each checked against the run's checksums."""
    from computerops.cli.console import console
    from computerops.service import reading
    try:
        written = reading.export(run_dir, out, export_format)
    except ServiceError as exc:
        raise _refused(exc) from exc
    console.print(f"Exported {written} episodes to {out}")


@app.command()
def verify(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """Check a run from its raw evidence: checksums, verdicts re-judged, records recomputed, every episode
    replayed, the summary recomputed. Exit 0 and evidence level E2 on PASS; exit 1 with the first mismatch."""
    from computerops.runs.bundle import BundleError, RunDirectory, verifier_lock
    try:
        bundle = RunDirectory.open(run_dir)
        # A run still being written is refused, and nothing writes during verify; a read-only copy verifies too.
        with verifier_lock(bundle.root):
            passed = _verify(bundle).passed
    except BundleError as exc:
        raise _fail(str(exc)) from exc
    if not passed:
        raise typer.Exit(1)


def _verify(bundle: RunDirectory) -> Verification:
    """Run `verify` on a bundle and print the outcome; a pass is recorded (evidence level E2) where the run can be
    written, and where it cannot (a read-only copy), a note says that it was not."""
    from computerops.cli.console import errors, print_verification
    from computerops.service import reading
    verification, unrecorded = reading.verify(bundle)
    print_verification(verification, bundle.root, recorded=unrecorded is None)
    if unrecorded is not None:
        errors.print(f"note: {unrecorded}", markup=False, highlight=False)
    return verification


corpus_app = typer.Typer(help="The golden replay corpus: reference episodes of every task, replayed in CI.",
                         no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")


@corpus_app.command("record")
def corpus_record(
    tasks: Annotated[str, typer.Option(help="`all` or comma-separated task ids.")] = "all",
    root: Annotated[Path | None, typer.Option("--dir", help="The corpus directory (default replays/corpus).")]
    = None,
    concurrency: Annotated[int, typer.Option(help="Episodes run at once; the entries are the same at any level.",
                                             min=1)] = 1,
) -> None:
    """Run the scripted control, the no-op policy and the first negative control of each template's first published
    instance through the browser and (re)write their corpus entries; `--tasks all` also removes entries of tasks no
    longer in the corpus."""
    from computerops.catalog.corpus_recording import record_corpus
    from computerops.cli.console import console
    from computerops.runs.bundle import BundleError
    from computerops.runs.endpoint import EndpointError
    from computerops.runs.runner import RunAborted
    from replays.corpus import CORPUS_ROOT, CorpusError
    from tasks import TaskFileError, load_catalog, select_tasks
    target = root or CORPUS_ROOT
    try:
        catalog = load_catalog()
        covered = catalog.first_instances()  # the corpus holds each template's first published instance
        selected = [task for task in select_tasks(catalog, tasks) if task.id in covered]
    except TaskFileError as exc:
        raise _fail(str(exc)) from exc
    if not selected:
        raise _fail("the corpus holds the first published instance of each template; none of these is one")
    started = time.monotonic()
    try:
        recording = asyncio.run(record_corpus(selected, target, _progress, concurrency=concurrency,
                                              prune=tasks.strip() == "all"))
    except (EndpointError, BundleError, CorpusError) as exc:
        raise _fail(str(exc)) from exc
    except RunAborted as exc:
        raise _fail(f"{exc} Nothing was written to the corpus.", code=1) from exc
    changed = [r for r in recording.entries if r.changed]
    for removed in recording.removed:
        console.print(f"removed {removed}")
    console.print(f"Recorded {len(recording.entries)} entries of {len(selected)} tasks into {target} in "
                  f"{time.monotonic() - started:.1f} s: {len(changed)} new or changed, "
                  f"{len(recording.entries) - len(changed)} unchanged, {len(recording.removed)} removed.")


@corpus_app.command("check")
def corpus_check(
    root: Annotated[Path | None, typer.Option("--dir", help="The corpus directory (default replays/corpus).")]
    = None,
) -> None:
    """Replay every corpus entry on a fresh tenant (no browser); exit 1 on any difference or uncovered task."""
    from computerops.cli.console import console, errors
    from replays.corpus import CORPUS_ROOT, CorpusError, check_corpus, entry_files
    from tasks import TaskFileError, load_catalog
    from tasks.catalog import Catalog
    target = root or CORPUS_ROOT
    if not target.is_dir():
        raise _fail(f"--dir {target}: {'not a directory' if target.exists() else 'no such directory'}")
    if not entry_files(target):  # else every task is reported uncovered, and the folder never named
        raise _fail(f"--dir {target}: no corpus entries in it (record them with `computerops corpus record`)")
    try:
        catalog = load_catalog()
        # The corpus covers each template's first instance; a plain mapping (a test's catalog) covers its tasks.
        covered = catalog.first_instances() if isinstance(catalog, Catalog) else catalog
        result = asyncio.run(check_corpus(target, covered))
    except (CorpusError, TaskFileError) as exc:
        raise _fail(str(exc)) from exc
    for line in result.messages():
        errors.print(line, markup=False, highlight=False)
    passed = len(result.results) - len(result.failures)
    summary = (f"{passed}/{len(result.results)} corpus entries replay PASS "
               f"({sum(r.operations for r in result.results)} operations); "
               f"{len({r.task_id for r in result.results})} tasks covered, {len(result.uncovered)} uncovered.")
    if not result.ok:
        raise _fail(summary, code=1)
    console.print(summary)



def main() -> None:
    app()
