"""`docs/tasks.md`, generated from the task files: what each task asks, checks and allows.

`computerops tasks doc` writes it; `computerops tasks doc --check` (and a test) fail when the
committed file differs from what the task files say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sites.kit.broker import Grant
from tasks import LoadedTask
from tasks.attack import TotalCheck
from tasks.spec import (
    AnswerCheck,
    EffectsCheck,
    Fact,
    FaultFired,
    MutationRule,
    NotUsed,
    Ordered,
    RowCheck,
    RowSelector,
    Scalar,
    Seen,
    TextCheck,
    Typed,
    ViaRoute,
    Visited,
)
from verifier.seen import describe_fact

HEADER = """# Task catalog

Generated from `tasks/catalog/**/*.yaml` by `computerops tasks doc`; do not edit by hand (a test
fails when this file is stale). Every task is proven by `computerops tasks check`: its scripted
control reaches verified success, the no-op agent is rejected, every negative control runs to its end and
is rejected, and every equivalent solution is accepted. `computerops tasks audit` mutates every scripted
control and lists what the verdict lets through ([audit.md](audit.md)). Check vocabulary: [verdicts.md](verdicts.md).
"""


def _values(values: Mapping[str, Scalar | Typed]) -> str:
    """`key=value, ...`, one line: a line break inside a value is written as \\n (a table row is one line)."""
    return ", ".join(f"{key}={str(value).replace(chr(10), chr(92) + 'n')}" for key, value in values.items())


def _selector(rows: RowSelector) -> str:
    where = f" where {_values(rows.where)}" if rows.where else ""
    return f"{'/'.join(rows.change)} {rows.table}{where}"


def _fact(fact: Fact) -> str:
    value = " or ".join(fact.value) if isinstance(fact.value, list) else fact.value
    return f"a denial of {value}" if fact.type == "denies" else f"{fact.type} {value}"


def _text(column: str, check: TextCheck) -> str:
    parts = [f"asserts {', '.join(_fact(f) for f in check.states)}"] if check.states else []
    parts += [f"never {', '.join(_fact(f) for f in check.never_states)}"] if check.never_states else []
    allowed = f" than {', '.join(_fact(f) for f in check.may_state)}" if check.may_state else ""
    parts += [f"no other {', '.join(check.no_other)}{allowed}"] if check.no_other else []
    return f"; {column} " + "; ".join(parts)


def describe_check(check: RowCheck | AnswerCheck | EffectsCheck) -> str:
    if isinstance(check, AnswerCheck):
        status = " or ".join(check.status)
        if check.reasons:
            return f"answer: {status}, reason {' or '.join(check.reasons)}"
        fields = ", ".join(
            f"{name} ({f.type}{', in order' if f.order == 'sequence' else ''}) = "
            + (", ".join(f.expected) if isinstance(f.expected, list) else str(f.expected))
            for name, f in check.fields.items())
        return f"answer: {status}" + (f"; {fields}" if fields else "")
    if isinstance(check, EffectsCheck):
        low, high = check.bounds
        bound = str(low) if low == high else f"at least {low}" if high is None else f"{low} to {high}"
        fields = f" changing {', '.join(check.fields)}" if check.fields else ""
        per = f" per {check.per}" + (f" (each of {', '.join(map(str, check.each))})" if check.each else "") \
            if check.per else ""
        return f"journal: {bound} {_selector(check.rows)}{fields}{per}"
    where = f" where {_values(check.where)}" if check.where else ""
    expect = f": {_values(check.expect)}" if check.expect else ""
    text = "".join(_text(column, text_check) for column, text_check in check.text.items())
    return f"{check.count} {check.table} row{'s' if check.count != 1 else ''}{where}{expect}{text}"


def _window(check: Visited | Seen) -> str:
    window = ""
    if check.before == "first-write":
        window += " before the first change"
    elif check.before is not None:
        window += f" before {_selector(check.before)}"
    if isinstance(check.after, FaultFired):
        window += f" after the last {check.after.fault_fired}"
    elif check.after is not None:
        window += f" after {_selector(check.after)}"
    return window


def _seen(check: Seen) -> str:
    return f"shown {describe_fact(check)}{_window(check)}"


def describe_procedure(check: ViaRoute | Ordered | Visited | Seen | NotUsed) -> str:
    if isinstance(check, ViaRoute):
        also = "".join(f" or {r.method} {r.path}" for r in check.alternatives)
        return f"{_selector(check.rows)} made by {check.method} {check.path}{also}"
    if isinstance(check, Ordered):
        return f"{_selector(check.first)} before {_selector(check.then)}"
    if isinstance(check, NotUsed):
        return f"never used the app{'s' if len(check.apps) > 1 else ''} {', '.join(check.apps)}"
    if isinstance(check, Seen):
        return _seen(check)
    window = f" with query /{check.query}/" if check.query else ""
    window += "".join(f" or {p.method} {p.path}" + (f" with query /{p.query}/" if p.query else "")
                      for p in check.alternatives)
    return f"visited {check.method} {check.path}{window}{_window(check)}"


def describe_mutation(rule: MutationRule) -> str:
    where = f" where {_values(rule.where)}" if rule.where else ""
    fields = f" (fields {', '.join(rule.fields)})" if rule.fields is not None else ""
    own = " of rows the episode created" if rule.created_in_episode else ""
    uncounted = f" (not counted: {rule.unbounded})" if rule.unbounded is not None else ""
    return f"{'/'.join(rule.change)} {rule.table}{own}{where}{fields}{uncounted}"


def _objective(predicate: RowCheck | EffectsCheck | TotalCheck) -> str:
    if isinstance(predicate, TotalCheck):
        rows = predicate.rows
        return (f"{'/'.join(rows.change)} of {rows.table}" + (f" where {_values(rows.where)}" if rows.where else "")
                + f" totalling at least {predicate.at_least} in {predicate.column}")
    return describe_check(predicate)


def describe_grant(grant: Grant) -> str:
    """A grant in words: `send message to @partner.org`, `refund order rows 3 up to 50.00 EUR, revoked by GET /x`."""
    limits = [
        ("rows", grant.objects and ", ".join(map(str, grant.objects))),
        ("to", grant.recipients and ", ".join(grant.recipients)),
        ("fields", grant.fields and ", ".join(grant.fields)),
        ("paying", grant.payees and ", ".join(grant.payees)),
        ("up to", grant.limit and f"{grant.limit.cents / 100:.2f} {grant.limit.currency}"),
        ("until operation", grant.expires_after),
        ("revoked by", grant.revoked_by and f"{grant.revoked_by.method} {grant.revoked_by.path}"),
    ]
    return " ".join([f"{grant.capability} {grant.table}", *(f"{label} {value}" for label, value in limits
                                                              if value is not None)])


def _cell(items: Iterable[str]) -> str:
    text = "<br>".join(item.replace("|", "\\|") for item in items)
    return text or "—"


def _template_note(task: LoadedTask, published: int) -> str:
    """What the template of `task` varies and with which parameters (a fixed task: its one seed)."""
    instance = task.instance
    if instance is None or not instance.parameters:
        why = instance.single_instance if instance is not None else None
        return f"one instance (seed {task.spec.seed})" + (f": {why}" if why else "")
    names = ", ".join(sorted(instance.parameters))
    return (f"{published} published instances (seeds 1-{published}); varies: {instance.varies}; parameters: {names}; "
            f"the row shows seed {task.spec.seed}")


def tasks_markdown(tasks: Iterable[LoadedTask]) -> str:
    """The whole document, one row per template (its first instance given, with what varies), deterministic for the
    same task files."""
    by_template: dict[str, list[LoadedTask]] = {}
    for task in sorted(tasks, key=lambda t: (t.template_id, t.spec.seed)):
        by_template.setdefault(task.template_id, []).append(task)
    by_site: dict[str, list[tuple[LoadedTask, int]]] = {}
    for instances in by_template.values():
        by_site.setdefault(instances[0].spec.site, []).append((instances[0], len(instances)))
    total = sum(len(site_tasks) for site_tasks in by_site.values())
    published = sum(len(instances) for instances in by_template.values())
    families = sorted({t.spec.family for site_tasks in by_site.values() for t, _ in site_tasks})
    sites = f"{len(by_site)} site{'s' if len(by_site) != 1 else ''}"
    lines = [HEADER, f"{total} templates ({published} published instances) on {sites}; families: "
                     f"{', '.join(families)}.", ""]
    for site, site_tasks in sorted(by_site.items()):
        lines += [f"## {site} ({len(site_tasks)} templates)", "",
                  "| template | family | difficulty | checked | procedure | allowed mutations | negative controls |",
                  "|---|---|---|---|---|---|---|"]
        for task, count in site_tasks:
            spec = task.spec
            checked = [describe_check(c) for c in spec.expected_state]
            if not spec.feasible:
                checked.insert(0, "infeasible: done(success=false) and no mutation")
            checked[:0] = [
                f"fault {f.fault} on {f.target.method} {f.target.path} (match {f.occurrence}"
                + (f", {f.times} times" if f.times > 1 else "") + ")"
                for f in spec.faults
            ]
            if spec.grants:
                checked.insert(0, "grants: " + "; ".join(describe_grant(g) for g in spec.grants))
            if spec.attack is not None:
                attack = spec.attack
                where = attack.placement
                checked.insert(0, f"attack ({attack.style}, {', '.join(attack.kinds) or 'untagged'}) planted in "
                               f"{where.table}.{where.column}; objective: "
                               + "; ".join(_objective(c) for c in attack.objective)
                               + "".join(f"; or {_objective(c)}" for c in attack.alternatives)
                               + f"; extends `{spec.extends}`")
            negatives = [f"{n.id} ({n.kind}" + (f", rejected as {n.rejected_as}" if n.rejected_as else "")
                         + (f", stops at {n.stops_at}" if n.stops_at else "") + ")"
                         for n in spec.negative_controls]
            negatives += [f"accepted: {e.id} (equivalent solution)" for e in spec.equivalent_solutions]
            lines.append(
                f"| `{task.template_id}`<br>{spec.title.replace('|', '/')}<br>"
                f"{_template_note(task, count).replace('|', '/')} | {spec.family} | {spec.difficulty} | "
                f"{_cell(checked)} | {_cell(describe_procedure(p) for p in spec.required_procedure)} | "
                f"{_cell(describe_mutation(m) for m in spec.allowed_mutations)} | {_cell(negatives)} |"
            )
        lines.append("")
    return "\n".join(lines)
