"""`computerops tasks audit`: run every generated mutant of every scripted control and say which the verifier
let through.

First each task's scripted control runs (it must be verified success and run to its end); then every browser
mutant (`computerops.catalog.mutants`) runs through the same browser, adapter and scripted endpoint, and every claim
mutant is judged on the scripted control's own evidence. A mutant's fate:

- `killed`: it ran to its final step and the verdict is not verified success;
- `survived`: verified success although it is a wrong solution — a verifier defect to fix;
- `equivalent`: verified success with the effects of the scripted control (the same final state, the same
  changes made by the same routes, each after at least the same page reads, the same answer; clock times and
  generated ids aside): the site absorbed the difference (it refused a repeated submission, trimmed white
  space), so no verifier could tell them apart; and a `blind-read` or `drop-step` mutant with those effects that
  was shown every fact of the records the instruction, its final words or its changes name, and of the records
  they point at (`mutant_reads.named_facts`), each before the change resting on it and read back after the last
  change where the scripted control read it back (what only the pages of steps the task declares droppable
  showed is not required): it hid only other records (a list filtered to a status the target has, a first look a
  later search repeats);
- `declared_equivalent`: verified success, and the task declares it equivalent with a reason;
- `rejected_equivalent`: the task declares it equivalent but the verdict rejects it — a valid solution
  rejected, also a defect;
- `accepted` / `refused`: a *valid* variant (the same solution read from another page that shows all the scripted
  control's page showed, or written another way: an address in capitals, the amount in words, a date with its
  weekday) was verified, as it must be, or rejected — a valid solution refused, a defect;
- `not_run`: it did not reach its final done (a bound ended it), so it tests nothing.

A study (computerops/studies/) may bring mutant classes of its own, with a fate rule of their own (the audit hooks
of `Study`; the audit iterates the registry and names no study): the security study an attacked task's `attack-*`
mutants, made from its obedient control and judged by the attack's outcome (`mutant_attacks.attack_fate`); the
persistence study the `persistence-*` mutants of a task whose site declares ledgers (the scripted control run
long-running under a harness that breaks the invariant: `computerops.catalog.mutant_persistence`), judged by the
verdict and the persistence figures (`mutant_persistence.persistence_fate`: killed by a rejected verdict, a duplicate
effect or a boundary that lost something; `not_run` without a boundary; `equivalent` for a compaction whose ledgers
hold no amount).

A mutant goes on regardless when the page does not offer a step's control (the step is skipped and the
adapter records a rejected reply), so a wrong variant that could not do everything still claims what the
scripted control claims; its result counts the skipped steps.

The kill rate is killed / (killed + survived); the target is every generated non-equivalent mutant killed and
every valid variant accepted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from adapter.transcript import AgentTranscript, Bounds
from computerops.catalog.checking import control_config, control_plan, ran_to
from computerops.catalog.mutant_reads import (
    app_mutants,
    facts_of,
    named_facts,
    page_facts,
    read_list_fact,
    read_mutants,
)
from computerops.catalog.mutants import (
    MUTANT_CLASSES,
    Fate,
    Mutant,
    MutantClass,
    ScriptedRun,
    browser_mutants,
    claim_mutants,
    step_label,
)
from computerops.core.execution import Progress
from computerops.core.formats import Versioned
from computerops.runs.bundle import RunDirectory
from computerops.runs.config import PlannedEpisode
from computerops.runs.records import EpisodeRecord, verdict_category
from computerops.runs.runner import execute_run
from computerops.studies.base import MutantEpisode, MutantJudgement, Study
from computerops.studies.registry import registered
from replays import RecordedEpisode
from sites.kit.clock import is_clock_time
from sites.kit.records import Operation, Row
from sites.registry import site_definitions, tenant_registry
from tasks import LoadedTask, ScriptedStep
from tasks.spec import Budgets
from verifier import Claim, judge

AUDIT_FORMAT: Literal["computerops.audit/2"] = "computerops.audit/2"
DEFAULT_BOUNDS = Bounds()
FATES: tuple[Fate, ...] = ("killed", "survived", "equivalent", "declared_equivalent", "rejected_equivalent",
                           "accepted", "refused", "not_run")
DEFECTS: frozenset[Fate] = frozenset({"survived", "rejected_equivalent", "refused"})


class MutantResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mutant: Mutant
    fate: Fate
    outcome: str
    """The verdict category (outcome, with the false-completion kind), or `-` for a mutant that did not run."""
    failed_checks: list[str] = Field(default_factory=list)
    skipped: int = 0
    """Steps of a browser mutant skipped because the page did not offer their control (it went on regardless)."""
    note: str = ""
    """Why it did not run, the declared reason of an equivalence, or how many steps were skipped."""


class TaskAudit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    task_sha256: str
    scripted_ok: bool
    """The scripted control was verified success and ran to its end (otherwise no mutant was generated)."""
    results: list[MutantResult]

    def count(self, fate: Fate, mutant_class: MutantClass | None = None) -> int:
        return sum(1 for r in self.results if r.fate == fate
                   and (mutant_class is None or r.mutant.mutant_class == mutant_class))

    @property
    def ok(self) -> bool:
        return self.scripted_ok and not any(r.fate in DEFECTS for r in self.results)


class AuditReport(Versioned):
    """What `tasks audit` found; written with `--json-out`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["computerops.audit/2"] = AUDIT_FORMAT
    tasks: list[TaskAudit]

    def by_class(self) -> dict[MutantClass, dict[Fate, int]]:
        counts: dict[MutantClass, Counter[Fate]] = {c: Counter() for c in MUTANT_CLASSES}
        for task in self.tasks:
            for result in task.results:
                counts[result.mutant.mutant_class][result.fate] += 1
        return {c: {f: counts[c][f] for f in FATES} for c in MUTANT_CLASSES}

    def totals(self) -> dict[Fate, int]:
        return {f: sum(t.count(f) for t in self.tasks) for f in FATES}

    def defects(self) -> list[tuple[str, MutantResult]]:
        return [(t.task_id, r) for t in self.tasks for r in t.results if r.fate in DEFECTS]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tasks)


