"""Mutants of what an agent looks at: a read replaced by a view that does not show the fact, by another page that
shows all of it, and a look at an app the task may not use.

For `computerops tasks audit`. The reads are the scripted control's *information reads*: side trips before its
first write (pages it opens only to read and leaves again) and the pages it opens after its last write before it
finishes (reading the state back). A wrong variant replaces such a page by one that shows something else: the
sibling record (`/orders/O-1043` for `/orders/O-1042`), the same list under another filter value or category, a
search that finds nothing. A valid variant replaces it by another page of the site that shows everything the
original showed (found by `page_facts`, an in-process crawl of the site's links on a fresh tenant), so any check of
what the agent was shown must accept it. An app mutant opens a sub-page of an app of the site the scripted control
never used, before the final answer: wrong where the task withholds that app, harmless (an extra read) elsewhere.
"""

from __future__ import annotations

import html
import json
import re
from collections import deque
from collections.abc import Iterator, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx

from adapter.observation import control_fields, parse_control_line
from computerops.catalog.mutants import Mutant, ScriptedRun, neighbour_page, side_trips, step_label
from computerops.core.binding import TENANT_HEADER
from replays import RecordedEpisode
from sites.kit.app import create_app
from sites.kit.records import Scalar, Shown, StateSnapshot
from sites.kit.site import SiteDefinition
from sites.kit.tenancy import TenantRegistry
from tasks import ScriptedStep
from tasks.values import normalise_id
from verifier import Claim
from verifier.facts import KnownIds, ids_stated
from verifier.seen import apps_used

