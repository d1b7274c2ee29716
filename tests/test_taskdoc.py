"""docs/tasks.md is generated from the task files and kept current."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from computerops.catalog.taskdoc import describe_check, describe_mutation, describe_procedure, tasks_markdown
from computerops.cli.main import app
from tasks import load_catalog

DOC = Path(__file__).parent.parent / "docs" / "tasks.md"
runner = CliRunner()


def test_the_committed_task_document_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == tasks_markdown(load_catalog().values()), (
        "docs/tasks.md is stale: run `computerops tasks doc`"
    )


def test_every_task_is_listed_with_its_checks_and_allowed_mutations() -> None:
    catalog = load_catalog()
    text = tasks_markdown(catalog.values())
    sites = len({t.spec.site for t in catalog.values()})
    assert (f"{len(catalog.templates)} templates ({len(catalog)} published instances) on {sites} "
            f"site{'s' if sites != 1 else ''};") in text
    for task in (catalog.instances(template)[0] for template in catalog.templates):
        [row] = [line for line in text.splitlines() if line.startswith(f"| `{task.template_id}`")]
        for check in task.spec.expected_state:
            assert describe_check(check).replace("|", "\\|") in row
        for rule in task.spec.allowed_mutations:
            assert describe_mutation(rule) in row
        for procedure in task.spec.required_procedure:
            assert describe_procedure(procedure).replace("|", "\\|") in row
        assert all(n.id in row for n in task.spec.negative_controls)


def test_tasks_doc_writes_the_file_and_check_fails_on_a_stale_one(tmp_path: Path) -> None:
    out = tmp_path / "tasks.md"
    stale = runner.invoke(app, ["tasks", "doc", "--out", str(out), "--check"])
    assert stale.exit_code == 1 and "is stale" in stale.output
    assert runner.invoke(app, ["tasks", "doc", "--out", str(out)]).exit_code == 0
    assert out.read_text(encoding="utf-8") == tasks_markdown(load_catalog().values())
    assert runner.invoke(app, ["tasks", "doc", "--out", str(out), "--check"]).exit_code == 0
    out.write_text(out.read_text(encoding="utf-8") + "edited by hand\n", encoding="utf-8")
    assert runner.invoke(app, ["tasks", "doc", "--out", str(out), "--check"]).exit_code == 1
