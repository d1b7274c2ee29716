"""Infrastructure failures: their own outcome, counted in attempted, and the run halts after a few in a row
instead of recording more of them; the halted run is sealed and still verifies."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from computerops.bundle import RunDirectory
from computerops.config import RunConfig, parse_endpoint, plan_episodes
from computerops.report import summarize
from computerops.runner import HALT_AFTER_INFRASTRUCTURE_FAILURES, RunHalted, execute_run
from computerops.serving import serve_app
from computerops.verify import verify_run
from tasks import load_catalog

TASK_IDS = ["helpdesk.solve-ticket", "helpdesk.answer-latest-order", "helpdesk.answer-valid-approval",
            "helpdesk.trace-and-pend", "helpdesk.refund-with-approval"]


async def models(_: Request) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [{"id": "overloaded", "object": "model"}]})


async def completions(_: Request) -> JSONResponse:
    return JSONResponse({"error": {"message": "overloaded"}}, status_code=503)


OVERLOADED = Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", completions,
                                                                   methods=["POST"])])


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
    total = summarize(bundle.manifest(), records).total
    assert (total.attempted, total.infrastructure_failures, total.verified_success) == (3, 3, 0)
    assert total.false_completion_rate_over_attempted == 0.0, "infrastructure failures stay in the denominator"
    verification = await verify_run(bundle)
    assert verification.passed, verification.problems