def kill_rate(counts: Mapping[Fate, int]) -> float | None:
    """killed / (killed + survived); None when no mutant could be judged either way."""
    judged = counts["killed"] + counts["survived"]
    return counts["killed"] / judged if judged else None


def _shown_before(operations: list[Operation], seq: int) -> frozenset[str]:
    """Everything the responses before operation `seq` showed (`mutant_reads.facts_of`)."""
    return frozenset().union(*(facts_of(op.shown) for op in operations if op.seq < seq))


def _shown_after(operations: list[Operation], seq: int) -> frozenset[str]:
    """Everything the responses after operation `seq` showed."""
    return frozenset().union(*(facts_of(op.shown) for op in operations if op.seq > seq))


def _masked(table: str, row: Row | None, generated: frozenset[tuple[str, str]]) -> Row | None:
    """A row without what depends only on when it was written: clock times and values the site drew from the
    operation's random generator (an extra page load shifts both, and nothing else)."""
    if row is None:
        return None
    return {column: "<clock>" if isinstance(value, str) and is_clock_time(value)
            else "<generated>" if (table, column) in generated else value for column, value in row.items()}


@dataclass(frozen=True)
class Effect:
    """What an episode did, as far as any verifier could judge it, without ids of operations, clock times or
    generated values: the final state, each change with the route that made it and what the agent had been shown
    before it, everything it was shown, and the structured answer."""

    state: str
    changes: tuple[tuple[str, frozenset[str]], ...]
    reads: frozenset[str]
    answer: str
    named: frozenset[str] = frozenset()
    """What of `reads` the solution rests on (`mutant_reads.named_facts`)."""
    read_after: frozenset[str] = frozenset()
    """What was shown after the last change (reading the state back): facts carry no values, so a record shown
    before a change and one read back after it are told apart only by when."""

    def covers(self, reference: Effect) -> bool:
        """The same state, changes, routes and answer, each change preceded by at least what the reference had
        been shown: seeing more is never a wrong solution, doing or answering anything else may be."""
        return (self.state == reference.state and self.answer == reference.answer
                and len(self.changes) == len(reference.changes)
                and all(mine == theirs and shows_all(read, read_before)
                        for (mine, read), (theirs, read_before) in zip(self.changes, reference.changes, strict=True))
                and shows_all(self.reads, reference.reads))

    def covers_named(self, reference: Effect) -> bool:
        """The same state, changes, routes and answer, each change preceded by what the reference had been shown of
        the records its solution names or changes, all of that shown in the end, and what the reference read back
        of them after its last change read back too: a view that hid only other records."""
        return (self.state == reference.state and self.answer == reference.answer
                and len(self.changes) == len(reference.changes)
                and all(mine == theirs and shows_all(read, read_before & reference.named)
                        for (mine, read), (theirs, read_before) in zip(self.changes, reference.changes, strict=True))
                and shows_all(self.reads, reference.named)
                and shows_all(self.read_after, reference.read_after & reference.named))


