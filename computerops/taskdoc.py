"""`docs/tasks.md`, generated from the task files: what each task asks, checks and allows.

`computerops tasks doc` writes it; `computerops tasks doc --check` (and a test) fail when the
committed file differs from what the task files say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tasks import LoadedTask
from tasks.spec import AnswerCheck, MutationRule, Ordered, RowCheck, RowSelector, Scalar, ViaRoute, Visited

HEADER = """# Task catalog

Generated from `tasks/catalog/**/*.yaml` by `computerops tasks doc`; do not edit by hand (a test
fails when this file is stale). Every task is proven by `computerops tasks check`: its scripted
control reaches verified success, the no-op agent is rejected, and every negative control is rejected.
"""


def _values(values: Mapping[str, Scalar]) -> str:
    """`key=value, ...`, one line: a line break inside a value is written as \\n (a table row is one line)."""
    return ", ".join(f"{key}={str(value).replace(chr(10), chr(92) + 'n')}" for key, value in values.items())


def _selector(rows: RowSelector) -> str:
    where = f" where {_values(rows.where)}" if rows.where else ""
    return f"{'/'.join(rows.change)} {rows.table}{where}"


def describe_check(check: RowCheck | AnswerCheck) -> str:
    if isinstance(check, AnswerCheck):
        forbidden = f"; not /{'/, /'.join(check.forbidden_patterns)}/" if check.forbidden_patterns else ""
        return f"answer matches /{'/, /'.join(check.patterns)}/{forbidden}"
    where = f" where {_values(check.where)}" if check.where else ""
    expect = f": {_values(check.expect)}" if check.expect else ""
    like = "".join(f"; {column} ~ /{pattern}/" for column, pattern in check.like.items())
    return f"{check.count} {check.table} row{'s' if check.count != 1 else ''}{where}{expect}{like}"


def describe_procedure(check: ViaRoute | Ordered | Visited) -> str:
    if isinstance(check, ViaRoute):
        return f"{_selector(check.rows)} made by {check.method} {check.path}"
    if isinstance(check, Ordered):
        return f"{_selector(check.first)} before {_selector(check.then)}"
    return f"visited {check.method} {check.path}"


def describe_mutation(rule: MutationRule) -> str:
    where = f" where {_values(rule.where)}" if rule.where else ""
    fields = f" (fields {', '.join(rule.fields)})" if rule.fields is not None else ""
    return f"{'/'.join(rule.change)} {rule.table}{where}{fields}"


def _cell(items: Iterable[str]) -> str:
    text = "<br>".join(item.replace("|", "\\|") for item in items)
    return text or "—"


def tasks_markdown(tasks: Iterable[LoadedTask]) -> str:
    """The whole document, deterministic for the same task files."""
    by_site: dict[str, list[LoadedTask]] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        by_site.setdefault(task.spec.site, []).append(task)
    total = sum(len(site_tasks) for site_tasks in by_site.values())
    families = sorted({t.spec.family for site_tasks in by_site.values() for t in site_tasks})
    sites = f"{len(by_site)} site{'s' if len(by_site) != 1 else ''}"
    lines = [HEADER, f"{total} tasks on {sites}; families: {', '.join(families)}.", ""]
    for site, site_tasks in sorted(by_site.items()):
        lines += [f"## {site} ({len(site_tasks)} tasks)", "",
                  "| task | family | difficulty | checked | procedure | allowed mutations | negative controls |",
                  "|---|---|---|---|---|---|---|"]
        for task in site_tasks:
            spec = task.spec
            checked = [describe_check(c) for c in spec.expected_state]
            if not spec.feasible:
                checked.insert(0, "infeasible: done(success=false) and no mutation")
            checked[:0] = [
                f"fault {f.fault} on {f.target.method} {f.target.path} (match {f.occurrence}"
                + (f", {f.times} times" if f.times > 1 else "") + ")"
                for f in spec.faults
            ]
            negatives = [f"{n.id} ({n.kind}" + (f", rejected as {n.rejected_as}" if n.rejected_as else "") + ")"
                         for n in spec.negative_controls]
            lines.append(
                f"| `{spec.id}`<br>{spec.title.replace('|', '/')} | {spec.family} | {spec.difficulty} | "
                f"{_cell(checked)} | {_cell(describe_procedure(p) for p in spec.required_procedure)} | "
                f"{_cell(describe_mutation(m) for m in spec.allowed_mutations)} | {_cell(negatives)} |"
            )
        lines.append("")
    return "\n".join(lines)
