"""What the CLI and the server read from run directories: a run opened, its report, its verification, replay,
export and comparison, and reserved subsets. Each refusal is a `ServiceError` naming the run or file."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from computerops.service.errors import ServiceError

if TYPE_CHECKING:
    from computerops.catalog.subsets import ReservedSubset
    from computerops.experiment.analysis import ExperimentAnalysis
    from computerops.experiment.gate import EvidenceLevel
    from computerops.experiment.lock import ExperimentLock
    from computerops.report.compare import RunComparison
    from computerops.report.run import RunReport
    from computerops.runs.bundle import RunDirectory
    from computerops.runs.verification import Verification
    from replays.receipt import Receipt

ExportFormat = Literal["jsonl", "inspect"]


def open_run(run_dir: Path) -> RunDirectory:
    """The run directory at `run_dir`; ServiceError (not found) when it is none."""
    from computerops.runs.bundle import BundleError, RunDirectory
    try:
        return RunDirectory.open(run_dir)
    except BundleError as exc:
        raise ServiceError(str(exc), "not_found") from exc


def run_report_of(bundle: RunDirectory) -> RunReport:
    """A run's report, computed from its records and manifest (the same numbers in every rendering)."""
    from computerops.report.run import run_report
    from computerops.runs.bundle import BundleError
    from computerops.runs.verification import reviewer_verified
    try:
        manifest = bundle.manifest()
        records = bundle.records()
        return run_report(manifest.config.run_id, records, declared_scripted=manifest.scripted, manifest=manifest,
                          completeness=bundle.completeness(), verified_by_reviewer=reviewer_verified(bundle))
    except (BundleError, ValueError) as exc:
        raise ServiceError(str(exc), "conflict") from exc


def verify(bundle: RunDirectory) -> tuple[Verification, str | None]:
    """`verify` on a run: its verification, recorded where the run can be written (evidence level E2), and why it
    was not recorded where it could not be (a read-only copy), else None. The caller holds the verifier lock."""
    from computerops.runs.bundle import BundleError
    from computerops.runs.verification import record_verification, verify_run
    verification = asyncio.run(verify_run(bundle))
    unrecorded = None
    if verification.passed:
        try:
            record_verification(bundle, verification)
        except BundleError as exc:
            unrecorded = str(exc)
    return verification, unrecorded


def replay(run_dir: Path) -> list[Receipt]:
    """Every episode's saved operations replayed on a fresh tenant: one receipt each."""
    from computerops.runs.bundle import BundleError
    from computerops.runs.replaying import replay_run
    from tasks import TaskFileError
    try:
        return asyncio.run(replay_run(open_run(run_dir)))
    except (BundleError, TaskFileError) as exc:
        raise ServiceError(str(exc), "conflict") from exc


def export(run_dir: Path, out: Path, export_format: str) -> int:
    """Write a run's episodes for other tools (computerops/runs/export.py, inspect_log.py); the count written."""
    from computerops.runs.bundle import BundleError
    from computerops.runs.export import export_run
    if export_format not in get_args(ExportFormat):
        raise ServiceError(f"--format {export_format!r}: the formats are {', '.join(get_args(ExportFormat))}")
    if out.exists():
        raise ServiceError(f"{out} exists; export writes a new file", "conflict")
    if export_format == "inspect" and out.suffix not in (".eval", ".json"):
        raise ServiceError(f"{out}: an Inspect AI log is FILE.eval (or FILE.json)")
    try:
        bundle = open_run(run_dir)
        if export_format == "inspect":
            from computerops.runs.inspect_log import write_inspect_log
            return write_inspect_log(bundle, out)
        return export_run(bundle, out)
    except (BundleError, ValueError, ImportError) as exc:
        raise ServiceError(str(exc), "conflict") from exc


def compare(run_a: Path, run_b: Path) -> RunComparison:
    """Two runs task by task (computerops/report/compare.py)."""
    from computerops.report.compare import compare_runs
    from computerops.runs.bundle import BundleError
    try:
        return compare_runs(open_run(run_a), open_run(run_b))
    except (BundleError, ValueError) as exc:
        raise ServiceError(str(exc), "conflict") from exc


def reserve(count: int, seed: int, out: Path) -> ReservedSubset:
    """Draw `count` tasks of the catalog with `seed`, lock them by content hash and write the subset file."""
    from computerops.catalog.subsets import SubsetError, reserve_subset, write_subset
    from tasks import TaskFileError, load_catalog
    try:
        subset = reserve_subset(load_catalog(), count, seed)
        write_subset(out, subset)
    except (TaskFileError, SubsetError) as exc:
        raise ServiceError(str(exc), "conflict" if out.exists() else "bad_input") from exc
    return subset


@dataclass(frozen=True)
class ExperimentResult:
    """An experiment run's analysis, recomputed from its evidence, with its lock and evidence level."""

    analysis: ExperimentAnalysis
    lock: ExperimentLock
    level: EvidenceLevel


def experiment_result(bundle: RunDirectory) -> ExperimentResult:
    """The analysis of an experiment run (ServiceError not_found for a run that is no experiment's)."""
    from computerops.experiment.analysis import analyse
    from computerops.experiment.collect import read_experiment_run
    from computerops.experiment.gate import evidence_level
    from computerops.experiment.lock import ExperimentRefused
    from computerops.runs.bundle import BundleError
    from computerops.runs.verification import reviewer_verified
    try:
        run = read_experiment_run(bundle.root)
        analysis = analyse(run)
    except (ExperimentRefused, BundleError, ValueError) as exc:
        raise ServiceError(f"{bundle.root.name}: not an experiment run ({exc})", "not_found") from exc
    return ExperimentResult(analysis=analysis, lock=run.lock,
                            level=evidence_level(analysis.gate, verified=reviewer_verified(bundle)))