def shows_all(mine: frozenset[str], reference: frozenset[str]) -> bool:
    """What was shown (`mutant_reads.facts_of`) holds every fact of `reference`; a whole list covers a narrower
    one (all products cover the Paint category's)."""
    lists = [listed for other in mine if (listed := read_list_fact(other)) is not None]
    for fact in reference - mine:
        wanted = read_list_fact(fact)
        if wanted is None:
            return False
        table, where, searched = wanted
        # A list filtered by less covers it; one a search narrowed covers only a list a search narrowed too.
        if not any(other_table == table and other_where.items() <= where.items() and (searched or not other_searched)
                   for other_table, other_where, other_searched in lists):
            return False
    return True


def effect_of(evidence: RecordedEpisode, claim: Claim, generated: frozenset[tuple[str, str]] = frozenset(),
              *, instruction: str | None = None, spare_steps: frozenset[int] = frozenset()) -> Effect:
    """The episode's effect; given the task's `instruction` (for the scripted control's, the reference), also what
    of its reads its solution rests on (less what only the `spare_steps` showed: `mutant_reads.named_facts`)."""
    by_seq = {op.seq: op for op in evidence.operations}
    changes = []
    for entry in evidence.journal:
        op = by_seq.get(entry.operation)
        change = [entry.table, entry.key, entry.change, _masked(entry.table, entry.before, generated),
                  _masked(entry.table, entry.after, generated), op.method if op else None, op.path if op else None]
        changes.append((json.dumps(change, sort_keys=True, default=str),
                        _shown_before(evidence.operations, entry.operation)))
    state = {table: [_masked(table, row, generated) for row in rows] for table, rows in evidence.final_state.items()}
    return Effect(state=json.dumps(state, sort_keys=True, default=str), changes=tuple(changes),
                  reads=_shown_before(evidence.operations, len(evidence.operations) + 1),
                  read_after=_shown_after([op for op in evidence.operations
                                           if op.action is None or op.action - 1 not in spare_steps],
                                          max((e.operation for e in evidence.journal), default=0)),
                  answer=json.dumps([claim.success, claim.status, claim.reason, claim.answer], sort_keys=True),
                  named=frozenset() if instruction is None else named_facts(evidence, claim, instruction,
                                                                              spare_steps))


SAME_EFFECTS = "same effects as the scripted control"
HIDING_CLASSES: frozenset[MutantClass] = frozenset({"blind-read", "drop-step"})
"""Classes whose mutants only take reads away (a narrower view, a page not opened): one that still showed every fact
of the records the solution names or changes (`Effect.covers_named`) is equivalent."""
HIDDEN_OTHERS_ONLY = ("shows every fact of the records the solution names or changes (and the records they point "
                      "at), each before the change that rests on it, as the scripted control did: what it did not "
                      "show was about other records")


