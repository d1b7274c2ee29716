"""Re-running an episode's saved operations against a fresh tenant, in-process, without a browser."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import httpx
from starlette.types import ASGIApp

from computerops.core.binding import TENANT_HEADER
from computerops.core.hashing import canonical_sha256
from computerops.core.vocabulary import ACTION_HEADER, FETCH_DESTINATION_HEADER, IDEMPOTENCY_HEADER
from replays.receipt import Receipt
from sites.kit.app import create_app
from sites.kit.broker import BrokerSession
from sites.kit.faults import FaultInjector, FaultPlan
from sites.kit.injection import FaultSession
from sites.kit.oplog import MAX_REQUEST_BYTES
from sites.kit.pages import compile_pages
from sites.kit.records import JournalEntry, Operation, Shown, StateSnapshot
from sites.kit.tenancy import TenantRegistry
from tasks import LoadedTask
from verifier import Verdict, rejudge

_SHOWN = 20  # mismatches listed in a receipt before the rest are summarised


@dataclass(frozen=True)
class RecordedEpisode:
    """The saved evidence of one episode that replay needs."""

    episode_id: str
    operations: list[Operation]
    journal: list[JournalEntry]
    final_state: StateSnapshot
    verdict: Verdict
    final_state_sha256: str | None = None
    """The whole final state's hash where `final_state` holds only the tables the episode changed (a corpus entry);
    None where `final_state` is whole."""

    @property
    def state_sha256(self) -> str:
        return self.final_state_sha256 or canonical_sha256(self.final_state)


_RECORDED_SINCE = frozenset({"app", "shown"})
"""Operation fields evidence recorded before they existed lacks (None): replay compares them where recorded."""


def _searched_since(recorded: Shown | None, replayed: Shown | None) -> Shown | None:
    """The replayed record without its searched listings where the recorded one has none: evidence recorded before
    searched listings were recorded lacks them (`ShownListing.searched`), and is compared on the rest."""
    if recorded is None or replayed is None or any(lst.searched for lst in recorded.listings):
        return replayed
    return replayed.model_copy(update={"listings": [lst for lst in replayed.listings if not lst.searched]})


def _first_operation_difference(recorded: Operation, replayed: Operation) -> str | None:
    for field in Operation.model_fields:
        a, b = getattr(recorded, field), getattr(replayed, field)
        if field == "shown":
            b = _searched_since(a, b)
        if a is None and field in _RECORDED_SINCE and recorded.shown is None:
            continue
        if a != b:
            where = f"operation #{recorded.seq} {recorded.method} {recorded.path}"
            return f"{where}: {field} recorded {a!r}, replayed {b!r}"
    return None


def _values_difference(field: str, a: object, b: object) -> str:
    """One field that differs: the columns that differ when both are rows, else both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        columns = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        return f"{field} differs in {', '.join(map(str, columns))}"
    return f"{field} recorded {a!r}, replayed {b!r}"


def _compare_journals(recorded: Sequence[JournalEntry], replayed: Sequence[JournalEntry]) -> list[str]:
    problems = []
    for old, new in zip(recorded, replayed, strict=False):
        if old != new:
            field = next(f for f in JournalEntry.model_fields if getattr(old, f) != getattr(new, f))
            problems.append(f"journal entry #{old.seq} ({old.change} {old.table} {old.key}) differs on replay: "
                            + _values_difference(field, getattr(old, field), getattr(new, field)))
    if len(recorded) != len(replayed):
        problems.append(f"journal has {len(recorded)} entries recorded, {len(replayed)} on replay")
    return problems


