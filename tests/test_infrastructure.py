"""Infrastructure failures: their own outcome, counted apart from attempted with their causes, and the run
halts after a few in a row instead of recording more of them; the halted run is sealed and never verifies as
complete; a resume runs them again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from computerops.cli.main import app
from computerops.report.run import summarize
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import RunConfig, parse_endpoint, plan_episodes
from computerops.runs.runner import HALT_AFTER_INFRASTRUCTURE_FAILURES, RunHalted, execute_run
from computerops.runs.serving import serve_app
from computerops.runs.verification import verify_run
from tasks import load_catalog

TASK_IDS = ["helpdesk.solve-ticket@1", "helpdesk.answer-latest-order@1", "helpdesk.answer-valid-approval@1",
            "helpdesk.trace-and-pend@1", "helpdesk.refund-with-approval@1"]


async def models(_: Request) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [{"id": "overloaded", "object": "model"}]})


GIVE_UP = {"id": "x", "object": "chat.completion", "model": "overloaded", "choices": [{
    "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [{
        "id": "c", "type": "function", "function": {"name": "done", "arguments": '{"success": false}'}}]}}]}
RECOVERED = {"now": False}
"""Set to make the overloaded endpoint answer (a give-up) from then on: the same endpoint, fixed."""


async def completions(_: Request) -> JSONResponse:
    if RECOVERED["now"]:
        return JSONResponse(GIVE_UP)
    return JSONResponse({"error": {"message": "overloaded"}}, status_code=503)


OVERLOADED = Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", completions,
                                                                   methods=["POST"])])


@pytest.mark.browser
async def test_repeated_5xx_after_retries_halts_the_run_with_every_failure_admitted(tmp_path: Path) -> None:
    catalog = load_catalog()
    tasks = [catalog[task_id] for task_id in TASK_IDS]
    async with serve_app(OVERLOADED) as origin:
        endpoint = parse_endpoint(None, base_url=f"{origin}/v1", model="overloaded", api_key_env=None)
        config = RunConfig(run_id="halt", tasks=TASK_IDS, endpoint=endpoint, episodes=plan_episodes(TASK_IDS, endpoint))
        with pytest.raises(RunHalted, match=f"{HALT_AFTER_INFRASTRUCTURE_FAILURES} infrastructure failures in a row"):
            await execute_run(config, tasks, tmp_path / "run")
    bundle = RunDirectory.open(tmp_path / "run")
    records = bundle.records()
    assert len(records) == HALT_AFTER_INFRASTRUCTURE_FAILURES < len(TASK_IDS), "no more episodes were started"
    assert {r.outcome for r in records} == {"infrastructure_failure"}
    assert {r.stop_reason for r in records} == {"infrastructure"}
    assert {(r.prompt_tokens, r.completion_tokens) for r in records} == {(None, None)}, "no reply: tokens unknown"
    assert {r.infrastructure_cause for r in records} == {"HTTP 503"}
    total = summarize(bundle.manifest(), records).total
    assert (total.episodes, total.infrastructure_failures, total.infrastructure_causes) == (3, 3, {"HTTP 503": 3})
    # The endpoint's failures say nothing of the agent: they are outside attempted, no finish and every rate.
    assert (total.attempted, total.no_finish, total.verified_success) == (0, 0, 0)
    assert total.verified_success_rate.denominator == 0 and total.false_completion_over_attempted.rate is None
    verification = await verify_run(bundle)
    assert not verification.passed, "a halted run is incomplete: it never verifies as complete"
    assert verification.problems == [f"the run is incomplete: 3 of 5 planned episodes admitted, 2 missing "
                                     f"({', '.join(p.episode_id for p in config.episodes[3:])}), 3 infrastructure "
                                     f"failures to run again; continue it with `computerops run --resume "
                                     f"{bundle.root}` (an incomplete run is never E2)"]


@pytest.mark.browser
async def test_resume_runs_infrastructure_failures_again_and_then_the_run_is_complete(tmp_path: Path) -> None:
    catalog = load_catalog()
    tasks = [catalog[task_id] for task_id in TASK_IDS]
    RECOVERED["now"] = False
    async with serve_app(OVERLOADED) as origin:
        endpoint = parse_endpoint(None, base_url=f"{origin}/v1", model="overloaded", api_key_env=None)
        config = RunConfig(run_id="halt", tasks=TASK_IDS, endpoint=endpoint, episodes=plan_episodes(TASK_IDS, endpoint))
        with pytest.raises(RunHalted):
            await execute_run(config, tasks, tmp_path / "run")
        RECOVERED["now"] = True  # the endpoint fixed, as the halt message asks
        try:
            await execute_run(config, tasks, tmp_path / "run", resume=True)
        finally:
            RECOVERED["now"] = False
    bundle = RunDirectory.open(tmp_path / "run")
    records = bundle.records()
    assert [r.episode_id for r in records] == [p.episode_id for p in config.episodes]
    assert {r.outcome for r in records} == {"honest_failure"}, "every episode now has the agent's outcome"
    assert [r.outcome for r in bundle.superseded()] == ["infrastructure_failure"] * 3
    (resume,) = bundle.resumes()
    assert resume.rerun_infrastructure == [p.episode_id for p in config.episodes[:3]]
    assert sorted(resume.set_apart) == resume.rerun_infrastructure, "the failed attempts' evidence is kept apart"
    completeness = bundle.completeness()
    assert completeness.complete and completeness.rerun_after_infrastructure == 3
    total = summarize(bundle.manifest(), records).total
    assert (total.attempted, total.infrastructure_failures) == (5, 0)
    verification = await verify_run(bundle)
    assert verification.passed, verification.problems


async def not_a_completion(_: Request) -> JSONResponse:
    return JSONResponse({"not": "a chat completion"})


ANSWERS_NONSENSE = Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", not_a_completion,
                                                                        methods=["POST"])])


@pytest.mark.browser
async def test_a_run_that_stops_short_of_a_halt_with_an_infrastructure_failure_to_run_again_exits_1(
    tmp_path: Path
) -> None:
    out = tmp_path / "run"
    async with serve_app(ANSWERS_NONSENSE) as origin:
        result = await asyncio.to_thread(CliRunner().invoke, app, [
            "run", "--tasks", TASK_IDS[0], "--base-url", f"{origin}/v1", "--model", "overloaded", "--tool-mode", "text",
            "--out", str(out)])
    said = " ".join(result.output.split())
    assert result.exit_code == 1, said
    assert (f"the run is incomplete: 1 of 1 planned episodes admitted, 1 infrastructure failures to run again; "
            f"continue it with `computerops run --resume {out}`") in said, said
    assert [r.outcome for r in RunDirectory.open(out).records()] == ["infrastructure_failure"]


ONE_PAIR = """\
id: infrastructure-one-pair
version: 1
question: Does an endpoint that answers nonsense leave the experiment run incomplete?
tasks:
  - id: helpdesk.solve-ticket@1
    faults: [{fault: transient_5xx, target: {method: POST, path: /helpdesk/tickets/T-2274/status}}]