def _fate(task: LoadedTask, mutant: Mutant, verified: bool, alike: str | None) -> tuple[Fate, str]:
    """`alike`: why a verified mutant has the scripted control's effects (None: it has not)."""
    if mutant.expect == "valid":
        wrong = next((d for d in task.spec.wrong_variants if d.matches(mutant.id)), None)
        if wrong is not None:
            return ("survived", wrong.reason) if verified else ("killed", wrong.reason)
        return ("accepted", "") if verified else ("refused", "")
    declared = next((d for d in task.spec.equivalent_mutants if d.matches(mutant.id)), None)
    if declared is not None:
        return ("declared_equivalent" if verified else "rejected_equivalent"), declared.reason
    if not verified:
        return "killed", ""
    if alike is not None:
        return "equivalent", alike
    return "survived", ""


def spare_steps(task: LoadedTask) -> frozenset[int]:
    """The scripted control's steps the task declares may be left out (a `drop:<step>` equivalent mutant)."""
    steps = task.spec.scripted_control
    return frozenset(i for i in range(len(steps))
                     if any(d.matches(f"drop:{step_label(steps[i], i)}") for d in task.spec.equivalent_mutants))


def _load(bundle: RunDirectory, record: EpisodeRecord) -> tuple[RecordedEpisode, AgentTranscript]:
    evidence = bundle.load_episode(record)
    transcript = AgentTranscript.model_validate_json(
        bundle.evidence_path(record.episode_id, "transcript.json").read_bytes())
    return evidence, transcript


def _judge_claim(task: LoadedTask, run: ScriptedRun, mutant: Mutant, reference: Effect) -> MutantResult:
    assert mutant.claim is not None
    ev = run.evidence
    verdict = judge(task.spec, task.sha256, state=ev.final_state, journal=ev.journal, operations=ev.operations,
                    claim=mutant.claim)
    verified = verdict.outcome == "verified_success"
    alike = SAME_EFFECTS if effect_of(ev, mutant.claim, _generated(task)).covers(reference) else None
    fate, note = _fate(task, mutant, verified, alike)
    return MutantResult(mutant=mutant, fate=fate,
                        outcome=verdict_category(verdict.outcome, verdict.false_completion_kind),
                        failed_checks=[c.name for c in verdict.checks if not c.passed], note=note)


def sampled(mutants: list[Mutant], per_class: int | None, taken: dict[str, int] | None = None) -> list[Mutant]:
    """The mutants a quicker audit runs: every one judged on the scripted evidence alone (no steps: cheap), and the
    first `per_class` browser mutants of each class, in generation order; all of them when `per_class` is None.
    `taken` counts what earlier tasks took of each class: passed on from task to task, it makes the sample the first
    `per_class` of the whole audit (the audit does so for a study's `audit_sampled_across`: long-running classes)."""
    if per_class is None:
        return mutants
    taken = {} if taken is None else taken
    kept: list[Mutant] = []
    for mutant in mutants:
        if mutant.steps is not None:
            taken[mutant.mutant_class] = taken.get(mutant.mutant_class, 0) + 1
            if taken[mutant.mutant_class] > per_class:
                continue
        kept.append(mutant)
    return kept


