"""Blind cases: wrong solutions and valid alternatives written by someone who never read a task's checks.

`computerops tasks audit` generates mutants by program from the checks' neighbourhood; a blind set is the other
half of the proof. Its cases are written from a task's instruction and scripted control alone (by a person, or a
separate process that was shown nothing else), as variants of the scripted control (`drop`, `replace`,
`insert_after`, as negative controls are written). A wrong case must be rejected and a valid one accepted; a case
whose steps did not all run (a control the page did not offer) tests nothing and is reported as such, so that its
author can mend it.

The files live in `tasks/blind/*.yaml` (`computerops.blind/1`), apart from the task files, so that writing them
never needs the checks and changing the checks never rewrites them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from computerops.catalog.audit import with_room
from computerops.catalog.checking import control_config
from computerops.core.execution import Progress
from computerops.core.formats import Versioned
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import PlannedEpisode
from computerops.runs.records import EpisodeRecord, verdict_category
from computerops.runs.runner import execute_run
from tasks import LoadedTask, ScriptedStep
from tasks.spec import Variant

BLIND_FORMAT: Literal["computerops.blind/1"] = "computerops.blind/1"
BLIND_RESULTS_FORMAT: Literal["computerops.blind_results/1"] = "computerops.blind_results/1"
BLIND_ROOT = Path(__file__).resolve().parents[2] / "tasks" / "blind"
"""Where the committed blind sets live, one file per author and site."""

Expectation = Literal["wrong", "valid"]
AttackExpectation = Literal["compliant", "hijack", "targeted_success"]
"""What a case on an attacked task does with the payload, in its author's words: ignores it (`compliant`), begins to
follow it without getting there (`hijack`), or does what the attacker asked (`targeted_success`)."""
BlindFate = Literal["rejected", "survived", "accepted", "refused", "not_run", "out_of_contract"]
"""`rejected` (a wrong case the verdict caught) and `accepted` (a valid case verified) are right; `survived` (a wrong
case verified) and `refused` (a valid case rejected) are defects of a mechanism; `not_run` means its steps did not
all run, so it tested nothing; `out_of_contract` marks a case a maintainer found to test what the benchmark never
judges (the free-text done message), with the reason, kept and reported apart."""
DEFECT_FATES: frozenset[BlindFate] = frozenset({"survived", "refused"})


class BlindCase(Variant):
    """One blind case: a variant of a task's scripted control, with what its author expects of it."""

    task: str
    expect: Expectation
    written_as: str = Field(min_length=3)
    """The author's own name for what the case does wrong (or why it is a valid alternative)."""
    out_of_contract: str | None = Field(default=None, min_length=10)
    """Set by a maintainer, never by the author: why the case tests something the benchmark's contract does not
    judge (the done message is for people and never scored; form input never submitted does not reach the backend
    the verdict is judged from). The case stays in the set, reported apart."""
    attack: AttackExpectation | None = None
    """For a case of an attacked task: what it does with the payload; the attack's judgement must say the same."""


class BlindSet(Versioned):
    """A file of blind cases, with how they were written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.blind/1"] = BLIND_FORMAT
    written_by: str = Field(min_length=3)
    """Who or what wrote the cases, and what they were shown (never the checks)."""
    cases: list[BlindCase] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> BlindSet:
        ids = [(c.task, c.id) for c in self.cases]
        repeated = sorted({f"{t}/{i}" for t, i in ids if ids.count((t, i)) > 1})
        if repeated:
            raise ValueError(f"case ids repeat within a task: {repeated}")
        return self


class BlindFileError(ValueError):
    """A blind set that cannot be read, or names a task or step that is not there."""


class BlindResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    task_id: str
    case_id: str
    expect: Expectation
    written_as: str
    description: str
    fate: BlindFate
    outcome: str
    """The verdict category (outcome, with the false-completion kind), as every report words it."""
    failed_checks: list[str] = Field(default_factory=list)
    skipped: int = 0
    """Steps whose control the page did not offer (the case went on without them)."""
    out_of_contract: str | None = None
    attack: AttackExpectation | None = None
    attack_judged: AttackExpectation | None = None
    """What the attack's judgement said (for a case that states an attack expectation)."""

    @property
    def attack_defect(self) -> bool:
        return self.fate != "not_run" and self.attack is not None and self.attack != self.attack_judged


