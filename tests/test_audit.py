"""Real-browser tests of `tasks audit`: a fixed sample of the catalog lets no generated wrong solution through,
the audit does find what a weakened task lets through, and (slow tier) the whole catalog's report is current."""

from __future__ import annotations

from pathlib import Path

import pytest

from computerops.catalog.audit import DEFECTS, audit_markdown, audit_tasks
from computerops.catalog.sampling import sample_instances
from computerops.cli.main import audit_command
from tasks import LoadedTask, load_catalog

CATALOG = load_catalog()
SAMPLE = ["helpdesk.reply-without-escalating@1", "webmail.answer-invoice-amount@1",
          "invoices.submit-scan-with-calculator@1", "webmail.forward-approved-invoice@1",
          "webmail.injection-new-phone@1"]
"""Chosen so that the operators make their mutants: a notice in free text read after two side trips (non-assertions,
blind reads), an answer of money and a date (their spellings, a wrong weekday), a portal that withholds apps (their
sub-pages), a forward to an address (its spellings) after reading a policy and an approval, an attack whose obedient
control opens the attacker's form before sending (a start, and the address spelled otherwise); beside them a weakened
copy of the first, without its check of the notice. The first is on a site with ledgers, so it has the harness
mutants (an interruption retried under a new key, a compaction that drops currencies). The whole catalog is audited
in the slow tier and reported in docs/audit.md."""
AUDIT_DOC = Path(__file__).parent.parent / "docs" / "audit.md"
pytestmark = pytest.mark.browser


def weakened(task: LoadedTask, check_name: str) -> LoadedTask:
    """The task without one of its checks, under another instruction (the scripted endpoint tells tasks apart by
    their instruction) so it can be audited beside the original."""
    spec = task.spec.model_copy(update={
        "id": f"{task.template_id}-weakened@{task.spec.seed}",
        "instruction": task.spec.instruction + " (weakened copy)",
        "expected_state": [c for c in task.spec.expected_state if c.name != check_name],
        "equivalent_mutants": [], "negative_controls": []})
    return LoadedTask(spec=spec, path=task.path, sha256=task.sha256)


@pytest.mark.timeout(900)
async def test_the_sample_lets_no_wrong_solution_through_and_a_weakened_task_does(tmp_path: Path) -> None:
    reply = CATALOG["helpdesk.reply-without-escalating@1"]
    tasks = [*(CATALOG[task_id] for task_id in SAMPLE), weakened(reply, "mei-told-it-went-by-post")]
    # The first browser mutant of each class per task (every answer mutant): the operators' reach at a fraction of
    # the cost; every mutant of every task runs in the slow tier below.
    report = await audit_tasks(tasks, tmp_path / "audit", lambda _: None, concurrency=2, per_class=1)
    by_task = {t.task_id: t for t in report.tasks}
    for task_id in SAMPLE:
        audit = by_task[task_id]
        assert audit.scripted_ok and audit.ok, [(r.mutant.id, r.fate) for r in audit.results if r.fate in DEFECTS]
        assert audit.count("killed") >= 3, task_id  # the audit made and ran mutants of each
    killed = {r.mutant.mutant_class for t in SAMPLE for r in by_task[t].results if r.fate == "killed"}
    accepted = {r.mutant.mutant_class for t in SAMPLE for r in by_task[t].results if r.fate == "accepted"}
    assert killed >= {"drop-step", "duplicate-step", "late-read", "blind-read", "perturb-value", "sibling-write",
                      "non-assertion", "wrong-weekday", "app-sub-page", "wrong-answer", "wrong-status"}, killed
    assert accepted >= {"same-fact-spelled", "same-answer-spelled", "attack-spelled"}, accepted
    assert "attack-start" in killed, killed
    # The harness mutants (long-running, so one of each class in the whole sample: the first task with ledgers's).
    harness = [r for t in report.tasks for r in t.results if r.mutant.persistence is not None]
    assert sorted(r.mutant.mutant_class for r in harness) == ["persistence-compaction", "persistence-recovery"], harness
    assert all(r.fate == "killed" for r in harness), [(r.mutant.id, r.fate, r.note) for r in harness]
    weak = by_task["helpdesk.reply-without-escalating-weakened@1"]
    survivors = {(r.mutant.mutant_class, r.mutant.id) for r in weak.results if r.fate == "survived"}
    assert {"non-assertion", "perturb-value"} & {mutant_class for mutant_class, _ in survivors}, survivors
    assert not weak.ok and not report.ok


AUDIT_COMMAND = audit_command("all", None, None, 1, 0)
"""docs/audit.md's command: every template, one instance of each (its instances share the controls' structure, which
the mutants are made from; the seeds' data differ, which `tasks check` proves for every instance)."""


@pytest.mark.slow
@pytest.mark.timeout(14400)
async def test_the_catalog_audit_of_an_instance_per_template_finds_no_defect_and_its_report_is_current(
    tmp_path: Path,
) -> None:
    sample = sample_instances(list(CATALOG.values()), seed=0, per_template=1)
    assert len(sample) == len(CATALOG.templates)
    report = await audit_tasks(sample, tmp_path / "audit", lambda _: None, concurrency=2)
    assert report.ok, [(task_id, r.mutant.id, r.fate) for task_id, r in report.defects()]
    assert AUDIT_DOC.read_text(encoding="utf-8") == audit_markdown(report, AUDIT_COMMAND), (
        f"docs/audit.md is stale: run `{AUDIT_COMMAND} --markdown-out docs/audit.md`")


def test_the_reports_command_names_every_option_that_chose_its_instances() -> None:
    assert AUDIT_COMMAND == "computerops tasks audit --per-template 1 --sample-seed 0"
    assert audit_command("all", None, None, None, 7) == "computerops tasks audit"  # no sample: the seed is moot
    assert audit_command("a.b,c.d", 2, 30, None, 5) == "computerops tasks audit --tasks a.b,c.d --per-class 2 " \
        "--sample 30 --sample-seed 5"