async def audit_tasks(
    tasks: list[LoadedTask], out: Path, progress: Progress, *, concurrency: int = 1, per_class: int | None = None,
) -> AuditReport:
    """Run each task's scripted control, then every mutant of it (with `per_class`, a sample: `sampled`); `out`
    holds both runs (`scripted/`, `mutants/`). Each registered study may ask for extra scripted controls and bring
    mutants of its own classes (the audit hooks of `Study`)."""
    studies = registered()
    items = {task.id: control_items(studies, task) for task in tasks}
    scripted_plan = control_plan(tasks, lambda task: items[task.id])
    progress(f"audit: running the scripted control of {len(tasks)} task(s)")
    all_scripted = await execute_run(control_config("audit-scripted", tasks, scripted_plan), tasks,
                                     out / "scripted", progress, concurrency=concurrency)
    scripted_bundle = RunDirectory.open(out / "scripted")
    ran = iter(all_scripted)
    controls = {task.id: {item: next(ran) for item in items[task.id]} for task in tasks}
    scripted_records = [controls[task.id]["oracle"] for task in tasks]

    def load(record: EpisodeRecord) -> tuple[RecordedEpisode, AgentTranscript]:
        return _load(scripted_bundle, record)
    by_id = {t.id: t for t in tasks}
    runs: dict[str, ScriptedRun] = {}
    audits: dict[str, TaskAudit] = {}
    mutants: dict[str, list[Mutant]] = {}
    pages: dict[tuple[str, int], dict[str, frozenset[str]]] = {}
    registry = tenant_registry()
    taken_across: dict[str, int] = {}
    for task, record in zip(tasks, scripted_records, strict=True):
        steps = list(task.spec.scripted_control)
        if record.outcome != "verified_success" or ran_to(steps, record) != len(steps) - 1:
            audits[task.id] = TaskAudit(task_id=task.id, task_sha256=task.sha256, scripted_ok=False, results=[])
            continue
        evidence, transcript = _load(scripted_bundle, record)
        run = runs[task.id] = ScriptedRun(steps=steps, transcript=transcript, evidence=evidence)
        site = site_definitions()[task.spec.site]
        key = (task.spec.site, task.spec.seed)
        if key not in pages and not task.spec.faults:
            pages[key] = await page_facts(registry, site, task.spec.seed)
        mutants[task.id] = sampled([*browser_mutants(run), *read_mutants(run, {} if task.spec.faults else pages[key]),
                                    *app_mutants(run, site), *claim_mutants(task.spec, run.claim)], per_class)
        mutants[task.id] += study_mutants(studies, task, controls[task.id], load, per_class, taken_across)
    registry.close()
    results: dict[str, list[MutantResult]] = {task_id: [] for task_id in mutants}
    references = {task_id: effect_of(run.evidence, run.claim, _generated(by_id[task_id]),
                                     instruction=by_id[task_id].spec.instruction,
                                     spare_steps=spare_steps(by_id[task_id]))
                  for task_id, run in runs.items()}
    for task_id, generated in mutants.items():
        for mutant in generated:
            if mutant.claim is not None:
                results[task_id].append(_judge_claim(by_id[task_id], runs[task_id], mutant, references[task_id]))
    fields = {(task_id, m.id): episode_fields(studies, by_id[task_id], m)
              for task_id, generated in mutants.items() for m in generated if m.steps is not None}
    # Named with their task: an attacked task and the task it extends share an instruction, and so the scripted
    # endpoint's step lists (`adapter/scripted/policies.py` `decide`), where two tasks' mutants may share an id. A
    # mutant whose study gives its episode another policy runs that policy, not its steps.
    extra: dict[str, dict[str, list[ScriptedStep]]] = {
        task_id: {f"{task_id}/{m.id}": list(m.steps) for m in generated
                  if m.steps is not None and "policy" not in fields[task_id, m.id]}
        for task_id, generated in mutants.items()
    }
    plan: list[PlannedEpisode] = []
    planned_mutants: list[Mutant] = []
    for task_id, generated in mutants.items():
        for mutant in generated:
            if mutant.steps is None:
                continue
            given = dict(fields[task_id, mutant.id])
            policy = given.pop("policy", f"mutant:{task_id}/{mutant.id}")
            plan.append(PlannedEpisode(episode_id=f"{len(plan) + 1:04d}-{task_id}", task_id=task_id, policy=policy,
                                       **given))
            planned_mutants.append(mutant)
    if plan:
        progress(f"audit: running {len(plan)} browser mutant(s); {sum(map(len, results.values()))} answer "
                 "mutant(s) judged on the scripted evidence")
        mutant_tasks = [with_room(by_id[task_id], max(len(m.steps or []) for m in mutants[task_id]))
                        for task_id in dict.fromkeys(p.task_id for p in plan)]
        records = await execute_run(control_config("audit-mutants", mutant_tasks, plan), mutant_tasks,
                                    out / "mutants", progress, concurrency=concurrency, extra_steps=extra)
        bundle = RunDirectory.open(out / "mutants")
        for planned, mutant, record in zip(plan, planned_mutants, records, strict=True):
            task = by_id[planned.task_id]
            results[task.id].append(_browser_result(studies, task, mutant, record, bundle, references[task.id]))
    for task_id, task_results in results.items():
        order = {m.id: k for k, m in enumerate(mutants[task_id])}
        audits[task_id] = TaskAudit(task_id=task_id, task_sha256=by_id[task_id].sha256, scripted_ok=True,
                                    results=sorted(task_results, key=lambda r: order[r.mutant.id]))
    return AuditReport(tasks=[audits[t.id] for t in tasks])


