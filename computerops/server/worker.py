"""A job's worker process: `python -m computerops.server.worker JOB.json` runs what the spec says through the
service layer (the same calls as `computerops run`, `run --resume`, `experiment run` and `verify`) and prints its
progress lines. Exit 0 when the run is complete, 1 when it stopped incomplete or failed, 2 when it was refused."""

from __future__ import annotations

import sys
from pathlib import Path


def _progress(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str]) -> int:
    from computerops.runs.bundle import RunDirectory
    from computerops.server.jobs import JobSpec
    from computerops.service.errors import ServiceError
    from computerops.service.launch import launch, launch_experiment, plan_resume, plan_run
    if len(argv) != 2:
        print("usage: python -m computerops.server.worker JOB.json", file=sys.stderr)
        return 2
    spec = JobSpec.model_validate_json(Path(argv[1]).read_text(encoding="utf-8"))
    out = Path(spec.runs) / spec.run_id
    if spec.kind == "verify":
        return _verify(out)
    try:
        if spec.kind == "experiment":
            assert spec.lock is not None
            launch_experiment(Path(spec.lock), out, _progress, concurrency=spec.concurrency, executor=spec.executor)
        elif spec.kind == "resume":
            launch(plan_resume(out), _progress, concurrency=spec.concurrency, trace=spec.trace, resume=True,
                   executor=spec.executor)
        else:
            assert spec.request is not None
            launch(plan_run(spec.request, out), _progress, concurrency=spec.concurrency, trace=spec.trace,
                   executor=spec.executor)
    except ServiceError as exc:
        print(f"error: {exc.message}", file=sys.stderr, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: the run stays resumable", file=sys.stderr, flush=True)
        return 1
    completeness = RunDirectory.open(out).completeness()
    if not completeness.complete:
        print(completeness.incomplete("resume it"), flush=True)
        return 1
    print(f"run {spec.run_id} complete: {completeness.admitted} episodes admitted", flush=True)
    return 0


def _verify(out: Path) -> int:
    """`computerops verify` on the run: exit 0 on PASS (evidence level E2 recorded), 1 with the first problem."""
    from computerops.runs.bundle import BundleError, verifier_lock
    from computerops.service.reading import open_run, verify
    try:
        bundle = open_run(out)
        with verifier_lock(bundle.root):
            verification, unrecorded = verify(bundle)
    except BundleError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    if not verification.passed:
        print(f"verify FAIL: {verification.problems[0] if verification.problems else 'see the run'}", flush=True)
        return 1
    print("verify PASS" + ("" if unrecorded is None else f" (not recorded: {unrecorded})"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