endpoint: {kind: scripted, policies: [oracle]}
arms: [control, treatment]
repetitions: 1
order: {kind: counterbalanced}
seed: 7
vary_seed: false
analysis:
  primary: paired_false_completion
  intervals: {confidence: 0.95, resamples: 200, seed: 1}
  descriptive: [cells]
"""


@pytest.mark.browser
async def test_an_experiment_run_with_infrastructure_failures_to_run_again_exits_1(tmp_path: Path) -> None:
    source, lock, out = tmp_path / "one-pair.yaml", tmp_path / "one-pair.lock.json", tmp_path / "run"
    source.write_text(ONE_PAIR, encoding="utf-8")
    async with serve_app(ANSWERS_NONSENSE) as origin:
        frozen = await asyncio.to_thread(CliRunner().invoke, app, [
            "experiment", "freeze", str(source), "--base-url", f"{origin}/v1", "--model", "overloaded",
            "--out", str(lock)])
        assert frozen.exit_code == 0, frozen.output
        result = await asyncio.to_thread(CliRunner().invoke, app, ["experiment", "run", str(lock), "--out", str(out)])
    said = " ".join(result.output.split())
    assert result.exit_code == 1, said
    assert (f"the run is incomplete: 2 of 2 planned episodes admitted, 2 infrastructure failures to run again; "
            f"continue it with `computerops experiment run {lock} --resume {out}`") in said, said
    assert [r.outcome for r in RunDirectory.open(out).records()] == ["infrastructure_failure"] * 2