def control_items(studies: tuple[Study, ...], task: LoadedTask) -> list[str]:
    """The scripted controls of a task the audit runs (`control_plan` items): its own `oracle`, then each study's
    (`Study.audit_controls`)."""
    return ["oracle", *(item for study in studies for item in study.audit_controls(task))]


def study_mutants(studies: tuple[Study, ...], task: LoadedTask, controls: Mapping[str, EpisodeRecord],
                  load: Callable[[EpisodeRecord], tuple[RecordedEpisode, AgentTranscript]], per_class: int | None,
                  taken_across: dict[str, int]) -> list[Mutant]:
    """The mutants the studies bring for a task (`Study.audit_mutants`, given the records of its controls by item),
    in registry order, each sampled (`sampled`) per task, or across the whole audit (`taken_across`, passed on from
    task to task) for its `audit_sampled_across` classes."""
    kept: list[Mutant] = []
    for study in studies:
        brought = study.audit_mutants(task, controls, load)
        kept += sampled([m for m in brought if m.mutant_class not in study.audit_sampled_across], per_class)
        kept += sampled([m for m in brought if m.mutant_class in study.audit_sampled_across], per_class,
                        taken_across)
    return kept


def judged_by(studies: tuple[Study, ...], mutant_class: MutantClass) -> Study:
    """The study whose class a mutant is (`Study.audit_classes`), else the default `Study`: its `audit_judge` judges
    a mutant as the audit judges any."""
    return next((s for s in studies if mutant_class in s.audit_classes), Study())


def episode_fields(studies: tuple[Study, ...], task: LoadedTask, mutant: Mutant) -> dict[str, object]:
    """The `PlannedEpisode` fields the studies give a mutant's episode (`Study.audit_fields`; `policy` where one runs
    another policy than the mutant's steps; the entries under `studies` of studies added later, merged); ValueError
    where two give the same field."""
    fields: dict[str, object] = {}
    entries: dict[str, object] = {}
    for study in studies:
        given = dict(study.audit_fields(task, mutant))
        entries.update(given.pop("studies", None) or {})
        if twice := fields.keys() & given.keys():
            raise ValueError(f"study {study.name!r} gives the audit's episode field(s) {sorted(twice)} another study "
                             "gives")
        fields.update(given)
    return {**fields, "studies": entries} if entries else fields