class BlindResults(Versioned):
    """What `computerops tasks blind` found; written with `--json-out`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.blind_results/1"] = BLIND_RESULTS_FORMAT
    results: list[BlindResult]

    def count(self, fate: BlindFate, expect: Expectation | None = None) -> int:
        return sum(1 for r in self.results if r.fate == fate and (expect is None or r.expect == expect))

    def defects(self) -> list[BlindResult]:
        """Wrong cases verified, valid cases refused, and cases whose attack was judged otherwise than written."""
        return [r for r in self.results if r.fate in DEFECT_FATES or r.attack_defect]

    @property
    def ok(self) -> bool:
        return not self.defects() and self.count("not_run") == 0


def load_blind_set(path: Path) -> BlindSet:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return BlindSet.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise BlindFileError(f"{path}: {exc}") from exc


def blind_files(paths: Iterable[Path] = ()) -> list[Path]:
    """The given files (a folder: its YAML files), or every committed blind set."""
    chosen = list(paths) or [BLIND_ROOT]
    found: list[Path] = []
    for path in chosen:
        found += sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    return found


def blind_cases(files: Iterable[Path], catalog: Mapping[str, LoadedTask],
                tasks: set[str] | None = None) -> list[tuple[str, BlindCase]]:
    """(source file name, case) for every case of the files, checked against the catalog: its task exists and every
    step id it names is a step of that task's scripted control. `tasks` keeps only those tasks' cases."""
    cases: list[tuple[str, BlindCase]] = []
    for path in files:
        for case in load_blind_set(path).cases:
            task = catalog.get(case.task)
            if task is None:
                raise BlindFileError(f"{path}: case {case.id!r} names task {case.task!r}, which is not in the catalog")
            step_ids = {s.id for s in task.spec.scripted_control if s.id is not None}
            unknown = sorted(case.named_steps() - step_ids)
            if unknown:
                raise BlindFileError(f"{path}: case {case.id!r} of {case.task} names unknown step ids {unknown}")
            if tasks is None or case.task in tasks:
                cases.append((path.name, case))
    return cases


def _attack_judged(record: EpisodeRecord) -> AttackExpectation | None:
    facts = record.attack
    if facts is None:
        return None
    return "targeted_success" if facts.objective_reached else "hijack" if facts.hijacked else "compliant"


def _steps(case: BlindCase, task: LoadedTask) -> list[ScriptedStep]:
    return case.derive(list(task.spec.scripted_control))


def _fate(case: BlindCase, steps: list[ScriptedStep], record: EpisodeRecord) -> BlindFate:
    final = steps[-1]
    finished = (record.stop_reason == "finish" and record.steps == len(steps) and not record.rejected_actions
                and final.action == "done" and record.claim.success == bool(final.success))
    if not finished:
        return "not_run"
    verified = record.outcome == "verified_success"
    if case.out_of_contract is not None:
        return "out_of_contract"
    if case.expect == "wrong":
        return "survived" if verified else "rejected"
    return "accepted" if verified else "refused"


async def run_blind(
    cases: list[tuple[str, BlindCase]], catalog: Mapping[str, LoadedTask], out: Path, progress: Progress, *,
    concurrency: int = 1,
) -> BlindResults:
    """Run every case through the browser, the adapter and the scripted endpoint (policy `mutant:blind:<task>/<id>`),
    and judge each by its expectation."""
    extra: dict[str, dict[str, list[ScriptedStep]]] = {}
    plan: list[PlannedEpisode] = []
    for _, case in cases:
        name = f"blind:{case.task}/{case.id}"  # with its task: twins share an instruction, so the endpoint's lists
        extra.setdefault(case.task, {})[name] = _steps(case, catalog[case.task])
        # With grants, the broker observes: a blind case tests the verdict, not what an enforcing broker stops.
        plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:04d}-{case.task}", task_id=case.task,
                                   policy=f"mutant:{name}",
                                   broker_mode="observing" if catalog[case.task].spec.grants else None))
    task_ids = list(dict.fromkeys(case.task for _, case in cases))
    tasks = [with_room(catalog[t], max(len(s) for s in extra[t].values())) for t in task_ids]
    progress(f"blind: running {len(plan)} case(s) of {len(tasks)} task(s)")
    records = await execute_run(control_config("blind-cases", tasks, plan), tasks, out, progress,
                                concurrency=concurrency, extra_steps=extra)
    bundle = RunDirectory.open(out)
    results = []
    for (source, case), record in zip(cases, records, strict=True):
        steps = extra[case.task][f"blind:{case.task}/{case.id}"]
        failed = [c.name for c in bundle.load_episode(record).verdict.checks if not c.passed]
        results.append(BlindResult(
            source=source, task_id=case.task, case_id=case.id, expect=case.expect, written_as=case.written_as,
            description=case.description, fate=_fate(case, steps, record),
            outcome=verdict_category(record.outcome, record.false_completion_kind), failed_checks=failed,
            skipped=record.rejected_actions, out_of_contract=case.out_of_contract, attack=case.attack,
            attack_judged=_attack_judged(record)))
    return BlindResults(results=results)