def _state_difference(recorded: StateSnapshot, replayed: StateSnapshot) -> str:
    """Where two snapshots first differ: the table, then the row (rows are sorted by primary key)."""
    for table in sorted(recorded.keys() | replayed.keys()):
        old, new = recorded.get(table), replayed.get(table)
        if old is None or new is None:
            return f"table {table} {'only on replay' if old is None else 'missing on replay'}"
        if canonical_sha256(old) == canonical_sha256(new):
            continue
        for number, (a, b) in enumerate(zip(old, new, strict=False), start=1):
            if canonical_sha256(a) != canonical_sha256(b):
                return f"table {table}, row {number}: " + _values_difference("row", a, b)
        return f"table {table}: {len(old)} rows recorded, {len(new)} on replay"
    return "same tables and rows, different encoding"


def _verdict_difference(recorded: Verdict, replayed: Verdict) -> str:
    """The first field of the verdict that differs (for checks, the first check that differs)."""
    for field in Verdict.model_fields:
        a, b = getattr(recorded, field), getattr(replayed, field)
        if a == b:
            continue
        if field == "checks":
            for old, new in zip(a, b, strict=False):
                if old.passed != new.passed:
                    return f"check {old.name}: passed recorded {old.passed}, replayed {new.passed}"
                if old != new:
                    return f"check {old.name}: recorded {old!r}, replayed {new!r}"
            return f"checks: {len(a)} recorded, {len(b)} replayed"
        return f"{field} recorded {a!r}, replayed {b!r}"
    return "no field differs"


_APPS: WeakKeyDictionary[TenantRegistry, dict[str, ASGIApp]] = WeakKeyDictionary()


def _app_for(registry: TenantRegistry, site: str) -> ASGIApp:
    """One app per registry and site, routing that site's pages only (a replayed request is its tenant's site's:
    matching every site's routes per request was wasted): building FastAPI's routes for every replayed episode
    would cost more than the replay itself. It runs its database calls and the site's handlers in place: replay
    sends one request at a time and nothing else waits on the loop, so a worker thread's hop would only add time."""
    apps = _APPS.setdefault(registry, {})
    app = apps.get(site)
    if app is None:
        app = apps[site] = create_app(registry, database_in_thread=False, site=site)
    return app


def prepare_replay(registry: TenantRegistry, tasks: Sequence[LoadedTask]) -> None:
    """What replay does once per process rather than per episode, done now: each task's site's app built and its
    (site, seed) template seeded, its state read and encoded (`TenantRegistry.template_json`), and every site's
    page templates compiled (`compile_pages`)."""
    for site, seed in sorted({(task.spec.site, task.spec.seed) for task in tasks}):
        _app_for(registry, site)
        registry.template_json(site, seed)
    compile_pages()