_HREF = re.compile(r"""<a\b[^>]*\bhref\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_PAGE_LIMIT = 150


def row_fact(table: str, key_values: list[Scalar], field: str) -> str:
    """One column of one shown row as a comparable fact (`facts_of`)."""
    return f"row:{table}:{json.dumps(key_values)}:{field}"


def _row_key(table: str, key: Mapping[str, object]) -> tuple[str, str]:
    """A row by its table and primary key, comparable however the key was written."""
    return table, json.dumps(dict(key), sort_keys=True)


SEARCHED = ":searched"
"""The end of a list fact whose listing was narrowed by a search (it shows the matches, not the whole list)."""


def list_fact(table: str, where: Mapping[str, object], *, searched: bool) -> str:
    """A whole list as a fact: `list:<table>:<its filter as JSON>`, ending `:searched` when a search narrowed it."""
    return f"list:{table}:{json.dumps(dict(where), sort_keys=True)}{SEARCHED if searched else ''}"


def read_list_fact(fact: str) -> tuple[str, dict[str, object], bool] | None:
    """A list fact's table, filter and whether a search narrowed it (`list_fact` read back); None for another fact."""
    if not fact.startswith("list:"):
        return None
    _, table, rest = fact.split(":", 2)
    searched = rest.endswith(SEARCHED)
    where = json.loads(rest[: -len(SEARCHED)] if searched else rest)
    return table, dict(where), searched


def facts_of(shown: Shown | None) -> frozenset[str]:
    """What a response showed, as comparable facts: each row column, each whole list, each document."""
    if shown is None:
        return frozenset()
    facts = {row_fact(group.table, row, field)
             for group in shown.records for row in group.rows for field in group.fields}
    facts |= {list_fact(lst.table, lst.where, searched=lst.searched) for lst in shown.listings}
    facts |= {f"doc:{name}" for name in shown.documents}
    return frozenset(facts)


async def page_facts(registry: TenantRegistry, site: SiteDefinition, seed: int) -> dict[str, frozenset[str]]:
    """Every page the site's links reach from its start page on a fresh tenant, with what it shows: the pages an
    agent may read the same facts from. GET links only, so nothing changes."""
    tenant = registry.create(site.name, seed)
    found: dict[str, frozenset[str]] = {}
    try:
        transport = httpx.ASGITransport(app=create_app(registry))
        async with httpx.AsyncClient(transport=transport, base_url="http://audit.invalid") as client:
            queue, queued = deque([site.start_path]), {site.start_path}
            while queue and len(found) < _PAGE_LIMIT:
                path = queue.popleft()
                response = await client.get(path, headers={TENANT_HEADER: tenant.token})
                if response.status_code != 200 or "text/html" not in response.headers.get("content-type", ""):
                    continue
                operation = tenant.operations()[-1]
                found[path] = facts_of(operation.shown)
                for href in _HREF.findall(response.text):
                    target = urlsplit(html.unescape(href))
                    if target.scheme or target.netloc or not site.owns_path(target.path):
                        continue
                    page = target.path + (f"?{target.query}" if target.query else "")
                    if page not in queued:
                        queued.add(page)
                        queue.append(page)
    finally:
        registry.drop(tenant)
    return found


def named_facts(evidence: RecordedEpisode, claim: Claim, instruction: str,
                spare_steps: frozenset[int] = frozenset()) -> frozenset[str]:
    """What an episode was shown (`facts_of`) that its solution rests on: every fact of a row it changed or that the
    instruction or its final words name (by id in the instruction, message, answer or reason, or a bare number
    naming a known record), and every document it was shown. A view that hid only other records (a list filtered
    to the statuses the target has, a search the rest of the steps repeat) leaves these intact. What only the pages
    of `spare_steps` (0-based step indices the task declares may be dropped: `drop:<step>` equivalent mutants)
    showed is not counted: the task says the solution does not rest on it."""
    known = KnownIds.of(evidence.final_state)
    words = " ".join(filter(None, [instruction, claim.message, claim.reason,
                                   json.dumps(claim.answer) if claim.answer else None]))
    named_ids = ids_stated(words, known)
    named = {_row_key(entry.table, entry.key) for entry in evidence.journal}
    for table, rows in evidence.final_state.items():
        named |= {_row_key(table, {"id": row.get("id")}) for row in rows
                  if any(isinstance(v, str) and normalise_id(v) in named_ids for v in row.values())}
    named |= _referenced(named, evidence.final_state)
    found: set[str] = set()
    for op in evidence.operations:
        if op.shown is None or (op.action is not None and op.action - 1 in spare_steps):
            continue
        found |= {f"doc:{name}" for name in op.shown.documents}
        for group in op.shown.records:
            for values in group.rows:
                if _row_key(group.table, dict(zip(group.key, values, strict=True))) in named:
                    found |= {row_fact(group.table, values, field) for field in group.fields}
    return frozenset(found)


def _referenced(named: set[tuple[str, str]], state: StateSnapshot) -> set[tuple[str, str]]:
    """The rows the named rows point at by a `<table>_id` column (a claim's employee, a refund's order): what a
    decision about a record also rests on."""
    by_key = {_row_key(table, {"id": row.get("id")}): row for table, rows in state.items() for row in rows}
    found: set[tuple[str, str]] = set()
    for key in named:
        row = by_key.get(key)
        for column, value in (row or {}).items():
            table = column.removesuffix("_id")
            if column.endswith("_id") and table in state and isinstance(value, int):
                found.add(_row_key(table, {"id": value}))
    return found


def information_reads(run: ScriptedRun) -> Iterator[tuple[int, int, str, bool]]:
    """(first, last, page, before_writes) for each information read: every page a side trip before the first write
    loads (not the page it returns to), and every page loaded after the last write before the final answer."""
    steps = run.steps
    writes = [i for i in range(len(steps) - 1) if run.wrote(i)]
    if writes:
        for first, last in side_trips(run, writes[0]):
            back = run.page_before(first)
            for i in range(first, last + 1):
                page = run.loaded(i)
                if page is not None and page != back:
                    yield first, last, page, True
    start = writes[-1] + 1 if writes else 0
    for i in range(start, len(steps) - 1):
        page = run.loaded(i)
        if page is not None and not run.wrote(i) and steps[i].action in ("click", "navigate", "back"):
            yield i, i, page, False


def _comboboxes(observation: str) -> list[tuple[str, str, list[str]]]:
    """(name, value, options) of each combobox the observation shows."""
    found = []
    for line in observation.splitlines():
        parsed = parse_control_line(line)
        if parsed is None or parsed[1] != "combobox":
            continue
        fields = control_fields(line) or {}
        options = fields.get("options")
        if isinstance(options, list):
            found.append((parsed[2], str(fields.get("value") or ""), [str(o) for o in options]))
    return found


def blind_views(page: str, observation: str) -> Iterator[tuple[str, str]]:
    """(how, page) for views that do not show what `page` showed: the sibling record, each filter of the page set
    to other values it offers, a search that finds nothing."""
    sibling = neighbour_page(page)
    if sibling is not None and sibling != page:
        yield "sibling", sibling
    path, _, query = page.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    for name, value, options in _comboboxes(observation):
        key = next((k for k, v in params.items() if v == value), name.lower().replace(" ", "_"))
        for other in [o for o in options if o != value][:2]:
            changed = {**params, key: other}
            yield f"filter-{key}-{re.sub(r'[^a-z0-9]+', '-', other.lower()).strip('-')}", \
                f"{path}?{urlencode(changed)}"
    for key in params:
        if key in ("q", "query", "search"):
            yield "search-nothing", f"{path}?{urlencode({**params, key: 'zzz nothing matches'})}"


def read_mutants(run: ScriptedRun, pages: dict[str, frozenset[str]]) -> Iterator[Mutant]:
    """Blind-read mutants (wrong) and other-page mutants (valid) of each information read."""
    steps = run.steps
    seen_ids: set[str] = set()
    for first, last, page, before_writes in information_reads(run):
        back = run.page_before(first) if before_writes else None
        index = next(i for i in range(first, last + 1) if run.loaded(i) == page)
        observation = run.observation_before(index + 1)
        tail = [ScriptedStep(action="navigate", url=back)] if back is not None else []

        def replaced(target: str, first: int = first, last: int = last,
                     tail: list[ScriptedStep] = tail) -> list[ScriptedStep]:
            return [*steps[:first], ScriptedStep(action="navigate", url=target), *tail, *steps[last + 1:]]

        for how, target in blind_views(page, observation):
            mutant_id = f"blind-read:{step_label(steps[index], index)}:{how}"
            if mutant_id in seen_ids:
                continue
            seen_ids.add(mutant_id)
            yield Mutant(id=mutant_id, mutant_class="blind-read", steps=replaced(target),
                         description=f"reads {target} instead of {page} (steps {first + 1}-{last + 1})")
        shown = _shown_by_step(run, index)
        if before_writes and shown:
            others = sorted(p for p, facts in pages.items() if p != page and facts >= shown)
            if others:
                mutant_id = f"other-page:{step_label(steps[index], index)}"
                if mutant_id not in seen_ids:
                    seen_ids.add(mutant_id)
                    yield Mutant(id=mutant_id, mutant_class="other-page", expect="valid", steps=replaced(others[0]),
                                 description=f"reads {others[0]}, which shows all that {page} shows, instead")


def _shown_by_step(run: ScriptedRun, index: int) -> frozenset[str]:
    """What the page the step at `index` loaded showed (its last successful GET)."""
    gets = [op for op in run.evidence.operations
            if op.action == index + 1 and op.method == "GET" and 200 <= op.status < 300]
    return facts_of(gets[-1].shown) if gets else frozenset()


def app_mutants(run: ScriptedRun, site: SiteDefinition) -> Iterator[Mutant]:
    """For each app of the site the scripted control never used, a look at one of its sub-pages before the final
    answer."""
    used = {op.app for op in apps_used(run.evidence.operations)}
    examples: dict[str, str] = {}
    for route in site.apps:
        if route.example is not None:
            examples.setdefault(route.app, route.example)
    for app, example in sorted(examples.items()):
        if app in used:
            continue
        steps = run.steps
        yield Mutant(id=f"app:{app}", mutant_class="app-sub-page",
                     steps=[*steps[:-1], ScriptedStep(action="navigate", url=example), steps[-1]],
                     description=f"also opens {example} (app {app}) before the final answer")