def _browser_result(studies: tuple[Study, ...], task: LoadedTask, mutant: Mutant, record: EpisodeRecord,
                    bundle: RunDirectory, reference: Effect) -> MutantResult:
    """A browser mutant judged on its episode: by the study whose class it is (`Study.audit_judge`), else by
    `Study.audit_judge`'s default (`not_run` short of its final done, else `_fate` on its effects)."""
    assert mutant.steps is not None
    evidence: Callable[[], RecordedEpisode] = cache(lambda: _load(bundle, record)[0])

    def covers(recorded: RecordedEpisode) -> bool:
        return effect_of(recorded, record.claim, _generated(task)).covers(reference)

    def default_fate() -> tuple[Fate, str]:
        effect = effect_of(evidence(), record.claim, _generated(task))
        alike = SAME_EFFECTS if effect.covers(reference) else HIDDEN_OTHERS_ONLY if (
            mutant.mutant_class in HIDING_CLASSES and effect.covers_named(reference)) else None
        return _fate(task, mutant, record.outcome == "verified_success", alike)

    episode = MutantEpisode(task=task, mutant=mutant, record=record, episode_dir=bundle.episode_dir(record.episode_id),
                            load=evidence, covers=covers, default_fate=default_fate)
    judged: MutantJudgement = judged_by(studies, mutant.mutant_class).audit_judge(episode)
    return MutantResult(mutant=mutant, fate=judged.fate, outcome=verdict_category(record.outcome,
                                                                                 record.false_completion_kind),
                        failed_checks=judged.failed_checks, skipped=judged.skipped, note=judged.note)


def with_room(task: LoadedTask, steps: int) -> LoadedTask:
    """The task with an action budget of at least `steps` replies: a mutant is a longer or shorter variant of the
    scripted control, and what is audited is the verdict on it, not whether it fits the agent's budget."""
    budget = max(task.spec.budgets.actions or 0, steps, DEFAULT_BOUNDS.action_budget)
    return replace(task, spec=task.spec.model_copy(update={"budgets": Budgets(actions=budget)}))


def _generated(task: LoadedTask) -> frozenset[tuple[str, str]]:
    site = site_definitions().get(task.spec.site)
    return site.generated_columns if site is not None else frozenset()


def audit_markdown(report: AuditReport, command: str) -> str:
    """The audit's counts per operator and per task, and every defect, as a Markdown page."""
    def row(label: str, counts: Mapping[Fate, int]) -> str:
        rate = kill_rate(counts)
        return (f"| {label} | " + " | ".join(str(counts[f]) for f in FATES)
                + f" | {'—' if rate is None else f'{rate:.0%}'} |")

    header = "| | " + " | ".join(f.replace("_", " ") for f in FATES) + " | kill rate |"
    rule = "|---" * (len(FATES) + 2) + "|"
    lines = ["# Mutation audit of the verifier", "",
             f"Produced by `{command}`; regenerate it with the same command. Mutants are generated by program from "
             "every task's scripted control (`computerops/catalog/mutants.py`), run through Chromium and the scripted "
             "endpoint (claim mutants are judged on the scripted control's own evidence). These are SCRIPTED "
             "variants, not a model's behaviour. Kill rate = killed / (killed + survived).", "",
             "## By operator", "", header, rule]
    lines += [row(c, counts) for c, counts in report.by_class().items()]
    lines += [row("**all**", report.totals()), "", "## By task", "", header, rule]
    lines += [row(f"`{t.task_id}`" + ("" if t.scripted_ok else " (scripted control failed)"),
                  {f: t.count(f) for f in FATES}) for t in report.tasks]
    defects = report.defects()
    lines += ["", "## Defects", ""]
    lines += [f"- `{task_id}` {r.mutant.id} ({r.fate.replace('_', ' ')}): {r.mutant.description}; verdict {r.outcome}"
              for task_id, r in defects] or ["None: every generated non-equivalent mutant was rejected and every "
                                             "declared equivalent accepted."]
    lines += ["", "## Declared equivalents", ""]
    declared = [(t.task_id, r) for t in report.tasks for r in t.results if r.fate == "declared_equivalent"]
    lines += [f"- `{task_id}` {r.mutant.id}: {r.note}" for task_id, r in declared] or ["None."]
    return "\n".join(lines) + "\n"