async def replay_episode(
    task: LoadedTask,
    episode: RecordedEpisode,
    registry: TenantRegistry,
    *,
    evidence_problems: Sequence[str] = (),
) -> Receipt:
    """Replay the operations in order on a fresh tenant of the task's site and seed (with the attack's payload
    planted when the recorded verdict says it was), forcing the faults the recorded operations logged; compare all.

    `evidence_problems` are integrity failures found before replay (e.g. a file whose hash no
    longer matches its record); they make the receipt FAIL and head its list of reasons.
    """
    problems = list(evidence_problems)
    if episode.verdict.task_sha256 != task.sha256:
        problems.append(f"task {task.id} changed since the episode ran (sha256 {episode.verdict.task_sha256[:12]} "
                        f"recorded, {task.sha256[:12]} now)")
    planted = episode.verdict.attack is not None and episode.verdict.attack.planted
    if planted and task.spec.attack is None:
        problems.append(f"the episode planted an attack; task {task.id} has none now")
    plant = task.spec.attack.plant() if planted and task.spec.attack is not None else None
    tenant = registry.create(task.spec.site, task.spec.seed, plant=plant)
    forced = {op.seq: op.fault for op in episode.operations if op.fault is not None}
    if forced:  # exactly the faults the episode logged, at the same operations
        tenant.faults = FaultSession(FaultInjector(FaultPlan(), forced=forced))
    if task.spec.grants:  # the same grants, in the mode the episode's decisions were made in
        modes = {op.broker.mode for op in episode.operations if op.broker is not None}
        tenant.broker = BrokerSession(grants=tuple(task.spec.grants), mode=modes.pop() if len(modes) == 1 else
                                      "enforcing", own_corrections=task.spec.own_corrections)
    try:
        transport = httpx.ASGITransport(app=_app_for(registry, task.spec.site))
        async with httpx.AsyncClient(transport=transport, base_url="http://replay.invalid") as client:
            for op in episode.operations:
                headers = {TENANT_HEADER: tenant.token}
                if op.action is not None:
                    headers[ACTION_HEADER] = str(op.action)
                if op.content_type:
                    headers["content-type"] = op.content_type
                if op.destination is not None:
                    headers[FETCH_DESTINATION_HEADER] = op.destination
                if op.idempotency_key is not None:  # a repeat then replays as a repeat of the same operation
                    headers[IDEMPOTENCY_HEADER] = op.idempotency_key
                url = (op.raw_path or op.path) + (f"?{op.query}" if op.query else "")
                body = b"\0" * (MAX_REQUEST_BYTES + 1) if op.oversized else op.body.encode("utf-8")
                await client.request(op.method, url, content=body, headers=headers)
        replayed_ops = tenant.operations()
        journal = tenant.journal()
        state, state_sha256 = tenant.hashed_snapshot()
    finally:
        registry.drop(tenant)
    for old, new in zip(episode.operations, replayed_ops, strict=False):
        difference = _first_operation_difference(old, new)
        if difference:
            problems.append(difference)
    if len(replayed_ops) != len(episode.operations):
        problems.append(f"{len(episode.operations)} operations recorded, {len(replayed_ops)} logged on replay")
    problems.extend(_compare_journals(episode.journal, journal))
    # A corpus entry keeps the tables the episode changed and the whole state's hash: both must agree. Each state
    # is hashed once (the whole state's JSON is most of a replay's hashing), the tables that are the template's from
    # their JSON encoded once per template.
    recorded_sha256 = episode.state_sha256
    kept = state if episode.final_state_sha256 is None else {t: state.get(t, []) for t in episode.final_state}
    kept_sha256 = state_sha256 if kept is state else canonical_sha256(kept)
    recorded_kept_sha256 = recorded_sha256 if episode.final_state_sha256 is None else \
        canonical_sha256(episode.final_state)
    if kept_sha256 != recorded_kept_sha256:
        problems.append(f"final state differs on replay: {_state_difference(episode.final_state, kept)}")
    elif state_sha256 != recorded_sha256:
        problems.append("final state differs on replay in a table the episode did not change (the entry keeps its "
                        f"hash, {recorded_sha256[:12]} recorded, {state_sha256[:12]} replayed)")
    verdict = rejudge(task.spec, task.sha256, episode.verdict, state=state, journal=journal, operations=replayed_ops,
                      claim=episode.verdict.claim)
    if verdict != episode.verdict:
        problems.append(f"verdict differs on replay: recorded {episode.verdict.outcome}, replayed {verdict.outcome} "
                        f"(first difference: {_verdict_difference(episode.verdict, verdict)})")
    if len(problems) > _SHOWN:
        problems = [*problems[:_SHOWN], f"... and {len(problems) - _SHOWN} more"]
    return Receipt(
        episode_id=episode.episode_id, task_id=task.id, task_sha256=task.sha256, site=task.spec.site,
        seed=task.spec.seed, operations=len(episode.operations),
        operations_sha256=canonical_sha256(episode.operations),
        journal_sha256=canonical_sha256(episode.journal), replayed_journal_sha256=canonical_sha256(journal),
        final_state_sha256=recorded_sha256, replayed_final_state_sha256=state_sha256,
        verdict_sha256=episode.verdict.judgement_sha256(), replayed_verdict_sha256=verdict.judgement_sha256(),
        result="FAIL" if problems else "PASS", mismatches=problems,
    )
